// Profile C end to end: the body streams through the TypeScript callback,
// the running total decides 200 or 413. aioquic is the client.
import assert from 'node:assert/strict';
import { profileC } from '../../src/demo/profiles';
import { b64, field, request, runClient, runClients, PlannedRequest } from '../helpers/clients/h3client';
import { MemoryLogger, onWorkers, startCli, startOnWorkers } from '../helpers/server';
import { createServer, Http3Server } from '../../src';

const H3_NO_ERROR = 0x100;
const H3_REQUEST_INCOMPLETE = 0x10d;

/** Deterministic PRNG (mulberry32) so a failing random split can be replayed. */
function rng(seed: number): () => number {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function split(body: Buffer, cuts: number[]): string[] {
  const out: string[] = [];
  let prev = 0;
  for (const c of [...cuts, body.length]) {
    out.push(b64(body.subarray(prev, c)));
    prev = c;
  }
  return out;
}

function upload(size: number, extra: Partial<PlannedRequest> = {}): PlannedRequest {
  return { method: 'POST', path: '/upload', body_b64: b64(Buffer.alloc(size, 0x5a)), ...extra };
}

function expectAnswer(res: { status: number | null; body_text: string; headers: [string, string][] }, size: number) {
  if (size <= 4096) {
    assert.equal(res.status, 200, `size ${size}`);
    assert.equal(res.body_text, `${size}\n`);
    assert.equal(field(res as never, 'content-type'), 'text/plain');
  } else {
    assert.equal(res.status, 413, `size ${size}`);
    assert.equal(res.body_text, '');
  }
}

// Every case runs on one worker and again on two; the cases that
// read this thread's log lines or pending requests run on one (the CLI
// case below reads the log of two workers).
for (const workers of [1, 2]) describe(`Profile C over HTTP/3 (aioquic client)${onWorkers(workers)}`, function () {
  this.timeout(60000);
  let server: Http3Server;
  let port: number;
  let logger: MemoryLogger;

  before(async () => {
    logger = new MemoryLogger();
    if (workers > 1) {
      ({ server, port } = await startOnWorkers({ workers, app: 'c' }));
      return;
    }
    const { options, handler } = profileC.create(logger);
    server = createServer({ ...options, logger }, handler);
    ({ port } = await server.listen(0, '127.0.0.1'));
  });
  after(() => server.close());

  for (const size of [1, 4095, 4096, 4097, 1024 * 1024]) {
    it(`a ${size}-byte body in one write answers ${size <= 4096 ? `200 "${size}\\n"` : '413'}`, async () => {
      expectAnswer(await request(port, upload(size), 15), size);
    });
  }

  it('a request with no body answers 200 "0\\n", on any path and method', async () => {
    const result = await runClient(port, {
      requests: [
        { method: 'POST', path: '/' },
        { method: 'GET', path: '/x/y?z' },
        { method: 'PATCH', path: '/anything', body_chunks_b64: [] },
      ],
    });
    for (const res of result.responses) expectAnswer(res, 0);
  });

  it('1-byte writes: 4096 one-byte DATA frames give 200, 4097 give 413', async () => {
    const result = await runClient(port, {
      timeout: 20,
      requests: [4096, 4097].map((n) => ({
        method: 'POST',
        path: '/',
        body_chunks_b64: Array.from({ length: n }, () => b64('x')),
      })),
    });
    expectAnswer(result.responses[0], 4096);
    expectAnswer(result.responses[1], 4097);
  });

  it('writes with pauses between them are summed across reads', async () => {
    const chunks = [1000, 1000, 1000, 1096].map((n) => b64(Buffer.alloc(n, 1)));
    const res = await request(port, { method: 'POST', path: '/', body_chunks_b64: chunks, chunk_delay_ms: 60 }, 10);
    expectAnswer(res, 4096);
    const over = await request(port, { method: 'POST', path: '/', body_chunks_b64: [...chunks, b64('!')], chunk_delay_ms: 60 }, 10);
    expectAnswer(over, 4097);
  });

  it('property: 200 random bodies with random splits each answer their own length (seeded)', async () => {
    const random = rng(20261122);
    const requests: PlannedRequest[] = [];
    const sizes: number[] = [];
    for (let i = 0; i < 200; i++) {
      // Half the bodies near the cap, where off-by-one errors live.
      const size = random() < 0.5 ? 4090 + Math.floor(random() * 12) : Math.floor(random() * 9000);
      const body = Buffer.alloc(size);
      for (let j = 0; j < size; j++) body[j] = Math.floor(random() * 256);
      const cuts = Array.from({ length: Math.floor(random() * 8) }, () => Math.floor(random() * (size + 1))).sort((a, b) => a - b);
      sizes.push(size);
      requests.push({ method: 'POST', path: `/r${i}`, body_chunks_b64: split(body, cuts) });
    }
    for (let start = 0; start < requests.length; start += 50) {
      const result = await runClient(port, { timeout: 20, requests: requests.slice(start, start + 50) });
      result.responses.forEach((res, k) => expectAnswer(res, sizes[start + k]));
    }
  });

  it('100 concurrent uploads on one connection each get their own total', async () => {
    const sizes = Array.from({ length: 100 }, (_, i) => (i * 97) % 5000);
    const result = await runClient(port, {
      timeout: 20,
      requests: sizes.map((n, i) => ({ method: 'POST', path: `/c${i}`, body_chunks_b64: split(Buffer.alloc(n, i), [Math.floor(n / 3)]) })),
    });
    assert.equal(result.responses.length, 100);
    result.responses.forEach((res, i) => expectAnswer(res, sizes[i]));
  });

  it('answers 413 before a large paced upload finishes, and STOP_SENDING (H3_NO_ERROR) reaches the client', async () => {
    const chunks = Array.from({ length: 40 }, () => b64(Buffer.alloc(16 * 1024, 7)));
    const res = await request(port, { method: 'POST', path: '/big', body_chunks_b64: chunks, chunk_delay_ms: 25 }, 10);
    assert.equal(res.status, 413);
    assert.equal(res.stop_sending_code, H3_NO_ERROR);
    // 40 chunks 25 ms apart take about a second to send; the answer came long before.
    assert.ok(res.elapsed_ms < 500, `413 after ${res.elapsed_ms} ms`);
  });

  it('a 1 GiB attempt is cut off near the cap: the client stops early and the server reads little past 4096', async () => {
    const before = server.counters().bodyBytesRead;
    const res = await request(port, { method: 'POST', path: '/huge', body_generate: { total: 1024 ** 3, chunk_size: 16384 } }, 20);
    assert.equal(res.status, 413);
    assert.equal(res.stop_sending_code, H3_NO_ERROR);
    assert.ok(res.sent_bytes !== null && res.sent_bytes < 16 * 1024 * 1024, `client sent ${res.sent_bytes}`);
    const read = server.counters().bodyBytesRead - before;
    assert.ok(read - 4096 <= 64 * 1024, `server read ${read - 4096} bytes past the cap`);
  });

  if (workers === 1) it('a client reset mid-body gets no response, logs no total, leaves no state, and the server keeps serving', async () => {
    const linesBefore = logger.lines.length;
    const result = await runClient(port, {
      timeout: 2,
      requests: [
        { method: 'POST', path: '/reset', body_chunks_b64: [b64('abc'), b64('def'), b64('ghi')], chunk_delay_ms: 100, reset_after_chunks: 2 },
      ],
    });
    const res = result.responses[0];
    assert.equal(res.status, null);
    assert.equal(res.reset_code, H3_REQUEST_INCOMPLETE);
    assert.equal(server.pendingRequests, 0);
    assert.ok(!logger.lines.slice(linesBefore).some((l) => /body complete/.test(l)));
    expectAnswer(await request(port, upload(10)), 10);
  });

  if (workers === 1) it('logs no total for a body cut off at the cap, and one for each completed body', async () => {
    const linesBefore = logger.lines.length;
    await request(port, upload(5000));
    await request(port, upload(123));
    const totals = logger.lines.slice(linesBefore).filter((l) => /body complete/.test(l));
    assert.deepEqual(totals, ['body complete: total=123 bytes (POST /upload)']);
  });
});

describe('Profile C CLI (node dist/cli.js --profile c)', function () {
  this.timeout(30000);

  it('on 2 workers (--workers 2), each completed body\'s total reaches the one stderr, from whichever worker served it', async () => {
    const cli = await startCli(['--profile', 'c', '--workers', '2']);
    try {
      assert.match(cli.stderr(), /2 workers, packets steered by/);
      // Separate connections land on either worker (the client's first
      // connection ID decides); 12 make both served all but surely.
      const results = await runClients(cli.port, { requests: [upload(321), upload(5000)], sequential: true }, 12);
      for (const r of results) {
        expectAnswer(r.responses[0], 321);
        expectAnswer(r.responses[1], 5000);
      }
      await cli.waitFor(/(body complete: total=321 bytes[^]*){12}/, { stream: 'stderr', timeoutMs: 5000 });
      assert.equal(cli.stderr().match(/body complete/g)?.length, 12, 'one total per completed body, none for the 413s');
    } finally {
      await cli.stop();
    }
  });

  it('writes the completed body total to stderr', async () => {
    const cli = await startCli(['--profile', 'c']);
    try {
      const res = await request(cli.port, upload(321));
      expectAnswer(res, 321);
      await cli.waitForStderr(/body complete: total=321 bytes/);
      await request(cli.port, upload(4097));
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(cli.stderr().match(/body complete/g)?.length, 1);
    } finally {
      await cli.stop();
    }
  });
});

describe('body callback contract', function () {
  it('headers are decoded before the first chunk, chunks arrive in order, only the last is final, req.body stays empty', async () => {
    const calls: { method: string; path: string; header: string | undefined; bodyLen: number; chunk: Buffer; final: boolean }[] = [];
    const server = createServer(
      {
        logger: new MemoryLogger(),
        onBody: (req, chunk, final) => {
          calls.push({ method: req.method, path: req.path, header: req.header('x-tag'), bodyLen: req.body.length, chunk: Buffer.from(chunk), final });
        },
      },
      (_req, res) => res.text(200, 'done\n'),
    );
    const { port } = await server.listen(0, '127.0.0.1');
    try {
      const body = Buffer.alloc(3000);
      for (let i = 0; i < body.length; i++) body[i] = i % 251;
      const chunks = split(body, [1, 500, 501, 2999]);
      const res = await request(port, { method: 'PUT', path: '/order', headers: [['x-tag', 'seen']], body_chunks_b64: chunks, chunk_delay_ms: 30 });
      assert.equal(res.status, 200);
      assert.ok(calls.length >= 2, `${calls.length} callback calls`);
      for (const c of calls) {
        assert.equal(c.method, 'PUT');
        assert.equal(c.path, '/order');
        assert.equal(c.header, 'seen');
        assert.equal(c.bodyLen, 0);
      }
      assert.deepEqual(calls.map((c) => c.final), [...calls.slice(1).map(() => false), true]);
      assert.ok(Buffer.concat(calls.map((c) => c.chunk)).equals(body), 'chunks concatenate to the body in order');
    } finally {
      await server.close();
    }
  });
});
