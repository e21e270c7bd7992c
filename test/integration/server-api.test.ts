// The embedding API: request model, response limits, error handling, close.
import assert from 'node:assert/strict';
import { ConnectionCloseInfo, createServer, H3Request, MAX_RESPONSE_FIELDS } from '../../src';
import { withDevHooks } from '../../src/lib/dev-hooks';
import { field, request, runClient } from '../helpers/clients/h3client';
import { startServer } from '../helpers/server';

describe('embedding API', function () {
  it('exposes method, path, header lookup and the cookie as its own field', async () => {
    let seen: H3Request | undefined;
    const { server, port } = await startServer((req, res) => {
      seen = req;
      res.text(200, 'ok\n');
    });
    try {
      const res = await request(port, {
        method: 'PUT',
        path: '/p?q=1',
        headers: [
          ['x-one', 'a'],
          ['cookie', 'a=1'],
          ['x-two', 'B'],
          ['cookie', 'b=2'],
          ['x-one', 'c'],
        ],
      });
      assert.equal(res.status, 200);
      assert.ok(seen);
      assert.equal(seen.method, 'PUT');
      assert.equal(seen.path, '/p?q=1');
      assert.equal(seen.header('x-two'), 'B');
      assert.equal(seen.header('X-Two'), 'B');
      assert.equal(seen.header('x-one'), 'a, c');
      assert.equal(seen.header('x-missing'), undefined);
      assert.equal(seen.hasHeader('x-missing'), false);
      assert.equal(seen.cookie, 'a=1; b=2');
      assert.equal(seen.header('cookie'), undefined, 'cookie is not reachable through the header lookup');
      assert.equal(seen.hasHeader('cookie'), false);
      assert.equal(seen.body.length, 0);
    } finally {
      await server.close();
    }
  });

  it('reports an absent cookie as undefined', async () => {
    let cookie: string | undefined = 'unset';
    const { server, port } = await startServer((req, res) => {
      cookie = req.cookie;
      res.end();
    });
    try {
      await request(port, { path: '/' });
      assert.equal(cookie, undefined);
    } finally {
      await server.close();
    }
  });

  it(`sends up to ${MAX_RESPONSE_FIELDS} added fields, lowercased, and a 9th throws an error naming the limit`, async () => {
    let thrown: unknown;
    const { server, port, logger } = await startServer((req, res) => {
      const n = Number(req.path.slice(1));
      for (let i = 0; i < n; i++) {
        try {
          res.addField(`X-Field-${i}`, `Value-${i}`);
        } catch (e) {
          thrown = e;
          throw e;
        }
      }
      res.text(200, 'ok\n');
    });
    try {
      const eight = await request(port, { path: '/8' });
      assert.equal(eight.status, 200);
      const added = eight.headers.filter(([n]) => n.startsWith('x-field-'));
      assert.equal(added.length, 8);
      assert.deepEqual(added[7], ['x-field-7', 'value-7']);

      const nine = await request(port, { path: '/9' });
      assert.equal(nine.status, 500);
      assert.ok(thrown instanceof RangeError);
      assert.match((thrown as Error).message, /at most 8 added fields/);
      assert.ok(logger.lines.some((l) => /handler error .*at most 8 added fields/.test(l)));
    } finally {
      await server.close();
    }
  });

  it('answers 500 when a handler throws or rejects, and keeps serving on the same connection', async () => {
    const { server, port } = await startServer(async (req, res) => {
      if (req.path === '/throw') throw new Error('boom');
      if (req.path === '/reject') {
        await new Promise((r) => setTimeout(r, 10));
        throw new Error('async boom');
      }
      res.text(200, 'fine\n');
    });
    try {
      const result = await runClient(port, {
        sequential: true,
        requests: [{ path: '/throw' }, { path: '/ok' }, { path: '/reject' }, { path: '/ok' }],
      });
      assert.deepEqual(
        result.responses.map((r) => r.status),
        [500, 200, 500, 200],
      );
      assert.equal(field(result.responses[0], 'content-type'), 'text/plain');
      assert.equal(result.connection_terminated, null);
    } finally {
      await server.close();
    }
  });

  it('answers a slow async handler, and the buffered body reaches it whole', async () => {
    const { server, port } = await startServer(async (req, res) => {
      await new Promise((r) => setTimeout(r, 50));
      res.text(200, `${req.body.length}:${req.body.toString()}\n`);
    });
    try {
      const res = await request(port, {
        method: 'POST',
        path: '/',
        body_chunks_b64: ['aGVs', 'bG8='].map((c) => c),
        chunk_delay_ms: 20,
      });
      assert.equal(res.status, 200);
      assert.equal(res.body_text, '5:hello\n');
    } finally {
      await server.close();
    }
  });

  it('address() reports the bound port; close() resolves and frees it', async () => {
    const server = createServer({ logger: { error() {}, warn() {}, info() {} } }, (_q, s) => s.end());
    const addr = await server.listen(0, '127.0.0.1');
    assert.deepEqual(server.address(), addr);
    assert.equal(addr.family, 'IPv4');
    await server.close();
    assert.equal(server.address(), null);
    const again = createServer({ logger: { error() {}, warn() {}, info() {} } });
    await again.listen(addr.port, '127.0.0.1');
    await again.close();
  });

  it('rejects listen() with a one-line error for a bad port', async () => {
    const server = createServer();
    await assert.rejects(server.listen(70000), /port must be an integer from 0 to 65535/);
  });

  it('close() lets an in-flight request finish (GOAWAY, then close)', async () => {
    let release: () => void = () => {};
    let arrived: () => void = () => {};
    const gotRequest = new Promise<void>((r) => (arrived = r));
    const { server, port } = await startServer((_req, res) => {
      arrived();
      release = () => res.text(200, 'late\n');
    });
    const pending = request(port, { path: '/slow' }, 10);
    await gotRequest;
    const closed = server.close();
    setTimeout(() => release(), 200);
    const res = await pending;
    await closed;
    assert.equal(res.status, 200);
    assert.equal(res.body_text, 'late\n');
  });
});

