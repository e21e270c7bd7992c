// How createSecureServer frames a response whose body disagrees with the
// content-length it declared (RFC 9114 section 4.1.2: malformed, so never
// sent as a complete message), and the fields 204 and informational
// responses may not carry. Each case runs on one aioquic connection with a
// plain GET after it, which must still be answered.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import https from 'node:https';
import { createSecureServer, Http3RequestListener, Http3SecureServer, Http3ServerResponse } from '../../src/index';
import type { Logger } from '../../src/lib/log';
import { field, H3Response, runClient } from '../helpers/clients/h3client';
import { MemoryLogger } from '../helpers/server';

const H3_INTERNAL_ERROR = 0x102;

interface Seen {
  events: string[];
  error?: Error & { code?: string };
  writeResult?: boolean;
  callbackError?: Error & { code?: string };
}

async function start(listener: Http3RequestListener, logger: Logger): Promise<{ server: Http3SecureServer; port: number }> {
  const server = createSecureServer({ tcp: false, warnDemoIdentity: false, logger }, listener);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return { server, port: (server.address() as { port: number }).port };
}

/** Serves `handler` on /case (recording the response's events) and a plain 200 on /after; runs both on one connection. */
async function serve(handler: (res: Http3ServerResponse, seen: Seen) => void, { listenError = true } = {}) {
  const seen: Seen = { events: [] };
  const logger = new MemoryLogger();
  const { server, port } = await start((req, res) => {
    if (req.url === '/after') return res.end('still here');
    if (listenError) res.on('error', (e) => ((seen.error = e), seen.events.push('error')));
    res.on('finish', () => seen.events.push('finish'));
    res.on('close', () => seen.events.push('close'));
    handler(res, seen);
  }, logger);
  try {
    const r = await runClient(port, { timeout: 10, sequential: true, requests: [{ path: '/case' }, { path: '/after' }] });
    assert.ok(r.connected, r.handshake_error ?? '');
    // The events come a tick after the reset; the client is slower than that, but wait for 'close' anyway.
    for (let i = 0; i < 50 && !seen.events.includes('close'); i++) await new Promise((ok) => setTimeout(ok, 10));
    return { res: r.responses[0], after: r.responses[1], seen, logger };
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

function assertReset(res: H3Response, after: H3Response) {
  assert.equal(res.reset_code, H3_INTERNAL_ERROR, `the client saw ${JSON.stringify({ status: res.status, body: res.body_text, ended: res.ended, reset: res.reset_code })}`);
  assert.notEqual(res.ended && res.reset_code === null, true, 'never a clean end');
  assert.equal(after.status, 200);
  assert.equal(after.body_text, 'still here');
}

function assertMismatch(seen: Seen, bytes: number, declared: number) {
  assert.equal(seen.error?.code, 'ERR_HTTP_CONTENT_LENGTH_MISMATCH');
  assert.equal(seen.error?.message, `Response body's content-length of ${bytes} byte(s) does not match the content-length of ${declared} byte(s) set in header`);
  assert.deepEqual(seen.events, ['error', 'close'], 'no finish');
}

describe('response framing: a declared content-length is kept or the stream is reset', function () {
  this.timeout(30000);

  it("end('abc') with content-length 5: the stream is reset (H3_INTERNAL_ERROR), 'error' with ERR_HTTP_CONTENT_LENGTH_MISMATCH", async () => {
    const { res, after, seen } = await serve((r) => {
      r.setHeader('content-length', '5');
      r.end('abc');
    });
    assertReset(res, after);
    assertMismatch(seen, 3, 5);
    assert.equal(res.status, null, 'nothing of the message went out');
  });

  it("end() with nothing after content-length 5 was declared: reset", async () => {
    const { res, after, seen } = await serve((r) => {
      r.setHeader('content-length', '5');
      r.end();
    });
    assertReset(res, after);
    assertMismatch(seen, 0, 5);
  });

  it("end('hello!') with content-length 5: reset, nothing sent", async () => {
    const { res, after, seen } = await serve((r) => {
      r.writeHead(200, { 'content-length': '5' });
      r.end('hello!');
    });
    assertReset(res, after);
    assertMismatch(seen, 6, 5);
    assert.equal(res.body_text, '');
  });

  it("write('hello') with content-length 3: that write fails (its callback and 'error'), returns false, nothing past 3 bytes goes out", async () => {
    const { res, after, seen } = await serve((r, s) => {
      r.setHeader('content-length', '3');
      s.writeResult = r.write('hello', (e) => (s.callbackError = e ?? undefined));
      r.end();
    });
    assertReset(res, after);
    assertMismatch(seen, 5, 3);
    assert.equal(seen.writeResult, false);
    assert.equal(seen.callbackError?.code, 'ERR_HTTP_CONTENT_LENGTH_MISMATCH');
    assert.equal(res.body_text, '');
  });

  it('three writes adding up to one byte more than declared: the first two go out, the third fails, the client sees a reset', async () => {
    const { res, after, seen } = await serve((r, s) => {
      r.writeHead(200, { 'content-length': '9' });
      r.write('abc');
      r.write('def');
      s.writeResult = r.write('ghij');
      r.end();
    });
    assertReset(res, after);
    assertMismatch(seen, 10, 9);
    assert.equal(seen.writeResult, false);
    assert.ok('abcdef'.startsWith(res.body_text), `only declared bytes: ${JSON.stringify(res.body_text)}`);
  });

  it('writes short of the declared length, then end(): reset after the bytes that went out', async () => {
    const { res, after, seen } = await serve((r) => {
      r.writeHead(200, { 'content-length': '10' });
      r.write('abc');
      setTimeout(() => r.end('def'), 20);
    });
    assertReset(res, after);
    assertMismatch(seen, 6, 10);
  });

  it('with no error listener the server logs one line naming the code and the request, and keeps serving', async () => {
    const { res, after, seen, logger } = await serve(
      (r) => {
        r.setHeader('content-length', '5');
        r.end('abc');
      },
      { listenError: false },
    );
    assertReset(res, after);
    assert.deepEqual(seen.events, ['close']);
    const lines = logger.lines.filter((l) => l.includes('ERR_HTTP_CONTENT_LENGTH_MISMATCH'));
    assert.equal(lines.length, 1, logger.lines.join('\n'));
    assert.match(lines[0], /GET \/case/);
  });

  it('a body that matches, in one end() or in writes, ends cleanly with finish and close', async () => {
    for (const handler of [
      (r: Http3ServerResponse) => {
        r.setHeader('content-length', '5');
        r.end('hello');
      },
      (r: Http3ServerResponse) => {
        r.writeHead(200, { 'Content-Length': 5 });
        r.write('he');
        r.write('ll');
        r.end('o');
      },
    ]) {
      const { res, after, seen } = await serve(handler);
      assert.equal(res.reset_code, null);
      assert.equal(res.body_text, 'hello');
      assert.equal(field(res, 'content-length'), '5');
      assert.deepEqual(seen.events, ['finish', 'close']);
      assert.equal(after.status, 200);
    }
  });

  it("204: the app's content-length is not sent, its body is dropped; HEAD and 304 keep the app's content-length and send no body", async () => {
    const { res: r204 } = await serve((r) => {
      r.statusCode = 204;
      r.setHeader('content-length', '5');
      r.end('hello');
    });
    assert.equal(r204.status, 204);
    assert.equal(field(r204, 'content-length'), undefined);
    assert.equal(r204.body_text, '');
    const { res: r304 } = await serve((r) => {
      r.writeHead(304, { 'content-length': '5', etag: '"x"' });
      r.end();
    });
    assert.equal(r304.status, 304);
    assert.equal(field(r304, 'content-length'), '5');
    assert.equal(r304.body_text, '');
    assert.equal(r304.reset_code, null);
  });

  it('writeEarlyHints drops a content-length (a 1xx has no content)', async () => {
    const { res } = await serve((r) => {
      r.writeEarlyHints({ link: '</a.css>; rel=preload; as=style', 'content-length': '7' });
      r.end('ok');
    });
    assert.equal(res.status, 200);
    assert.equal(res.body_text, 'ok');
    assert.equal(res.interim.length, 1);
    assert.deepEqual(res.interim[0], [[':status', '103'], ['link', '</a.css>; rel=preload; as=style']]);
  });
});

describe('no stream can stall another', function () {
  this.timeout(60000);
  const KINDS: Record<string, (res: Http3ServerResponse) => void> = {
    misframes: (res) => (res.setHeader('content-length', '10'), res.end('short')),
    'throws before its headers': () => {
      throw new Error('thrown on purpose before headers');
    },
    'throws after its headers': (res) => {
      res.writeHead(200);
      res.write('partial');
      throw new Error('thrown on purpose after headers');
    },
    'never ends': (res) => (res.writeHead(200), res.write('and then nothing')),
    'is destroyed': (res) => (res.write('a little'), res.destroy(new Error('destroyed on purpose'))),
  };

  for (const [kind, misbehave] of Object.entries(KINDS)) {
    it(`20 streams on one connection, one of which ${kind}: the 19 others are answered`, async () => {
      const { server, port } = await start((req, res) => {
        if (req.url === '/bad') return misbehave(res);
        // The good ones answer a little later, so the bad one is already misbehaving.
        setTimeout(() => res.end(`ok ${req.url}`), 50);
      }, new MemoryLogger());
      try {
        const paths = Array.from({ length: 20 }, (_, i) => (i === 7 ? '/bad' : `/ok/${i}`));
        const r = await runClient(port, { timeout: 8, sequential: false, requests: paths.map((path) => ({ path })) });
        assert.ok(r.connected, r.handshake_error ?? '');
        r.responses.forEach((res, i) => {
          if (paths[i] === '/bad') return;
          assert.deepEqual({ status: res.status, body: res.body_text, reset: res.reset_code }, { status: 200, body: `ok ${paths[i]}`, reset: null }, paths[i]);
        });
        const bad = r.responses[7];
        assert.ok(bad.status === 500 || bad.reset_code !== null || bad.error !== null, `the bad one did not end cleanly: ${JSON.stringify(bad).slice(0, 200)}`);
      } finally {
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    });
  }
});

describe('response framing on the TCP side (node:http2 and node:http under createSecureServer)', function () {
  this.timeout(30000);

  async function tcpCase(handler: (res: Http3ServerResponse) => void) {
    const events: string[] = [];
    const logger = new MemoryLogger();
    const server = createSecureServer({ warnDemoIdentity: false, allowHTTP1: true, logger }, (req, res) => {
      if (req.url === '/after') return res.end('still here');
      res.on('error', (e: Error & { code?: string }) => events.push(`error ${e.code}`));
      res.on('finish', () => events.push('finish'));
      handler(res as Http3ServerResponse);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const port = (server.address() as { port: number }).port;
    try {
      const session = http2.connect(`https://127.0.0.1:${port}`, { rejectUnauthorized: false });
      session.on('error', () => {});
      const h2 = await new Promise<{ status?: number; body: string; rst?: number }>((resolve) => {
        const s = session.request({ ':path': '/case' });
        let body = '';
        let status: number | undefined;
        s.on('response', (h) => (status = Number(h[':status'])));
        s.on('data', (d) => (body += d));
        s.on('close', () => resolve({ status, body, rst: s.rstCode }));
        s.on('error', () => {});
      });
      const after = await new Promise<string>((resolve) => {
        const s = session.request({ ':path': '/after' });
        let body = '';
        s.on('data', (d) => (body += d));
        s.on('end', () => resolve(body));
      });
      session.close();
      const h1 = await new Promise<{ status?: number; body: string; error?: string }>((resolve) => {
        const r = https.request({ host: '127.0.0.1', port, path: '/case', rejectUnauthorized: false }, (res) => {
          let body = '';
          res.on('data', (d) => (body += d));
          res.on('end', () => resolve({ status: res.statusCode, body }));
          res.on('error', (e) => resolve({ status: res.statusCode, body, error: e.message }));
        });
        r.on('error', (e) => resolve({ body: '', error: e.message }));
        r.end();
      });
      return { h2, after, h1, events };
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }

  for (const [name, handler] of [
    ["content-length 5, end('abc')", (r: Http3ServerResponse) => (r.setHeader('content-length', '5'), r.end('abc'))],
    ["content-length 3, write('hello')", (r: Http3ServerResponse) => (r.setHeader('content-length', '3'), r.write('hello'), r.end())],
  ] as const) {
    it(`${name}: the HTTP/2 stream is reset (INTERNAL_ERROR), the HTTP/1.1 connection closed; 'error' ERR_HTTP_CONTENT_LENGTH_MISMATCH both times`, async () => {
      const { h2, after, h1, events } = await tcpCase(handler);
      assert.equal(h2.rst, http2.constants.NGHTTP2_INTERNAL_ERROR, JSON.stringify(h2));
      assert.equal(h2.body, '');
      assert.equal(after, 'still here', 'the HTTP/2 connection still answers');
      assert.ok(h1.error, `HTTP/1.1 did not end cleanly: ${JSON.stringify(h1)}`);
      // node:http2's compat emits 'finish' whenever its stream closes, reset or not (compat.js onStreamCloseResponse).
      assert.deepEqual(events.filter((e) => e !== 'finish'), ['error ERR_HTTP_CONTENT_LENGTH_MISMATCH', 'error ERR_HTTP_CONTENT_LENGTH_MISMATCH']);
      assert.ok(events.filter((e) => e === 'finish').length <= 1, events.join());
    });
  }

  it('a matching content-length is untouched on both', async () => {
    const { h2, h1, events } = await tcpCase((r) => (r.setHeader('content-length', '5'), r.write('he'), r.end('llo')));
    assert.deepEqual({ status: h2.status, body: h2.body, rst: h2.rst }, { status: 200, body: 'hello', rst: 0 });
    assert.deepEqual(h1, { status: 200, body: 'hello' });
    assert.deepEqual(events, ['finish', 'finish']);
  });
});
