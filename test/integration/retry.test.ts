// Address validation: Retry (RFC 9000 section 8.1.2) in its three
// modes, with real clients (aioquic, quic-go) following it, and a flood of
// real Initials from many source ports that never complete their handshake
// (test/helpers/clients/half_handshake.py) against `retry: 'auto'`.
import assert from 'node:assert/strict';
import path from 'node:path';
import { createServer } from '../../src';
import { request } from '../helpers/clients/h3client';
import { quicGoClient } from '../helpers/clients/quic-go';
import { PYTHON } from '../helpers/paths';
import { runProcess } from '../helpers/process';
import { runCli, startServer } from '../helpers/server';

const HALF_HANDSHAKE = path.join(__dirname, '..', 'helpers', 'clients', 'half_handshake.py');

describe('address validation with Retry', function () {
  this.timeout(60_000);

  it("retry 'on': aioquic and quic-go follow the Retry and are served; every connection was validated first", async () => {
    const { server, port } = await startServer((_req, res) => res.text(200, 'validated\n'), { retry: 'on' });
    try {
      const res = await request(port, { path: '/' }, 10);
      assert.equal(res.status, 200);
      assert.equal(res.body_text, 'validated\n');
      const [go] = await quicGoClient().fetch(port, [{ method: 'GET', path: '/', headers: [] }], { timeoutMs: 5000 });
      assert.equal(go.status, 200, go.error);
      const c = server.counters();
      assert.ok(c.retriesSent >= 2, `a Retry for each client: ${c.retriesSent}`);
      assert.equal(c.connectionsAccepted, 2, 'connections are made only after the Retry');
    } finally {
      await server.close();
    }
  });

  it("retry 'off' and 'auto' below its threshold: no Retry, one round trip saved", async () => {
    for (const retry of ['off', 'auto'] as const) {
      const { server, port } = await startServer((_req, res) => res.text(200, 'ok\n'), { retry });
      try {
        assert.equal((await request(port, { path: '/' })).status, 200);
        assert.equal(server.counters().retriesSent, 0, retry);
      } finally {
        await server.close();
      }
    }
  });

  it("a flood of Initials from 600 source ports: 'auto' holds the table at its threshold and a real client is still served within a second", async () => {
    const { server, port } = await startServer((_req, res) => res.text(200, 'still here\n'), { retry: 'auto', retryThreshold: 50, handshakeTimeoutMs: 10_000 });
    try {
      const flood = runProcess(PYTHON, [HALF_HANDSHAKE, '--port', String(port), '--count', '600', '--hold', '1']);
      let peak = 0;
      const watch = setInterval(() => (peak = Math.max(peak, server.counters().connectionsOpen)), 10);
      await new Promise((r) => setTimeout(r, 300));
      const started = Date.now();
      const res = await request(port, { path: '/' }, 5);
      const took = Date.now() - started;
      const done = await flood;
      clearInterval(watch);
      assert.equal(done.code, 0, done.stderr);
      const sent = JSON.parse(done.stdout).initials_sent;
      assert.equal(res.status, 200);
      assert.ok(took < 1000, `the real client took ${took} ms`);
      const c = server.counters();
      assert.ok(peak <= 51, `connections open at most ${peak} (threshold 50, plus the real client)`);
      assert.ok(c.retriesSent >= sent - 60, `${c.retriesSent} Retries for ${sent} Initials`);
    } finally {
      await server.close();
    }
  });

  it('datagrams with an Initial under 1,200 bytes are dropped unanswered', async () => {
    const dgram = await import('node:dgram');
    const { server, port } = await startServer(undefined, {});
    const sock = dgram.createSocket('udp4');
    try {
      // A long header, version 1, type Initial; the rest does not matter.
      const small = Buffer.alloc(1000, 0);
      small[0] = 0xc0;
      small.writeUInt32BE(1, 1);
      small[5] = 8;
      let answered = false;
      sock.on('message', () => (answered = true));
      await new Promise<void>((r) => sock.send(small, port, '127.0.0.1', () => r()));
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(server.counters().initialsTooSmall, 1);
      assert.equal(answered, false);
    } finally {
      sock.close();
      await server.close();
    }
  });

  it('bad options and flags are refused with the reason', async () => {
    await assert.rejects(createServer({ retry: 'sometimes' as never }).listen(0), /retry must be one of off, on, auto, got "sometimes"/);
    await assert.rejects(createServer({ retryTokenKey: 'ab' }).listen(0), /retryTokenKey must be 32 bytes/);
    const r = await runCli(['--retry', 'maybe', '--port', '0']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /option '--retry <mode>' argument 'maybe' is invalid. Allowed choices are off, on, auto/);
  });
});
