// Profile B: WebTransport from aioquic, with /stats checked after each step.
import assert from 'node:assert/strict';
import { createServer, Http3Server } from '../../src';
import { WebTransportStats } from '../../src/demo';
import { createProfileB } from '../../src/demo/profiles/profile-b';
import { b64, field, request } from '../helpers/clients/h3client';
import { MemoryLogger, onWorkers, startOnWorkers } from '../helpers/server';
import { runWt, WtAction } from '../helpers/clients/wt-client';

const SESSIONS_CAP = 32;
const PEER_STREAMS_CAP = 128;
const WT_BUFFERED_STREAM_REJECTED = 0x3994bd84;

function doc(o: [number, number], u: [number, number, number]) {
  return {
    occupancy: { sessions: o[0], sessions_cap: SESSIONS_CAP, peer_streams: o[1], peer_streams_cap: PEER_STREAMS_CAP },
    usage: { sessions: u[0], streams: u[1], datagrams: u[2] },
  };
}

async function startB(extra: Record<string, unknown> = {}, workers = 1) {
  if (workers > 1) return startOnWorkers({ workers, app: 'b', extra });
  const stats = new WebTransportStats();
  const server = createServer({ webtransport: true, logger: new MemoryLogger(), ...extra }, createProfileB(stats));
  stats.attach(server);
  const { port } = await server.listen(0, '127.0.0.1');
  return { server, port, stats };
}

async function fetchStats(port: number) {
  const res = await request(port, { path: '/stats' });
  assert.equal(res.status, 200);
  return JSON.parse(res.body_text);
}

/** Polls /stats until `ok` holds (closures travel as packets), then returns it. */
async function statsWhen(port: number, ok: (s: any) => boolean, ms = 3000) {
  const until = Date.now() + ms;
  let s = await fetchStats(port);
  while (!ok(s) && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 50));
    s = await fetchStats(port);
  }
  return s;
}

const stats: WtAction = { op: 'get', path: '/stats' };
const parse = (r: Record<string, any>) => JSON.parse(r.body);

