// The TCP sibling: the same listener over HTTP/2 and HTTP/1.1 on TCP, with
// Alt-Svc advertising HTTP/3 on every response. Chromium acts on Alt-Svc
// for HTTP/3 only with a publicly trusted certificate, so what is tested
// here is the header itself and both TCP paths (README "The TCP sibling").
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import http2 from 'node:http2';
import https from 'node:https';
import net from 'node:net';
import { once } from 'node:events';
import { toRequestListener } from '../../src/lib/fetch-adapter';
import { startTcpSibling, TcpListener, TcpSibling } from '../../src/lib/tcp-sibling';
import { demoCert, demoKey, h1Request, h2On, h2Request } from '../helpers/tcp-client';

/** Binds a UDP socket on an ephemeral port, standing in for the HTTP/3 side: the sibling takes its port. */
async function udpSide(host = '::'): Promise<{ port: number; close(): void }> {
  const udp = dgram.createSocket({ type: host.includes(':') ? 'udp6' : 'udp4' });
  await new Promise<void>((resolve, reject) => {
    udp.once('error', reject);
    udp.bind(0, host, () => resolve());
  });
  return { port: udp.address().port, close: () => udp.close() };
}

describe('TCP sibling (HTTP/2 + HTTP/1.1 with Alt-Svc)', function () {
  const open: Array<{ close(): unknown }> = [];
  afterEach(async () => {
    for (const o of open.splice(0).reverse()) await o.close();
  });

  async function start(listener: TcpListener, extra: { host?: string } = {}): Promise<{ sibling: TcpSibling; port: number }> {
    const udp = await udpSide(extra.host);
    open.push(udp);
    const sibling = await startTcpSibling({ port: udp.port, host: extra.host, cert: demoCert, key: demoKey, listener });
    open.push(sibling);
    return { sibling, port: udp.port };
  }

  const expectedAltSvc = (port: number) => `h3=":${port}"; ma=86400`;

  it('serves setHeader/end apps over HTTP/2 and HTTP/1.1, both with alt-svc', async () => {
    const { sibling, port } = await start((req, res) => {
      res.setHeader('content-type', 'text/plain');
      res.end(`${req.method} ${req.url} over ${req.httpVersion}\n`);
    });
    assert.equal(sibling.address().port, port);
    const h2 = await h2Request(port, { path: '/a?b=1' });
    assert.equal(h2.status, 200);
    assert.equal(h2.body.toString(), 'GET /a?b=1 over 2.0\n');
    assert.equal(h2.headers['alt-svc'], expectedAltSvc(port));
    const h1 = await h1Request(port, { method: 'POST', path: '/x', body: 'ignored' });
    assert.equal(h1.status, 200);
    assert.equal(h1.body.toString(), 'POST /x over 1.1\n');
    assert.equal(h1.headers['alt-svc'], expectedAltSvc(port));
  });

  it('keeps alt-svc when the app answers with writeHead(status, fields), and lets the app override it', async () => {
    const { port } = await start((req, res) => {
      if (req.url === '/own') {
        res.writeHead(201, { 'alt-svc': 'h3=":443"; ma=60', 'x-app': 'yes' });
      } else {
        res.writeHead(200, { 'content-type': 'application/json', 'x-app': 'yes' });
      }
      res.end('{"ok":true}');
    });
    for (const send of [h2Request, h1Request]) {
      const r = await send(port, { path: '/' });
      assert.equal(r.status, 200);
      assert.equal(r.headers['x-app'], 'yes');
      assert.equal(r.headers['content-type'], 'application/json');
      assert.equal(r.headers['alt-svc'], expectedAltSvc(port), send.name);
      assert.equal(r.body.toString(), '{"ok":true}');
      const own = await send(port, { path: '/own' });
      assert.equal(own.status, 201);
      assert.equal(own.headers['alt-svc'], 'h3=":443"; ma=60', `${send.name}: the app's own value wins`);
    }
  });

  it('streams a response chunk by chunk over both protocols', async () => {
    const { port } = await start((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      let n = 0;
      const timer = setInterval(() => {
        (res as import('node:http').ServerResponse).write(`chunk ${n}\n`);
        if (++n === 4) {
          clearInterval(timer);
          res.end();
        }
      }, 50);
      res.on('close', () => clearInterval(timer));
    });
    // HTTP/2: the first chunk arrives while the server is still writing.
    const session = http2.connect(`https://127.0.0.1:${port}`, { ca: demoCert });
    try {
      const stream = session.request({ ':path': '/stream' });
      const [headers] = (await once(stream, 'response')) as [http2.IncomingHttpHeaders];
      assert.equal(headers['alt-svc'], expectedAltSvc(port));
      const arrivals: number[] = [];
      let text = '';
      stream.on('data', (c: Buffer) => {
        arrivals.push(Date.now());
        text += c.toString();
      });
      await once(stream, 'end');
      assert.equal(text, 'chunk 0\nchunk 1\nchunk 2\nchunk 3\n');
      assert.ok(arrivals.length >= 3, `chunks arrived separately (${arrivals.length} reads)`);
      assert.ok(arrivals[arrivals.length - 1] - arrivals[0] >= 100, 'spread over the writes');
    } finally {
      session.close();
    }
    // HTTP/1.1: chunked, headers before the first chunk.
    const h1 = await h1Request(port, { path: '/stream' });
    assert.equal(h1.headers['transfer-encoding'], 'chunked');
    assert.equal(h1.headers['alt-svc'], expectedAltSvc(port));
    assert.equal(h1.body.toString(), 'chunk 0\nchunk 1\nchunk 2\nchunk 3\n');
  });

  it('carries a fetch handler (serve() with tcp): its response fields and alt-svc together', async () => {
    const { port } = await start(
      toRequestListener((request) => {
        const headers = new Headers({ 'content-type': 'text/plain' });
        headers.append('set-cookie', 'a=1');
        headers.append('set-cookie', 'b=2');
        return new Response(`${request.method} ${new URL(request.url).pathname}`, { status: 202, headers });
      }),
    );
    for (const send of [h2Request, h1Request]) {
      const r = await send(port, { path: '/f' });
      assert.equal(r.status, 202);
      assert.equal(r.body.toString(), 'GET /f');
      assert.deepEqual(r.headers['set-cookie'], ['a=1', 'b=2']);
      assert.equal(r.headers['alt-svc'], expectedAltSvc(port), send.name);
    }
  });

  it('listens dual-stack by default: IPv4 and IPv6 clients alike', async function () {
    const { port, sibling } = await start((_req, res) => res.end('hi'));
    assert.equal(sibling.address().address, '::');
    assert.equal((await h2Request(port, { host: '127.0.0.1' })).body.toString(), 'hi');
    assert.equal((await h2Request(port, { host: '::1' })).body.toString(), 'hi');
    assert.equal((await h1Request(port, { host: '::1' })).headers['alt-svc'], expectedAltSvc(port));
  });

  it('says in one line when the TCP port is in use, and refuses port 0', async () => {
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    open.push({ close: () => new Promise((r) => blocker.close(r)) });
    const port = (blocker.address() as net.AddressInfo).port;
    await assert.rejects(
      startTcpSibling({ port, host: '127.0.0.1', cert: demoCert, key: demoKey, listener: () => {} }),
      (e: Error) => {
        assert.match(e.message, new RegExp(`^TCP port ${port} on 127\\.0\\.0\\.1 is already in use`));
        assert.ok(!e.message.includes('\n'));
        return true;
      },
    );
    await assert.rejects(startTcpSibling({ port: 0, cert: demoCert, key: demoKey, listener: () => {} }), RangeError);
  });

  it('close() ends idle keep-alive connections of both protocols promptly', async () => {
    const { sibling, port } = await start((_req, res) => res.end('ok'));
    const session = http2.connect(`https://127.0.0.1:${port}`, { ca: demoCert });
    session.on('error', () => {});
    await h2On(session, { path: '/' });
    const agent = new https.Agent({ keepAlive: true });
    await h1Request(port, { agent });
    const h1Sockets = Object.values(agent.freeSockets).flat();
    assert.equal(h1Sockets.length, 1, 'the HTTP/1.1 connection is idle in the pool');
    const sessionClosed = once(session, 'close');
    const t0 = Date.now();
    await sibling.close();
    assert.ok(Date.now() - t0 < 1000, `closed in ${Date.now() - t0} ms`);
    await sessionClosed;
    agent.destroy();
  });

  it('close() lets an in-flight response finish, then closes; a stuck one is cut at the deadline', async () => {
    const udp = await udpSide();
    open.push(udp);
    let stuck: (() => void) | undefined;
    const sibling = await startTcpSibling({
      port: udp.port,
      cert: demoCert,
      key: demoKey,
      closeTimeoutMs: 500,
      listener: (req, res) => {
        if (req.url === '/slow') setTimeout(() => res.end('slow done'), 200);
        else stuck = () => res.end('never');
      },
    });
    const agent = new https.Agent({ keepAlive: true });
    const slowH1 = h1Request(udp.port, { path: '/slow', agent });
    const slowH2 = h2Request(udp.port, { path: '/slow' });
    const session = http2.connect(`https://127.0.0.1:${udp.port}`, { ca: demoCert });
    session.on('error', () => {});
    const stuckReq = session.request({ ':path': '/stuck' });
    stuckReq.on('error', () => {});
    stuckReq.resume();
    await once(stuckReq, 'ready');
    await new Promise((r) => setTimeout(r, 50)); // requests reach the server
    const t0 = Date.now();
    const closing = sibling.close();
    const [h1, h2] = await Promise.all([slowH1, slowH2]);
    assert.equal(h1.body.toString(), 'slow done');
    assert.equal(h1.headers.connection, 'close', 'HTTP/1.1 is told the connection ends');
    assert.equal(h2.body.toString(), 'slow done');
    await closing;
    const took = Date.now() - t0;
    assert.ok(took >= 450 && took < 1500, `the stuck stream was cut at the 500 ms deadline (${took} ms)`);
    assert.ok(stuck);
    agent.destroy();
  });
});