describe('UDP I/O', function () {
  it('sends a large response as GSO runs of several datagrams per send, intact', async () => {
    const body = Buffer.alloc(512 * 1024);
    for (let i = 0; i < body.length; i++) body[i] = (i * 31) & 0xff;
    const { server, port } = await startServer((_req, res) => res.end(body));
    try {
      const res = await request(port, { path: '/big' }, 15);
      assert.equal(res.status, 200);
      assert.ok(Buffer.from(res.body_b64, 'base64').equals(body), 'body arrives intact');
      const c = server.counters();
      assert.ok(c.udpDatagramsSent > 350, `datagrams sent: ${c.udpDatagramsSent}`);
      // Linux has had UDP GSO since 4.18; the loopback device supports it.
      assert.ok(c.udpGsoSends > 0, `GSO sends: ${c.udpGsoSends}`);
      assert.ok(c.udpGsoSends < c.udpDatagramsSent / 2, 'runs carry several datagrams each');
    } finally {
      await server.close();
    }
  });

  it('counts its UDP receive and send calls: a receive call takes one datagram or more', async () => {
    const { server, port } = await startServer((_req, res) => res.text(200, 'ok\n'));
    try {
      const requests = Array.from({ length: 20 }, (_, i) => ({ path: `/r${i}` }));
      const result = await runClient(port, { timeout: 10, requests });
      assert.deepEqual(
        result.responses.map((r) => r.status),
        requests.map(() => 200),
      );
      await new Promise((r) => setTimeout(r, 200)); // the client's CONNECTION_CLOSE, read
      const c = server.counters();
      assert.ok(c.udpRecvCalls > 0, `receive calls: ${c.udpRecvCalls}`);
      assert.ok(c.udpSendCalls > 0, `send calls: ${c.udpSendCalls}`);
      // Reads happen only after a readable event, take up to 32 datagrams a
      // call, and a short batch ends the run. A call can find nothing only
      // when the event's datagram was already taken by the call before it,
      // so there are at most two calls per datagram; turns woken by
      // JavaScript alone (one per event batch) make none.
      assert.ok(c.udpRecvCalls <= 2 * c.udpDatagramsReceived, `${c.udpRecvCalls} receive calls for ${c.udpDatagramsReceived} datagrams`);
      assert.ok(c.udpSendCalls <= c.udpDatagramsSent, `${c.udpSendCalls} send calls for ${c.udpDatagramsSent} datagrams`);
    } finally {
      await server.close();
    }
  });
});

describe('native panic isolation', function () {
  it('a Rust panic is caught and logged, closes only its own connection, and the server keeps serving', async () => {
    const { server, port, logger } = await startServer(
      (_req, res) => res.text(200, 'ok\n'),
      withDevHooks({}, { panicOnPath: '/panic' }),
    );
    try {
      const [victim, bystander] = await Promise.all([
        runClient(port, { timeout: 5, requests: [{ path: '/panic' }] }),
        runClient(port, { timeout: 5, sequential: true, requests: [{ path: '/a' }, { path: '/b' }] }),
      ]);
      assert.equal(victim.responses[0].status, null);
      assert.equal(victim.connection_terminated?.error_code, 0x102); // H3_INTERNAL_ERROR
      assert.deepEqual(bystander.responses.map((r) => r.status), [200, 200]);
      assert.ok(logger.lines.some((l) => /internal error during HTTP\/3 processing on connection [0-9a-f]+; closing that connection \(panic at \S+: fault injection/.test(l)));
      const after = await request(port, { path: '/c' });
      assert.equal(after.status, 200);
    } finally {
      await server.close();
    }
  });
});

describe('connection close diagnostics', function () {
  it('an idle timeout is reported as such and never logged as a peer close', async () => {
    const { server, port, logger } = await startServer((_q, res) => res.text(200, 'ok\n'), { idleTimeoutMs: 300 });
    try {
      const closed = new Promise<ConnectionCloseInfo>((resolve) => server.once('connectionClose', resolve));
      const res = await runClient(port, { requests: [{ path: '/' }], close: null });
      assert.equal(res.responses[0].status, 200);
      const info = await closed;
      assert.equal(info.initiator, 'idle-timeout');
      assert.ok(!logger.lines.some((l) => /closed by peer/.test(l)));
    } finally {
      await server.close();
    }
  });

  it('a close by the peer is reported with its code and reason; a server-side close is not a peer close', async () => {
    const { server, port, logger } = await startServer((_q, res) => res.text(200, 'ok\n'));
    const infos: ConnectionCloseInfo[] = [];
    server.on('connectionClose', (i: ConnectionCloseInfo) => infos.push(i));
    await runClient(port, { requests: [{ path: '/' }], close: { error_code: 0x101, reason: 'test over' } });
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(infos.length, 1);
    assert.equal(infos[0].initiator, 'peer');
    assert.equal(infos[0].errorCode, 0x101);
    assert.equal(infos[0].reason, 'test over');
    // Now a connection the server itself closes on shutdown.
    const connected = new Promise((r) => server.once('connection', r));
    const lingering = runClient(port, { timeout: 3, requests: [{ path: '/' }], close: null });
    await connected;
    await new Promise((r) => setTimeout(r, 100));
    await server.close();
    await lingering;
    assert.equal(infos.length, 2);
    assert.equal(infos[1].initiator, 'local');
    assert.equal(logger.lines.filter((l) => /closed by peer/.test(l)).length, 1);
  });
});
