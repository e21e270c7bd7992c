// The default bind is `::` with IPV6_V6ONLY off: one socket serves IPv4 and
// IPv6 clients (Chromium resolves `localhost` to ::1 first), and IPv4 peers,
// which arrive as IPv4-mapped IPv6 addresses, are shown as plain IPv4.
import assert from 'node:assert/strict';
import { createServer, ConnectionCloseInfo, ConnectionInfo } from '../../src';
import { runClient } from '../helpers/clients/h3client';
import { MemoryLogger, startCli } from '../helpers/server';

describe('dual-stack default bind (IPv4 and IPv6 on one socket)', function () {
  this.timeout(30000);

  it('listen() without a host binds [::] and serves 127.0.0.1 and ::1 clients; peers show without the ::ffff: prefix', async () => {
    const server = createServer({ logger: new MemoryLogger() }, (req, res) => res.text(200, `hello ${req.path}\n`));
    const opened: ConnectionInfo[] = [];
    const closed: ConnectionCloseInfo[] = [];
    server.on('connection', (c: ConnectionInfo) => opened.push(c));
    server.on('connectionClose', (c: ConnectionCloseInfo) => closed.push(c));
    const addr = await server.listen(0);
    try {
      assert.deepEqual([addr.address, addr.family], ['::', 'IPv6']);
      for (const host of ['127.0.0.1', '::1']) {
        const res = await runClient(addr.port, { requests: [{ path: `/via-${host}` }], close: { error_code: 0x100, reason: 'done' } }, host);
        assert.equal(res.responses[0].status, 200, host);
        assert.equal(res.responses[0].body_text, `hello /via-${host}\n`);
      }
      for (let i = 0; i < 50 && closed.length < 2; i++) await new Promise((r) => setTimeout(r, 20));
      assert.deepEqual(opened.map((c) => c.peer.replace(/:\d+$/, '')), ['127.0.0.1', '[::1]']);
      assert.deepEqual(closed.map((c) => c.peer.replace(/:\d+$/, '')), ['127.0.0.1', '[::1]']);
    } finally {
      await server.close();
    }
  });

  it('the CLI on [::] (its default) says it takes both families, and logs peer closes from either as the client sees its address', async () => {
    const cli = await startCli(['--profile', 'a', '--host', '::']);
    try {
      assert.match(cli.stderr(), /listening on udp \[::\]:\d+ \(HTTP\/3, ALPN h3; IPv4 and IPv6\)/);
      await runClient(cli.port, { requests: [{ path: '/login' }], close: { error_code: 0x10c, reason: 'over v4' } }, '127.0.0.1');
      await runClient(cli.port, { requests: [{ path: '/login' }], close: { error_code: 0x10c, reason: 'over v6' } }, '::1');
      const v4 = await cli.waitForStderr(/connection closed by peer \(CONNECTION_CLOSE\).*over v4.*\n/);
      const v6 = await cli.waitForStderr(/connection closed by peer \(CONNECTION_CLOSE\).*over v6.*\n/);
      assert.match(v4, /cid=[0-9a-f]{40} peer=127\.0\.0\.1:\d+ error_code=0x10c \(application\) reason="over v4"/);
      assert.match(v6, /cid=[0-9a-f]{40} peer=\[::1\]:\d+ error_code=0x10c \(application\) reason="over v6"/);
    } finally {
      assert.equal(await cli.stop(), 0);
    }
  });
});
