// createSecureServer over real HTTP/3 (aioquic, an independent stack):
// the request and response shapes of node:http2's compatibility API,
// streamed bodies both ways with backpressure that reaches the client,
// resets in both directions, handler faults, and memory that stays flat
// over large and aborted transfers.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import dgram from 'node:dgram';
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream';
import v8 from 'node:v8';
import vm from 'node:vm';
import { createSecureServer, Http3RequestListener, Http3SecureServer, Http3ServerResponse } from '../../src/index';
import { withDevHooks } from '../../src/lib/dev-hooks';
import { silentLogger } from '../../src/lib/log';
import { AddressInfo, StreamServer } from '../../src/lib/stream-server';
import { addon } from '../../src/native/binding';
import { field, H3Response, request, runClient } from '../helpers/clients/h3client';
import { h2Request } from '../helpers/tcp-client';
import { runWt } from '../helpers/clients/wt-client';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

type Listener = Http3RequestListener;

async function start(listener: Listener, options: Parameters<typeof createSecureServer>[0] = {}): Promise<{ server: Http3SecureServer; port: number }> {
  const server = createSecureServer({ tcp: false, warnDemoIdentity: false, logger: silentLogger, ...options }, listener);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return { server, port: (server.address() as { port: number }).port };
}

function stop(server: Http3SecureServer): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * RSS after a full collection, MiB; with `trim`, also after glibc's
 * malloc_trim (see settledMemory in test/soak/soak.ts), for comparing two
 * settled levels. Not before measuring a peak: the pages trim returns come
 * back when the next transfer runs and would count as its growth (+43.9
 * MiB once in the 128 MiB transfer's check).
 */
function settledRssMiB(trim = false): number {
  gc();
  gc();
  if (trim) addon().releaseFreeNativeMemory();
  return process.memoryUsage().rss / 2 ** 20;
}

describe('createSecureServer over HTTP/3 (aioquic)', function () {
  this.timeout(120000);
  let server: Http3SecureServer | undefined;
  afterEach(async () => {
    if (server) await stop(server);
    server = undefined;
  });

  it('hands the request over in node:http2 shape: headers with Node duplicate rules, rawHeaders, 3.0, authority, socket', async () => {
    let port: number;
    ({ server, port } = await start((req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          method: req.method,
          url: req.url,
          headers: req.headers,
          rawHeaders: req.rawHeaders,
          httpVersion: req.httpVersion,
          authority: req.authority,
          scheme: req.scheme,
          remoteAddress: req.socket.remoteAddress,
          remotePort: req.socket.remotePort,
        }),
      );
    }));
    const res = await request(port, {
      path: '/shape?x=1',
      headers: [
        ['cookie', 'a=1'],
        ['x-dup', 'one'],
        ['cookie', 'b=2'],
        ['x-dup', 'two'],
        ['user-agent', 'first'],
        ['user-agent', 'second'],
        ['accept', 'text/plain'],
      ],
    });
    assert.equal(res.status, 200);
    const got = JSON.parse(res.body_text);
    assert.equal(got.method, 'GET');
    assert.equal(got.url, '/shape?x=1');
    assert.equal(got.httpVersion, '3.0');
    assert.equal(got.authority, `127.0.0.1:${port}`);
    assert.equal(got.scheme, 'https');
    assert.equal(got.headers[':authority'], `127.0.0.1:${port}`);
    assert.equal(got.headers.cookie, 'a=1; b=2', 'cookie lines joined with "; "');
    assert.equal(got.headers['x-dup'], 'one, two', 'other duplicates joined with ", "');
    assert.equal(got.headers['user-agent'], 'first', 'user-agent: the first wins, as in Node');
    assert.equal(got.remoteAddress, '127.0.0.1');
    assert.ok(Number.isInteger(got.remotePort) && got.remotePort > 0);
    assert.deepEqual(got.rawHeaders.slice(-4), ['user-agent', 'second', 'accept', 'text/plain']);
  });

  it('answers with case-kept values, many fields, several set-cookie lines and trailers; HEAD gets headers only', async () => {
    const helmetLike: Record<string, string> = {
      'Content-Security-Policy': "default-src 'self';base-uri 'self'",
      'Cross-Origin-Opener-Policy': 'same-origin',
      'Cross-Origin-Resource-Policy': 'same-origin',
      'Origin-Agent-Cluster': '?1',
      'Referrer-Policy': 'no-referrer',
      'Strict-Transport-Security': 'max-age=31536000; includeSubDomains',
      'X-Content-Type-Options': 'nosniff',
      'X-DNS-Prefetch-Control': 'off',
      'X-Download-Options': 'noopen',
      'X-Frame-Options': 'SAMEORIGIN',
      'X-Permitted-Cross-Domain-Policies': 'none',
      'X-XSS-Protection': '0',
      'X-Request-Id': 'AbC-123-XyZ',
    };
    let port: number;
    ({ server, port } = await start((req, res) => {
      for (const [n, v] of Object.entries(helmetLike)) res.setHeader(n, v);
      res.setHeader('Set-Cookie', ['sid=QUJDZGVm+/==; Path=/; HttpOnly', 'theme=Dark; Path=/']);
      if (req.url === '/trailers') {
        res.addTrailers({ 'X-Checksum': 'Sha256=AbC' });
        res.write('part one, ');
        res.end('part two');
        return;
      }
      res.end('body that HEAD must not carry');
    }));
    const res = await request(port, { path: '/' });
    assert.equal(res.status, 200);
    for (const [n, v] of Object.entries(helmetLike)) assert.equal(field(res, n.toLowerCase()), v, n);
    assert.deepEqual(
      res.headers.filter(([n]) => n === 'set-cookie').map(([, v]) => v),
      ['sid=QUJDZGVm+/==; Path=/; HttpOnly', 'theme=Dark; Path=/'],
    );
    assert.equal(res.body_text, 'body that HEAD must not carry');

    const withTrailers = await request(port, { path: '/trailers' });
    assert.equal(withTrailers.body_text, 'part one, part two');
    assert.deepEqual(withTrailers.trailers, [['x-checksum', 'Sha256=AbC']]);

    const head = await request(port, { method: 'HEAD', path: '/' });
    assert.equal(head.status, 200);
    assert.equal(head.body_length, 0);
    assert.equal(field(head, 'x-frame-options'), 'SAMEORIGIN');
  });

  it('reads a request body only a bounded window ahead of a consumer that is not reading, then all of it', async () => {
    const total = 8 * 2 ** 20;
    let readDuringPause = -1;
    let port: number;
    ({ server, port } = await start(async (req, res) => {
      await sleep(1500);
      readDuringPause = server!.counters()!.bodyBytesRead;
      const hash = crypto.createHash('sha256');
      let n = 0;
      for await (const chunk of req) {
        n += (chunk as Buffer).length;
        hash.update(chunk as Buffer);
      }
      res.end(JSON.stringify({ n, sha256: hash.digest('hex') }));
    }));
    const res = await request(port, { method: 'POST', path: '/upload', body_generate: { total } }, 60);
    assert.equal(res.status, 200, res.error ?? '');
    const got = JSON.parse(res.body_text);
    assert.equal(got.n, total);
    assert.equal(got.sha256, crypto.createHash('sha256').update(Buffer.alloc(total)).digest('hex'));
    // The core read at most its 256 KiB window (plus one read) while nothing was consumed.
    assert.ok(readDuringPause >= 0 && readDuringPause <= 256 * 1024 + 64 * 1024, `read ${readDuringPause} bytes during the pause`);
  });

  it('a client reset mid-upload aborts the request with an error naming the HTTP/3 code; the server goes on', async () => {
    const seen: { aborted: boolean; error: string } = { aborted: false, error: '' };
    const done = new Promise<void>((resolve) => {
      void start((req, res) => {
        if (req.url !== '/upload') {
          res.end('fine');
          return;
        }
        req.on('aborted', () => (seen.aborted = true));
        req.on('error', (e) => {
          seen.error = e.message;
          resolve();
        });
        req.resume();
      }).then((s) => {
        server = s.server;
        const chunks = Array.from({ length: 10 }, () => Buffer.alloc(16 * 1024).toString('base64'));
        // Chunks 30 ms apart: a RESET_STREAM that arrives before the
        // server has read the request's HEADERS discards them (quiche drops
        // a reset stream's unread data), and then there is no request to abort.
        void request(s.port, { method: 'POST', path: '/upload', body_chunks_b64: chunks, chunk_delay_ms: 30, reset_after_chunks: 3, reset_code: 0x10c });
      });
    });
    await done;
    assert.ok(seen.aborted, "'aborted' emitted");
    assert.match(seen.error, /H3_REQUEST_CANCELLED/);
    const next = await request((server!.address() as { port: number }).port, { path: '/' });
    assert.equal(next.body_text, 'fine');
  });

  it('a client STOP_SENDING mid-download ends pipeline() with an error naming the code and closes the file', async () => {
    const file = path.join(os.tmpdir(), `h3-compat-${process.pid}.bin`);
    fs.writeFileSync(file, crypto.randomBytes(8 * 2 ** 20));
    let port = 0;
    const ended = new Promise<{ error: string; fileClosed: boolean }>((resolve) => {
      void start((req, res) => {
        const source = fs.createReadStream(file);
        pipeline(source, res, (e) => resolve({ error: e?.message ?? '', fileClosed: source.destroyed }));
      }).then((s) => {
        server = s.server;
        port = s.port;
        void request(port, { path: '/file', discard_body: true, stop_after_bytes: 2 ** 20, stop_code: 0x10c });
      });
    });
    const got = await ended;
    fs.rmSync(file);
    assert.match(got.error, /H3_REQUEST_CANCELLED/);
    assert.ok(got.fileClosed, 'the file stream was destroyed');
  });

  it('a listener that throws answers 500 before headers, resets the stream after them; a write after end is an error event, no crash', async () => {
    const writeErrors: string[] = [];
    let port: number;
    ({ server, port } = await start(async (req, res) => {
      if (req.url === '/throw') throw new Error('boom before headers');
      if (req.url === '/throw-late') {
        res.writeHead(200);
        res.write('started');
        await sleep(20);
        throw new Error('boom after headers');
      }
      res.on('error', (e: NodeJS.ErrnoException) => writeErrors.push(String(e.code)));
      res.end('ended');
      res.write('too late');
    }));
    const early = await request(port, { path: '/throw' });
    assert.equal(early.status, 500);
    const late = await request(port, { path: '/throw-late' });
    assert.equal(late.status, 200);
    assert.equal(late.reset_code, 0x102, 'H3_INTERNAL_ERROR');
    const after = await request(port, { path: '/after-end' });
    assert.equal(after.body_text, 'ended');
    await sleep(50);
    assert.deepEqual(writeErrors, ['ERR_STREAM_WRITE_AFTER_END']);
  });

  // Flat memory is checked where the bytes are: the file bytes read but not
  // yet taken by QUIC (the read stream's buffer plus the response's unsent
  // bytes, sampled every 20 ms) and the core's send queue, both bounded
  // whatever the file's size. RSS is only a coarse guard beside them: the
  // 64 KiB chunks, once sent, are garbage V8 frees when external memory has
  // grown by tens of MiB, and in the full suite's process RSS less
  // ArrayBuffers still rose by 35 MiB in one run from V8's and the
  // allocator's reservations, and RSS itself by 69.9 MiB in one fresh-clone
  // CI run whose bounded checks both passed; a server holding the file would
  // add 128 MiB or more, so the guard sits at 96 MiB, below that.
  // The first transfer of a process grows RSS by those reservations (about
  // 40 MiB here, whatever the size), so one transfer warms up, the next is
  // measured.
  it('pipeline(fs.createReadStream(file), res) serves 128 MiB with flat memory (after one warm-up transfer)', async () => {
    const size = 128 * 2 ** 20;
    const file = path.join(os.tmpdir(), `h3-compat-big-${process.pid}.bin`);
    const fd = fs.openSync(file, 'w');
    const block = crypto.randomBytes(2 ** 20);
    const hash = crypto.createHash('sha256');
    for (let i = 0; i < size / block.length; i++) {
      fs.writeSync(fd, block);
      hash.update(block);
    }
    fs.closeSync(fd);
    let port: number;
    let current: { source: fs.ReadStream; res: Http3ServerResponse } | undefined;
    ({ server, port } = await start((req, res) => {
      res.setHeader('content-length', String(size));
      const source = fs.createReadStream(file);
      current = { source, res };
      pipeline(source, res, () => {});
    }));
    const warm = await request(port, { path: '/big', discard_body: true }, 110);
    assert.equal(warm.body_length, size, warm.error ?? '');
    const before = settledRssMiB();
    let rssPeak = before;
    let queuedPeak = 0;
    let inFlightPeak = 0;
    const sampler = setInterval(() => {
      rssPeak = Math.max(rssPeak, process.memoryUsage().rss / 2 ** 20);
      queuedPeak = Math.max(queuedPeak, server!.counters()!.sendBytesQueued);
      if (current) inFlightPeak = Math.max(inFlightPeak, current.source.readableLength + current.res.writableLength);
    }, 20);
    let res: H3Response;
    try {
      res = await request(port, { path: '/big', discard_body: true }, 110);
    } finally {
      clearInterval(sampler);
      fs.rmSync(file);
    }
    assert.equal(res.status, 200, res.error ?? '');
    assert.equal(res.body_length, size);
    assert.equal(res.body_sha256, hash.digest('hex'));
    assert.ok(current!.source.bytesRead === size, `the file was read whole (${current!.source.bytesRead} bytes)`);
    assert.ok(inFlightPeak > 0, 'the sampler saw the transfer');
    assert.ok(inFlightPeak <= 1024 * 1024, `file bytes read but not taken by QUIC peaked at ${inFlightPeak}`);
    assert.ok(queuedPeak <= 1024 * 1024, `the core queued ${queuedPeak} bytes at most`);
    assert.ok(rssPeak - before <= 96, `RSS grew ${(rssPeak - before).toFixed(1)} MiB during the transfer`);
  });

  it('closeIdleConnections() closes the connections with nothing in flight, and only those', async () => {
    const { server, port } = await start(async (req, res) => {
      if (req.url === '/slow') await sleep(2500);
      res.end('ok\n');
    });
    try {
      // One connection answered and then idle for 4 s; one with a slow
      // request in flight when the call comes.
      const idle = runWt(port, [{ op: 'get', path: '/' }, { op: 'sleep', ms: 4000 }], { timeout: 8 });
      const busy = runClient(port, { requests: [{ path: '/' }, { path: '/slow' }], sequential: true, timeout: 8 });
      await sleep(1200);
      server.closeIdleConnections();
      const [i, b] = await Promise.all([idle, busy]);
      assert.equal(i.results[0].status, 200);
      assert.deepEqual(i.connection_terminated, { error_code: 0x100, reason: 'idle connection closed' }, 'the idle one was closed with H3_NO_ERROR');
      assert.deepEqual(b.responses.map((r) => r.status), [200, 200], 'the busy one finished its request');
      assert.equal(b.connection_terminated, null, 'and was not closed');
      assert.equal((await request(port, { path: '/' })).status, 200, 'the server serves on');
    } finally {
      await stop(server);
    }
  });

  it('1,000 aborted uploads and downloads leave RSS within 10% of where it started', async () => {
    const file = path.join(os.tmpdir(), `h3-compat-abort-${process.pid}.bin`);
    fs.writeFileSync(file, crypto.randomBytes(4 * 2 ** 20));
    let port = 0;
    ({ server, port } = await start((req, res) => {
      if (req.method === 'POST') {
        req.on('error', () => {});
        req.resume();
        return;
      }
      pipeline(fs.createReadStream(file), res, () => {});
    }, { maxStreamsPerConnection: 128 }));
    const chunks = Array.from({ length: 6 }, () => Buffer.alloc(16 * 1024).toString('base64'));
    const upload = { method: 'POST', path: '/up', body_chunks_b64: chunks, reset_after_chunks: 2, reset_code: 0x10c };
    const download = { path: '/down', discard_body: true, stop_after_bytes: 256 * 1024, stop_code: 0x10c };
    const round = async (pairs: number) => {
      for (let done = 0; done < pairs; done += 50) {
        const requests = Array.from({ length: 50 }, (_, i) => (i % 2 === 0 ? upload : download));
        const result = await runClient(port, { timeout: 30, requests });
        assert.ok(result.connected);
      }
    };
    try {
      // Warm-up: the first thousands fill V8's and the allocator's reserves
      // (RSS after rounds of 1,000 in one process: 155.0, 163.1, 163.7,
      // 163.6 MiB with the JS heap flat at 9.6 MiB: a reservation, not a
      // leak, which would grow every round). Two rounds: after the
      // transport work on loss recovery a second round still raised the reserve
      // once (190.1 -> 223.2 MiB from the first to the second, in a
      // fresh-clone CI run; the cause was not isolated).
      await round(1000);
      await round(1000);
      await sleep(200);
      const before = settledRssMiB(true);
      await round(1000);
      await sleep(500);
      const after = settledRssMiB(true);
      assert.ok(after <= before * 1.1, `RSS ${before.toFixed(1)} -> ${after.toFixed(1)} MiB`);
      assert.equal(server.counters()!.requestStreamsOpen, 0, 'no stream left open in the core');
    } finally {
      fs.rmSync(file);
    }
  });
});