// Every case runs on one worker and again on two: the /stats
// document is then the server-wide one, whichever worker answers.
for (const workers of [1, 2]) {
  describe(`Profile B /stats shape${onWorkers(workers)}`, function () {
    let server: Http3Server;
    let port: number;
    before(async () => ({ server, port } = await startB({}, workers)));
    after(() => server.close());

    it('before any WebTransport client: every value 0 except the caps, JSON plus one newline', async () => {
      const res = await request(port, { path: '/stats' });
      assert.equal(res.status, 200);
      assert.equal(field(res, 'content-type'), 'application/json');
      assert.ok(res.body_text.endsWith('}\n') && !res.body_text.endsWith('\n\n'));
      assert.deepEqual(JSON.parse(res.body_text), doc([0, 0], [0, 0, 0]));
      assert.ok(SESSIONS_CAP > 0 && PEER_STREAMS_CAP > 0);
    });

    it('any other path: 404, empty body, no content type; any method on /stats works', async () => {
      for (const path of ['/', '/stats/', '/wt', '/STATS']) {
        const res = await request(port, { path });
        assert.equal(res.status, 404, path);
        assert.equal(res.body_b64, '');
        assert.equal(field(res, 'content-type'), undefined);
      }
      const post = await request(port, { method: 'POST', path: '/stats?x=1' });
      assert.equal(post.status, 200);
    });
  });

  describe(`Profile B WebTransport over aioquic${onWorkers(workers)}`, function () {
    this.timeout(60000);
    let server: Http3Server;
    let port: number;
    beforeEach(async () => ({ server, port } = await startB({ maxStreamsPerConnection: 300, idleTimeoutMs: 1000 }, workers)));
    afterEach(() => server.close());

    it('counts sessions, client streams and datagrams exactly at every step', async () => {
      const r = await runWt(port, [
        { op: 'session', name: 's1', path: '/wt' },
        stats,
        { op: 'bidi', session: 's1', name: 'b1', data_b64: b64('hello'), fin: false },
        { op: 'uni', session: 's1', name: 'u1', data_b64: b64('one-way'), wait: true },
        stats,
        { op: 'finish', stream: 'b1' },
        { op: 'bidi', session: 's1', name: 'b2', data_b64: b64('second'), wait: true },
        { op: 'datagram', session: 's1', data_b64: b64('d'), count: 5, wait_ms: 1000 },
        stats,
        { op: 'session', name: 's2', path: '/other' },
        { op: 'bidi', session: 's2', name: 'b3', data_b64: b64('x'), fin: false },
        stats,
        { op: 'reset', stream: 'b3', code: 0 },
        { op: 'sleep', ms: 100 },
        stats,
        { op: 'close', session: 's1', code: 7, reason: 'bye' },
        { op: 'sleep', ms: 100 },
        stats,
        { op: 'fin_session', session: 's2' },
        { op: 'sleep', ms: 100 },
        stats,
      ]);
      assert.ok(r.connected);
      const res = r.results;
      assert.equal(res[0].status, 200);
      assert.deepEqual(parse(res[1]), doc([1, 0], [1, 0, 0]));
      assert.deepEqual(res[3].answers_b64, [b64('one-way')], 'uni stream answered on a server stream');
      // b1 still open; the finished uni stream no longer counts; server streams never count.
      assert.deepEqual(parse(res[4]), doc([1, 1], [1, 2, 0]));
      assert.equal(res[5].echo_b64, b64('hello'));
      assert.equal(res[6].echo_b64, b64('second'));
      assert.equal(res[7].echoed, 5);
      assert.deepEqual(parse(res[8]), doc([1, 0], [1, 3, 5]));
      assert.equal(res[9].status, 200);
      assert.deepEqual(parse(res[11]), doc([2, 1], [2, 4, 5]));
      assert.deepEqual(parse(res[14]), doc([2, 0], [2, 4, 5]));
      assert.equal(res[15].server_finished, true, 'server finished the CONNECT stream after CLOSE_WEBTRANSPORT_SESSION');
      assert.deepEqual(parse(res[17]), doc([1, 0], [2, 4, 5]));
      assert.deepEqual(parse(res[20]), doc([0, 0], [2, 4, 5]));
    });

    it('refuses a stream or datagram for a session that does not exist, without counting it', async () => {
      const r = await runWt(port, [
        { op: 'session', name: 's', path: '/wt' },
        { op: 'raw_bidi', session_id: 400, data_b64: b64('lost') },
        { op: 'datagram', session: 's', data_b64: b64('ok'), count: 1 },
        stats,
      ]);
      assert.equal(r.results[1].reset, WT_BUFFERED_STREAM_REJECTED);
      assert.deepEqual(parse(r.results[3]), doc([1, 0], [1, 0, 1]));
    });

    it('a connection closed with open sessions and streams brings occupancy back to 0', async () => {
      await runWt(port, [
        { op: 'session', name: 's1' },
        { op: 'session', name: 's2' },
        { op: 'bidi', session: 's1', name: 'a', data_b64: b64('a'), fin: false },
        { op: 'bidi', session: 's2', name: 'b', data_b64: b64('b'), fin: false },
        { op: 'sleep', ms: 50 },
      ]);
      const s = await statsWhen(port, (x) => x.occupancy.sessions === 0);
      assert.deepEqual(s, doc([0, 0], [2, 2, 0]));
    });

    it('a client that vanishes (no CONNECTION_CLOSE) is freed by the idle timeout', async () => {
      const r = await runWt(port, [{ op: 'session', name: 's' }, { op: 'bidi', session: 's', name: 'a', data_b64: b64('a'), fin: false }, stats], {
        close: null,
      });
      assert.deepEqual(parse(r.results[2]), doc([1, 1], [1, 1, 0]));
      const s = await statsWhen(port, (x) => x.occupancy.sessions === 0, 5000);
      assert.deepEqual(s, doc([0, 0], [1, 1, 0]));
    });

    it(`refuses the session beyond sessions_cap (${SESSIONS_CAP}) with 429`, async () => {
      const actions: WtAction[] = [];
      for (let i = 0; i < SESSIONS_CAP + 1; i++) actions.push({ op: 'session', name: `s${i}` });
      actions.push(stats);
      const r = await runWt(port, actions, { timeout: 10 });
      const statuses = r.results.slice(0, SESSIONS_CAP + 1).map((x) => x.status);
      assert.deepEqual(statuses, [...Array(SESSIONS_CAP).fill(200), 429]);
      assert.deepEqual(parse(r.results[SESSIONS_CAP + 1]), doc([SESSIONS_CAP, 0], [SESSIONS_CAP, 0, 0]));
      const after = await statsWhen(port, (x) => x.occupancy.sessions === 0);
      assert.deepEqual(after, doc([0, 0], [SESSIONS_CAP, 0, 0]));
    });

    it(`refuses the client stream beyond peer_streams_cap (${PEER_STREAMS_CAP}); it counts as offered, never as open`, async () => {
      const actions: WtAction[] = [{ op: 'session', name: 's' }];
      for (let i = 0; i < PEER_STREAMS_CAP; i++) actions.push({ op: 'bidi', session: 's', name: `b${i}`, data_b64: b64('x'), fin: false });
      actions.push({ op: 'sleep', ms: 200 });
      actions.push({ op: 'bidi', session: 's', name: 'over', data_b64: b64('y'), fin: false, wait_reset: true });
      actions.push(stats);
      actions.push({ op: 'finish', stream: 'b0' });
      actions.push({ op: 'bidi', session: 's', name: 'again', data_b64: b64('z'), wait: true });
      actions.push(stats);
      const r = await runWt(port, actions, { timeout: 10 });
      const n = PEER_STREAMS_CAP;
      assert.equal(r.results[n + 2].reset, WT_BUFFERED_STREAM_REJECTED);
      assert.deepEqual(parse(r.results[n + 3]), doc([1, n], [1, n + 1, 0]));
      assert.equal(r.results[n + 5].echo_b64, b64('z'), 'a slot freed by a finished stream is usable again');
      assert.deepEqual(parse(r.results[n + 6]), doc([1, n - 1], [1, n + 2, 0]));
    });

    it('churn: 50 sessions over 10 connections in random order end at occupancy 0 with exact usage', async () => {
      let seed = 7;
      const random = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
      let streams = 0;
      let datagrams = 0;
      const plans: WtAction[][] = [];
      for (let c = 0; c < 10; c++) {
        const actions: WtAction[] = [];
        const open: string[] = [];
        for (let s = 0; s < 5; s++) {
          const name = `c${c}s${s}`;
          actions.push({ op: 'session', name });
          open.push(name);
          const k = Math.floor(random() * 3);
          for (let i = 0; i < k; i++) {
            const session = open[Math.floor(random() * open.length)];
            if (random() < 0.5) actions.push({ op: 'bidi', session, name: `${name}b${i}`, data_b64: b64('data'), wait: true });
            else actions.push({ op: 'uni', session, name: `${name}u${i}`, data_b64: b64('data'), wait: true, answers_before: 0 });
            streams += 1;
          }
          const d = Math.floor(random() * 4);
          if (d > 0) {
            actions.push({ op: 'datagram', session: open[Math.floor(random() * open.length)], data_b64: b64('dg'), count: d, wait_ms: 1000 });
            datagrams += d;
          }
          if (random() < 0.5) {
            const victim = open.splice(Math.floor(random() * open.length), 1)[0];
            actions.push({ op: random() < 0.5 ? 'close' : 'fin_session', session: victim });
          }
        }
        plans.push(actions); // the rest close with the connection
      }
      // Waits are short so that a stalled echo fails here, naming the action and its time, rather
      // than adding up past the test's timeout.
      const results = await Promise.all(plans.map((p) => runWt(port, p, { timeout: 4 })));
      results.forEach((r, c) => {
        const trace = `connection ${c}: ${JSON.stringify(r.results.map((x) => [x.op, x.ms]))}`;
        assert.ok(r.connected, trace);
        for (const x of r.results) if (x.op === 'session') assert.equal(x.status, 200, trace);
        for (const x of r.results) if (x.op === 'bidi') assert.equal(x.echo_b64, b64('data'), trace);
        for (const x of r.results) if (x.op === 'uni') assert.ok(x.answers_b64.length > 0, trace);
        for (const x of r.results) if (x.op === 'datagram') assert.equal(x.echoed >= 0, true);
      });
      const s = await statsWhen(port, (x) => x.occupancy.sessions === 0 && x.usage.streams === streams);
      assert.deepEqual(s, doc([0, 0], [50, streams, datagrams]));
    });
  });
}
