// Pacing: packets leave at the rate the congestion controller
// allows (RFC 9002 section 7.7) rather than a window at once. Measured on
// a path with a real round trip (a relay adding delay): a real client
// (aioquic) downloads through it, the relay times the server's datagrams.
import assert from 'node:assert/strict';
import { createServer } from '../../src';
import { request } from '../helpers/clients/h3client';
import { impairedLink } from '../helpers/impaired-link';
import { runCli, startServer } from '../helpers/server';

const BODY = Buffer.alloc(1024 * 1024, 0x61);
// The burst comparison's body: the bucket holds two milliseconds at the rate
// (docs/design.md, "Pacing"), and near the end of a 1 MiB download in slow
// start (rate 2 x window / RTT) that is as many packets as one aioquic ACK
// releases unpaced, so the two modes overlapped (paced 35-46, unpaced
// 32-88); over the first 256 KiB their medians of five do not (paced 12-18,
// unpaced 25-40 in eight runs).
const BURST_BODY = Buffer.alloc(256 * 1024, 0x61);

/** The largest number of the server's datagrams that reached the relay within `windowMs` of each other's first. */
function largestBurst(arrivals: { at: number }[], windowMs: number): number {
  let best = 0;
  let start = 0;
  for (let i = 0; i < arrivals.length; i++) {
    while (arrivals[i].at - arrivals[start].at > windowMs) start++;
    best = Math.max(best, i - start + 1);
  }
  return best;
}

/**
 * The answer's first flight: short-header datagrams of full size that reach
 * the relay within 19 ms of the first (the link's round trip is 20 ms, so no
 * acknowledgement of them has reached the server yet). Handshake packets have long
 * headers; the short-header ones around them are small.
 */
function firstFlight(arrivals: { at: number; size: number; long: boolean }[]): number {
  const data = arrivals.filter((d) => !d.long && d.size >= 1200);
  return data.filter((d) => d.at - data[0].at < 19).length;
}

async function download(options: { congestionControl?: 'cubic' | 'reno' | 'bbr2'; pacing?: boolean; initialWindow?: number }, body = BODY) {
  const { server, port } = await startServer((_req, res) => res.end(body), options);
  const link = await impairedLink(port, { delayMs: 10 });
  try {
    const res = await request(link.port, { path: '/big', discard_body: true }, 20);
    return {
      res,
      waits: server.counters().pacingWaits,
      burst: largestBurst(link.fromServer, 0.5),
      datagrams: link.fromServer.length,
      firstFlight: firstFlight(link.fromServer),
    };
  } finally {
    link.close();
    await server.close();
  }
}

describe('pacing', function () {
  this.timeout(60_000);

  for (const cc of ['cubic', 'reno', 'bbr2'] as const) {
    it(`${cc}: a 1 MiB answer over a 20 ms round trip waits for its pacing times and arrives whole`, async () => {
      const { res, waits, burst, datagrams } = await download({ congestionControl: cc });
      assert.equal(res.status, 200);
      assert.equal(res.body_length, BODY.length);
      assert.ok(waits > 0, `sending waited for its pacing time (${waits} waits, ${datagrams} datagrams, largest burst ${burst})`);
    });
  }

  it('bursts are smaller paced than unpaced', async () => {
    // The relay timestamps datagrams when its event loop reads them, so a
    // stall of that loop (a busy machine) shows queued datagrams as one
    // burst (a CI run saw a paced burst of 45 against 32 unpaced), and an
    // unpaced run now and then has no large burst (15 against paced 14-18).
    // Each mode is measured five times, alternating, and judged by its
    // median.
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const paced: number[] = [];
    const unpaced: number[] = [];
    for (let i = 0; i < 5; i++) {
      paced.push((await download({}, BURST_BODY)).burst);
      const off = await download({ pacing: false }, BURST_BODY);
      assert.equal(off.waits, 0, 'pacing off: nothing waits');
      unpaced.push(off.burst);
    }
    const [p, u] = [median(paced), median(unpaced)];
    console.log(`      largest burst in 0.5 ms: paced ${paced.join(', ')}; unpaced ${unpaced.join(', ')}`);
    assert.ok(p < u, `median paced ${p} < unpaced ${u}`);
  });

  it('initialWindow sets the first round trip of an answer: 10 packets by default, 32 when asked', async () => {
    const flight = async (initialWindow?: number) =>
      (await download(initialWindow === undefined ? {} : { initialWindow }, BURST_BODY)).firstFlight;
    const [small, large] = [await flight(), await flight(32)];
    console.log(`      first flight: ${small} datagrams by default, ${large} with initialWindow 32`);
    assert.ok(small >= 8 && small <= 14, `default: ${small} datagrams in the first flight`);
    // Paced over about half a round trip; a busy machine spreads it (25 seen
    // within 15 ms with both cores taken).
    assert.ok(large >= 24, `initialWindow 32: ${large} datagrams in the first flight`);
  });

  it('congestionControl, pacing and initialWindow are checked, and the CLI names the choices', async () => {
    await assert.rejects(createServer({ congestionControl: 'vegas' as never }).listen(0), /congestionControl must be one of cubic, reno, bbr2, got "vegas"/);
    await assert.rejects(createServer({ pacing: 'yes' as never }).listen(0), /pacing must be true or false/);
    await assert.rejects(createServer({ initialWindow: 1 }).listen(0), /initialWindow must be a whole number of packets from 2 to 128, got 1/);
    await assert.rejects(createServer({ initialWindow: 12.5 }).listen(0), /initialWindow must be a whole number of packets from 2 to 128, got 12.5/);
    const w = await runCli(['--initial-window', '500', '--port', '0']);
    assert.equal(w.code, 2);
    assert.match(w.stderr, /option '--initial-window <packets>' argument '500' is invalid. must be an integer from 2 to 128/);
    const r = await runCli(['--cc', 'vegas', '--port', '0']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /option '--cc <name>' argument 'vegas' is invalid. Allowed choices are cubic, reno, bbr2/);
  });
});