describe("createSecureServer's TCP side on the HTTP/3 port's number", function () {
  this.timeout(60000);
  const open: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const close of open.splice(0).reverse()) await close();
  });

  /** A TCP listener on an ephemeral port of 127.0.0.1: the number the server's first UDP pick will collide with. */
  async function takenTcpPort(): Promise<number> {
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    open.push(() => new Promise<void>((resolve) => blocker.close(() => resolve())));
    return (blocker.address() as net.AddressInfo).port;
  }

  /** Whether UDP `port` on 127.0.0.1 can be bound now (the server let go of it). */
  async function udpFree(port: number): Promise<boolean> {
    const socket = dgram.createSocket('udp4');
    try {
      await new Promise<void>((resolve, reject) => {
        socket.once('error', reject);
        socket.bind(port, '127.0.0.1', () => resolve());
      });
      return true;
    } catch {
      return false;
    } finally {
      socket.close();
    }
  }

  /** createSecureServer whose core binds `firstPort` the first time it is asked for port 0, as if the system had picked it. */
  function serverPickingFirst(firstPort: number, listener: Listener) {
    const listened: number[] = [];
    const server = createSecureServer(
      withDevHooks({ warnDemoIdentity: false, logger: silentLogger, allowHTTP1: true }, {
        streamServer: (o, e) => {
          const core = new StreamServer(o, e, silentLogger);
          const listen = core.listen.bind(core);
          core.listen = (port, host) => {
            const chosen = port === 0 && listened.length === 0 ? firstPort : port;
            const address = listen(chosen, host);
            listened.push(address.port);
            return address;
          };
          return core;
        },
      }),
      listener,
    );
    open.push(() => stop(server));
    return { server, listened };
  }

  it('listen(0): a UDP port whose TCP number is taken is given up for another, and both sides serve on the new one', async () => {
    const taken = await takenTcpPort();
    const { server, listened } = serverPickingFirst(taken, (req, res) => res.end(`hello over ${req.httpVersion}`));
    const errors: Error[] = [];
    server.on('error', (e) => errors.push(e));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as AddressInfo).port;
    assert.equal(listened[0], taken, 'the first pick was the taken number');
    assert.notEqual(port, taken);
    assert.equal(listened.at(-1), port);
    assert.deepEqual(errors, []);
    assert.ok(await udpFree(taken), 'the given-up UDP port is released');
    const h3 = await request(port, { method: 'GET', path: '/' });
    assert.equal(h3.status, 200);
    assert.equal(h3.body_text, 'hello over 3.0');
    const h2 = await h2Request(port);
    assert.equal(h2.body.toString(), 'hello over 2.0');
    assert.equal(h2.headers['alt-svc'], `h3=":${port}"; ma=86400`);
  });

  it('listen(port) with that TCP number taken: an EADDRINUSE error event naming it in one line; nothing stays bound', async () => {
    const taken = await takenTcpPort();
    const { server } = serverPickingFirst(taken, (_req, res) => res.end());
    server.listen(taken, '127.0.0.1');
    const [e] = (await once(server, 'error')) as [NodeJS.ErrnoException];
    assert.equal(e.code, 'EADDRINUSE');
    assert.match(e.message, new RegExp(`^TCP port ${taken} on 127\\.0\\.0\\.1 is already in use`));
    assert.ok(!e.message.includes('\n'));
    await once(server, 'close');
    assert.equal(server.listening, false);
    assert.equal(server.address(), null);
    assert.ok(await udpFree(taken), 'the UDP port is released');
  });
});
