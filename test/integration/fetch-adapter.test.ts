// serve({ fetch }) and the fetch adapter, run over node:http2 (TCP) as the
// server factory: the same req/res shapes the HTTP/3 compatibility server
// hands over, so what holds here holds there. HTTP/1.1 requests check the
// node:http shapes the TCP sibling also delivers.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import https from 'node:https';
import { once } from 'node:events';
import { serve } from '../../src/lib/serve';
import type { FetchHandler } from '../../src/lib/fetch-adapter';
import { demoCert, demoKey, h1Request, h2Request } from '../helpers/tcp-client';

const MiB = 1024 * 1024;

/** POST / (or what `headers` say) with `body` on an HTTP/2 session: the status and the text answered. */
function post(session: http2.ClientHttp2Session, body: Buffer | string, headers: http2.OutgoingHttpHeaders = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ':method': 'POST', ':path': '/', ...headers });
    let status = 0;
    let text = '';
    stream.on('response', (h) => (status = Number(h[':status'])));
    stream.on('data', (c: Buffer) => (text += c));
    stream.on('error', reject);
    stream.on('close', () => resolve({ status, body: text }));
    stream.end(body);
  });
}

interface Served {
  server: http2.Http2SecureServer;
  port: number;
  errors: unknown[];
}

describe('serve({ fetch }) over node:http2', function () {
  const running: Served[] = [];
  const sessions: http2.ClientHttp2Session[] = [];
  afterEach(async () => {
    for (const s of sessions.splice(0)) s.destroy();
    for (const { server } of running.splice(0)) await new Promise((r) => server.close(r));
  });

  async function start(fetch: FetchHandler): Promise<Served> {
    const errors: unknown[] = [];
    let server!: http2.Http2SecureServer;
    const info = await new Promise<{ port: number }>((resolve) => {
      server = serve(
        {
          fetch,
          port: 0,
          hostname: '127.0.0.1',
          cert: demoCert,
          key: demoKey,
          createServer: http2.createSecureServer,
          onError: (e) => errors.push(e),
        },
        resolve,
      );
    });
    const served = { server, port: info.port, errors };
    running.push(served);
    return served;
  }

  function connect(port: number): http2.ClientHttp2Session {
    const session = http2.connect(`https://127.0.0.1:${port}`, { ca: demoCert });
    session.on('error', () => {});
    sessions.push(session);
    return session;
  }

  it('GET with a query: URL, method, fields (repeats kept, cookies joined), over HTTP/2 and HTTP/1.1', async () => {
    const { port } = await start((request) => {
      const url = new URL(request.url);
      return Response.json({
        url: request.url,
        method: request.method,
        q: url.searchParams.get('q'),
        dup: request.headers.get('x-dup'),
        cookie: request.headers.get('cookie'),
        host: request.headers.get('host'),
        pseudo: [...request.headers.keys()].filter((k) => k.startsWith(':')),
        body: request.body === null,
      });
    });
    const headers = { 'x-dup': ['a', 'b'], cookie: ['c=1', 'd=2'] };
    for (const send of [h2Request, h1Request]) {
      const r = await send(port, { path: '/p/x?q=hello%20world&r=2', headers });
      assert.equal(r.status, 200, send.name);
      assert.equal(r.headers['content-type'], 'application/json');
      assert.equal(Number(r.headers['content-length']), r.body.length, 'an in-memory body is sent with its length');
      assert.deepEqual(JSON.parse(r.body.toString()), {
        url: `https://127.0.0.1:${port}/p/x?q=hello%20world&r=2`,
        method: 'GET',
        q: 'hello world',
        dup: 'a, b',
        cookie: 'c=1; d=2',
        host: `127.0.0.1:${port}`,
        pseudo: [],
        body: true,
      });
    }
  });

  it('POST JSON echo', async () => {
    const { port } = await start(async (request) => Response.json({ got: await request.json(), method: request.method }, { status: 201 }));
    for (const send of [h2Request, h1Request]) {
      const r = await send(port, { method: 'POST', path: '/echo', headers: { 'content-type': 'application/json' }, body: '{"a":[1,2,3]}' });
      assert.equal(r.status, 201);
      assert.deepEqual(JSON.parse(r.body.toString()), { got: { a: [1, 2, 3] }, method: 'POST' });
    }
  });

  it('streams a 20 MiB upload to a handler reading it chunk by chunk', async () => {
    const { port } = await start(async (request) => {
      const reader = request.body!.getReader();
      let bytes = 0;
      let reads = 0;
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        assert.ok(value instanceof Uint8Array);
        bytes += value.byteLength;
        reads++;
      }
      return new Response(`${bytes} ${reads}`);
    });
    const body = Buffer.alloc(20 * MiB, 7);
    for (const send of [h2Request, h1Request]) {
      const r = await send(port, { method: 'PUT', path: '/up', body });
      const [bytes, reads] = r.body.toString().split(' ').map(Number);
      assert.equal(bytes, 20 * MiB, send.name);
      assert.ok(reads > 20, `${send.name}: read in many chunks (${reads})`);
    }
  });

  it('streams a response the handler produces over time; the client reads it as it comes', async () => {
    const { port } = await start(
      () =>
        new Response(
          new ReadableStream<Uint8Array>({
            async start(controller) {
              for (let i = 0; i < 5; i++) {
                controller.enqueue(new TextEncoder().encode(`event ${i}\n`));
                await new Promise((r) => setTimeout(r, 60));
              }
              controller.close();
            },
          }),
          { headers: { 'content-type': 'text/event-stream' } },
        ),
    );
    const session = connect(port);
    const stream = session.request({ ':path': '/events' });
    const t0 = Date.now();
    const [headers] = (await once(stream, 'response')) as [http2.IncomingHttpHeaders];
    const headersAt = Date.now() - t0;
    assert.equal(headers[':status'], 200);
    assert.equal(headers['content-type'], 'text/event-stream');
    const arrivals: Array<[number, string]> = [];
    stream.on('data', (c: Buffer) => arrivals.push([Date.now() - t0, c.toString()]));
    await once(stream, 'end');
    assert.equal(arrivals.map(([, t]) => t).join(''), [0, 1, 2, 3, 4].map((i) => `event ${i}\n`).join(''));
    assert.ok(arrivals.length >= 4, `arrived in pieces: ${JSON.stringify(arrivals)}`);
    // Relative times (the machine may be busy): the events arrive as the
    // handler makes them, ~60 ms apart, not together at the end.
    const last = arrivals[arrivals.length - 1][0];
    assert.ok(last - arrivals[0][0] >= 150, `spread over the handler's writes: ${JSON.stringify(arrivals)}`);
    assert.ok(last - headersAt >= 150, `headers went before the body was complete (${headersAt} ms, last event ${last} ms)`);
    // And HTTP/1.1: chunked, no content-length.
    const h1 = await h1Request(port, { path: '/events' });
    assert.equal(h1.headers['transfer-encoding'], 'chunked');
    assert.equal(h1.body.toString().split('\n').length, 6);
  });

  it('keeps two set-cookie lines apart', async () => {
    const { port } = await start(() => {
      const headers = new Headers({ 'content-type': 'text/plain' });
      headers.append('set-cookie', 'a=1; Path=/; HttpOnly');
      headers.append('set-cookie', 'b=2; Path=/, x; Secure');
      return new Response('ok', { headers });
    });
    for (const send of [h2Request, h1Request]) {
      const r = await send(port);
      assert.deepEqual(r.headers['set-cookie'], ['a=1; Path=/; HttpOnly', 'b=2; Path=/, x; Secure'], send.name);
    }
  });

  it('HEAD: the handler sees HEAD, the client gets the fields and no body', async () => {
    let cancelled = false;
    const { port } = await start(
      (request) =>
        new Response(
          new ReadableStream({
            pull(c) {
              c.enqueue(new TextEncoder().encode('x'.repeat(1000)));
            },
            cancel() {
              cancelled = true;
            },
          }),
          { headers: { 'x-method': request.method, 'content-length': '1000' } },
        ),
    );
    for (const send of [h2Request, h1Request]) {
      const r = await send(port, { method: 'HEAD' });
      assert.equal(r.status, 200);
      assert.equal(r.headers['x-method'], 'HEAD');
      assert.equal(r.headers['content-length'], '1000');
      assert.equal(r.body.length, 0);
    }
    assert.ok(cancelled, 'the unused body was cancelled, not read');
  });

  it('a handler that throws or rejects gets 500; an error mid-stream resets the stream', async () => {
    const { port, errors } = await start(async (request) => {
      const path = new URL(request.url).pathname;
      if (path === '/throw') throw new Error('boom');
      if (path === '/reject') return Promise.reject(new Error('async boom'));
      let n = 0;
      return new Response(
        new ReadableStream({
          async pull(c) {
            if (n++ === 0) return c.enqueue(new Uint8Array(100_000)); // past the in-memory threshold: headers go
            await new Promise((r) => setTimeout(r, 20));
            c.error(new Error('broke mid-stream'));
          },
        }),
      );
    });
    for (const path of ['/throw', '/reject']) {
      for (const send of [h2Request, h1Request]) {
        const r = await send(port, { path });
        assert.equal(r.status, 500);
        assert.equal(r.headers['content-type'], 'text/plain; charset=utf-8');
        assert.equal(r.body.toString(), 'internal server error\n', 'no error details leak to the client');
      }
    }
    assert.deepEqual(
      errors.map((e) => (e as Error).message),
      ['boom', 'boom', 'async boom', 'async boom'],
    );
    await assert.rejects(h2Request(port, { path: '/midstream' }), /RST_STREAM|stream error|closed/i);
    await assert.rejects(h1Request(port, { path: '/midstream' }), /aborted|socket hang up|ECONNRESET/i);
    assert.equal(errors.length, 6);
    assert.equal((errors[4] as Error).message, 'broke mid-stream');
  });

  it('a client that goes away mid-download cancels the response body and aborts request.signal', async () => {
    let cancelled: (reason: unknown) => void;
    const cancelledP = new Promise<unknown>((r) => (cancelled = r));
    let signal: AbortSignal | undefined;
    const { port } = await start((request) => {
      signal = request.signal;
      return new Response(
        new ReadableStream({
          async pull(c) {
            await new Promise((r) => setTimeout(r, 10));
            c.enqueue(new Uint8Array(16 * 1024));
          },
          cancel(reason) {
            cancelled(reason);
          },
        }),
      );
    });
    const session = connect(port);
    const stream = session.request({ ':path': '/forever' });
    await once(stream, 'data');
    stream.close(http2.constants.NGHTTP2_CANCEL);
    const reason = await Promise.race([cancelledP, new Promise((r) => setTimeout(r, 2000, 'timeout'))]);
    assert.notEqual(reason, 'timeout', 'cancel() of the underlying source was called');
    assert.ok(signal?.aborted, 'request.signal aborted');
  });

  it('HTTP/1.1 client going away mid-download cancels the body too', async () => {
    let cancelled: (reason: unknown) => void;
    const cancelledP = new Promise<unknown>((r) => (cancelled = r));
    const { port } = await start(
      () =>
        new Response(
          new ReadableStream({
            async pull(c) {
              await new Promise((r) => setTimeout(r, 10));
              c.enqueue(new Uint8Array(16 * 1024));
            },
            cancel: (reason) => cancelled(reason),
          }),
        ),
    );
    const req = https.request({ host: '127.0.0.1', port, path: '/', ca: demoCert, agent: false });
    req.on('error', () => {});
    req.end();
    const [res] = (await once(req, 'response')) as [import('node:http').IncomingMessage];
    await once(res, 'data');
    req.destroy();
    const reason = await Promise.race([cancelledP, new Promise((r) => setTimeout(r, 2000, 'timeout'))]);
    assert.notEqual(reason, 'timeout');
  });

  for (const how of ['resets the stream', 'drops the connection'] as const) {
    it(`a client that ${how} mid-upload errors the body the handler reads, and aborts request.signal`, async () => {
      let outcome: (v: { error: string; aborted: boolean; bytes: number }) => void;
      const outcomeP = new Promise<{ error: string; aborted: boolean; bytes: number }>((r) => (outcome = r));
      const { port } = await start(async (request) => {
        let bytes = 0;
        try {
          const reader = request.body!.getReader();
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            // Slow after the first chunk: the client's reset arrives with the body incomplete.
            if (bytes === 0) await new Promise((r) => setTimeout(r, 300));
            bytes += value.byteLength;
          }
          outcome({ error: 'none', aborted: request.signal.aborted, bytes });
        } catch (e) {
          outcome({ error: (e as Error).message, aborted: request.signal.aborted, bytes });
        }
        return new Response('late');
      });
      const session = connect(port);
      const stream = session.request({ ':method': 'POST', ':path': '/' });
      stream.on('error', () => {});
      stream.write(Buffer.alloc(1024 * 1024));
      await new Promise((r) => setTimeout(r, 100));
      // The megabyte is still behind flow control, so close() resets without ending the body.
      if (how === 'resets the stream') stream.close(http2.constants.NGHTTP2_CANCEL);
      else session.destroy();
      const o = await outcomeP;
      assert.match(o.error, /ended early/, 'the read failed rather than ending as if complete');
      assert.ok(o.bytes > 0 && o.bytes < 1024 * 1024, `${o.bytes} bytes`);
      assert.ok(o.aborted, 'request.signal aborted');
    });
  }

  it('Requests made from the request: new Request(request), new Request(request, init) and clone() carry method, URL, fields and body', async () => {
    const { port, errors } = await start(async (request) => {
      const clone = request.clone();
      const withInit = new Request(clone, { method: 'PUT', headers: { 'x-added': '1' } });
      const copy = new Request(request);
      return Response.json({
        isRequest: request instanceof Request && copy instanceof Request && withInit instanceof Request,
        copy: { method: copy.method, url: copy.url, field: copy.headers.get('x-field'), body: await copy.text() },
        withInit: { method: withInit.method, url: withInit.url, field: withInit.headers.get('x-field'), added: withInit.headers.get('x-added'), body: await withInit.text() },
        originalUsed: request.bodyUsed,
      });
    });
    const session = connect(port);
    const r = await post(session, 'the body', { ':path': '/derived?q=1', 'x-field': 'kept' });
    assert.equal(r.status, 200, r.body);
    const url = `https://127.0.0.1:${port}/derived?q=1`;
    assert.deepEqual(JSON.parse(r.body), {
      isRequest: true,
      copy: { method: 'POST', url, field: 'kept', body: 'the body' },
      withInit: { method: 'PUT', url, field: null, added: '1', body: 'the body' },
      originalUsed: true,
    });
    assert.deepEqual(errors, []);
  });

  it('the signals of Requests made from the request abort with it when the client goes away', async () => {
    let outcome: (v: Record<string, boolean>) => void;
    const outcomeP = new Promise<Record<string, boolean>>((r) => (outcome = r));
    let started: () => void;
    const startedP = new Promise<void>((r) => (started = r));
    const { port } = await start(async (request) => {
      const signals: Record<string, AbortSignal> = {
        request: request.signal,
        'new Request(request)': new Request(request).signal,
        'new Request(request, init)': new Request(request, { headers: { 'x-added': '1' } }).signal,
        'request.clone()': request.clone().signal,
      };
      started();
      await Promise.race([
        Promise.all(Object.values(signals).map((s) => (s.aborted ? undefined : once(s, 'abort')))),
        new Promise((r) => setTimeout(r, 3000)),
      ]);
      outcome(Object.fromEntries(Object.entries(signals).map(([name, s]) => [name, s.aborted])));
      return new Response('late');
    });
    const session = connect(port);
    const stream = session.request({ ':method': 'GET', ':path': '/' });
    stream.on('error', () => {});
    await startedP;
    stream.close(http2.constants.NGHTTP2_CANCEL);
    assert.deepEqual(await outcomeP, {
      request: true,
      'new Request(request)': true,
      'new Request(request, init)': true,
      'request.clone()': true,
    });
  });

  it('upload backpressure: a handler that does not read holds the server to a bounded buffer', async () => {
    const samples: Array<{ readableLength: number; socketBytes: number }> = [];
    const { port } = await start(async (request, env) => {
      const incoming = env.incoming as http2.Http2ServerRequest;
      const socket = incoming.stream.session!.socket;
      await new Promise((r) => setTimeout(r, 500));
      samples.push({ readableLength: incoming.readableLength, socketBytes: socket.bytesRead });
      let bytes = 0;
      const reader = request.body!.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        bytes += value.byteLength;
      }
      samples.push({ readableLength: incoming.readableLength, socketBytes: socket.bytesRead });
      return new Response(String(bytes));
    });
    const r = await h2Request(port, { method: 'POST', body: Buffer.alloc(20 * MiB) });
    assert.equal(r.body.toString(), String(20 * MiB));
    const [idle, after] = samples;
    // Idle: what reached the server process is the stream's flow-control
    // window plus the Node stream's buffer, not the 20 MiB on offer.
    assert.ok(idle.socketBytes < 512 * 1024, `server read ${idle.socketBytes} bytes while the handler waited`);
    assert.ok(idle.readableLength <= 64 * 1024, `Node stream buffered ${idle.readableLength}`);
    assert.ok(after.socketBytes > 20 * MiB, 'then the whole body flowed');
  });

  it('upload backpressure on HTTP/1.1 as well', async () => {
    const samples: number[] = [];
    const { port } = await start(async (request, env) => {
      const socket = (env.incoming as import('node:http').IncomingMessage).socket;
      await new Promise((r) => setTimeout(r, 500));
      samples.push(socket.bytesRead);
      const text = await new Response(request.body).arrayBuffer();
      return new Response(String(text.byteLength));
    });
    const r = await h1Request(port, { method: 'POST', body: Buffer.alloc(20 * MiB) });
    assert.equal(r.body.toString(), String(20 * MiB));
    assert.ok(samples[0] < 1 * MiB, `server read ${samples[0]} bytes while the handler waited`);
  });

  it('a body the handler never reads is drained after the response, and the exchange completes', async () => {
    const { port } = await start(() => new Response('not interested', { status: 413 }));
    const session = connect(port);
    for (let i = 0; i < 3; i++) {
      const r = await post(session, Buffer.alloc(2 * MiB));
      assert.deepEqual(r, { status: 413, body: 'not interested' });
    }
    const h1 = await h1Request(port, { method: 'POST', body: Buffer.alloc(2 * MiB) });
    assert.equal(h1.status, 413);
  });

  it('a body first asked for after the response (the adapter drained it) reads as empty instead of waiting forever', async () => {
    let late: Promise<string> | undefined;
    const { port } = await start((request) => {
      // Only method, URL and headers before answering: the real Request is not built yet.
      setTimeout(() => (late = request.text()), 200);
      return new Response('answered first');
    });
    const session = connect(port);
    const r = await post(session, Buffer.alloc(64 * 1024));
    assert.deepEqual(r, { status: 200, body: 'answered first' });
    await new Promise((resolve) => setTimeout(resolve, 400));
    assert.ok(late, 'the handler asked for the body');
    const text = await Promise.race([late, new Promise((resolve) => setTimeout(resolve, 2000, 'still waiting'))]);
    assert.equal(text, '');
  });

  it('answers 400 to a request the fetch API cannot represent', async () => {
    const { port } = await start(() => new Response('unreachable'));
    const r = await h1Request(port, { headers: { host: 'evil.example/x' } });
    assert.equal(r.status, 400);
  });
});
