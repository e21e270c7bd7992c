// Limits a client cannot push past (docs/reliability.md): each option set low
// on a real server, and a real client (aioquic) trying to go beyond it.
import assert from 'node:assert/strict';
import path from 'node:path';
import type { ConnectionCloseInfo, H3Response as Res } from '../../src';
import { b64, request, runClient } from '../helpers/clients/h3client';
import { impairedLink } from '../helpers/impaired-link';
import { PYTHON } from '../helpers/paths';
import { runProcess } from '../helpers/process';
import { runCli, startCli, startServer } from '../helpers/server';

const HALF_HANDSHAKE = path.join(__dirname, '..', 'helpers', 'clients', 'half_handshake.py');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `count` clients each send a real Initial and never finish the handshake. */
async function abandonHandshakes(port: number, count: number, holdSeconds: number): Promise<{ initials_sent: number; answered: number }> {
  const args = [HALF_HANDSHAKE, '--port', String(port), '--count', String(count), '--hold', String(holdSeconds)];
  const r = await runProcess(PYTHON, args);
  if (r.code !== 0) throw new Error(`half_handshake.py exited ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

async function until(what: string, check: () => boolean, limitMs: number): Promise<number> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > limitMs) throw new Error(`timed out after ${limitMs} ms waiting for ${what}`);
    await sleep(20);
  }
  return Date.now() - started;
}

describe('limits a client cannot push past', function () {
  this.timeout(30000);

  it('maxConnections: connections beyond it are not accepted until a slot frees', async () => {
    const { server, port } = await startServer((_req, res) => res.text(200, 'ok\n'), {
      maxConnections: 4,
      // Long enough that the slots are still taken when the real client
      // below tries, even on a slow machine.
      handshakeTimeoutMs: 4000,
    });
    try {
      const half = await abandonHandshakes(port, 6, 1.0);
      assert.equal(half.initials_sent, 6);
      // Only four of the six got any answer: the other Initials were dropped.
      assert.equal(half.answered, 4);
      assert.equal(server.counters().connectionsAccepted, 4);
      assert.equal(server.counters().connectionsOpen, 4);
      // While full, a real client cannot connect either.
      const refused = await runClient(port, { timeout: 0.6, requests: [{ path: '/' }] });
      assert.equal(refused.connected, false);
      assert.equal(server.counters().connectionsAccepted, 4);
      // The handshake timeout frees the slots; then a client is served.
      await until('slots to free', () => server.counters().connectionsOpen === 0, 8000);
      const res = await request(port, { path: '/' });
      assert.equal(res.status, 200);
    } finally {
      await server.close();
    }
  });

  it('handshakeTimeoutMs: a handshake that never completes is dropped after it, and only then', async () => {
    const { server, port } = await startServer((_req, res) => res.text(200, 'ok\n'), { handshakeTimeoutMs: 500 });
    const opened = new Map<number, number>();
    const closes: { info: ConnectionCloseInfo; afterMs: number }[] = [];
    server.on('connection', (c) => opened.set(c.id, Date.now()));
    server.on('connectionClose', (info) => closes.push({ info, afterMs: Date.now() - (opened.get(info.id) ?? 0) }));
    try {
      await abandonHandshakes(port, 3, 0.2);
      assert.equal(server.counters().connectionsOpen, 3);
      await until('the half-open connections to be dropped', () => server.counters().connectionsOpen === 0, 3000);
      assert.equal(server.counters().handshakeTimeouts, 3);
      // The close events follow the counters: a batch of connection events
      // alone may wait up to 10 ms for one that wakes JavaScript anyway.
      await until('the close events', () => closes.length === 3, 1000);
      for (const { info, afterMs } of closes) {
        assert.equal(info.initiator, 'local');
        assert.equal(info.reason, 'handshake timeout');
        assert.ok(afterMs >= 450 && afterMs < 2000, `dropped after ${afterMs} ms`);
      }
      // A connection that completed its handshake is not touched by it.
      const slow = await startServer(async (_req, res) => {
        await sleep(800);
        res.text(200, 'slow\n');
      }, { handshakeTimeoutMs: 300 });
      try {
        const res = await request(slow.port, { path: '/' });
        assert.equal(res.status, 200);
        assert.equal(slow.server.counters().handshakeTimeouts, 0);
      } finally {
        await slow.server.close();
      }
    } finally {
      await server.close();
    }
  });

  it('a client whose handshake the server gave up on hears the CONNECTION_CLOSE again when it tries once more, the first one lost (aioquic)', async () => {
    const { server, port } = await startServer((_req, res) => res.text(200, 'ok\n'), { handshakeTimeoutMs: 300 });
    // The server's flight reaches the client; the client's answer does not
    // reach the server for 700 ms, so the server gives up at 300 ms, and
    // its CONNECTION_CLOSE (with whatever else it sends from 150 ms on) is
    // lost. The server drops the connection at once; what the client sends
    // after 700 ms arrives for a connection that is gone.
    const link = await impairedLink(port, { silenceClientAfterFirstMs: 700, silenceServerBetweenMs: [150, 700] });
    try {
      const res = await runClient(link.port, { timeout: 5, requests: [{ path: '/' }] });
      assert.equal(server.counters().handshakeTimeouts, 1);
      // Answered with the close it missed (RFC 9000 section 10.2.1), not
      // with a stateless reset or silence until its own timeout.
      assert.deepEqual(res.connection_terminated, { error_code: 0, reason: 'handshake timeout' }, JSON.stringify(res));
      assert.ok(server.counters().closingPacketsResent >= 1);
      assert.equal(server.counters().connectionsAccepted, 1, 'and nothing it sent was taken for a new connection');
      assert.ok(link.impaired.silenced > 0);
    } finally {
      link.close();
      await server.close();
    }
  });

  it('maxStreamsPerConnection: a client never has more requests open at once than the limit', async () => {
    let inFlight = 0;
    let most = 0;
    const { server, port } = await startServer(
      async (_req, res) => {
        inFlight += 1;
        most = Math.max(most, inFlight);
        await sleep(150);
        inFlight -= 1;
        res.text(200, 'ok\n');
      },
      { maxStreamsPerConnection: 4 },
    );
    try {
      const result = await runClient(port, { timeout: 10, requests: Array.from({ length: 12 }, (_, i) => ({ path: `/${i}` })) });
      assert.equal(result.connected, true);
      assert.deepEqual(result.responses.map((r) => r.status), Array(12).fill(200));
      assert.equal(most, 4, `most requests open at once: ${most}`);
      assert.equal(result.connection_terminated, null);
    } finally {
      await server.close();
    }
  });

  it('maxFieldSectionSize: a larger header section is answered 431, a smaller one served', async () => {
    const { server, port } = await startServer((_req, res) => res.text(200, 'ok\n'), { maxFieldSectionSize: 1024 });
    try {
      const big = await request(port, { path: '/', headers: [['x-big', 'a'.repeat(2000)]] });
      assert.equal(big.status, 431);
      const small = await request(port, { path: '/', headers: [['x-small', 'a'.repeat(500)]] });
      assert.equal(small.status, 200);
    } finally {
      await server.close();
    }
  });

  it('bodyWindow: a buffered body one byte over it is 413 and never reaches the handler', async () => {
    const seen: number[] = [];
    const { server, port } = await startServer((req, res) => {
      seen.push(req.body.length);
      res.text(200, `${req.body.length}\n`);
    }, { bodyWindow: 1000 });
    try {
      const over = await request(port, { method: 'POST', path: '/', body_b64: b64(Buffer.alloc(1001, 1)) });
      assert.equal(over.status, 413);
      const at = await request(port, { method: 'POST', path: '/', body_b64: b64(Buffer.alloc(1000, 1)) });
      assert.equal(at.status, 200);
      assert.equal(at.body_text, '1000\n');
      assert.deepEqual(seen, [1000]);
    } finally {
      await server.close();
    }
  });

  it('idleTimeoutMs: a client that goes silent is freed by the idle timeout', async () => {
    const { server, port } = await startServer((_req, res) => res.text(200, 'ok\n'), { idleTimeoutMs: 600 });
    const closes: ConnectionCloseInfo[] = [];
    server.on('connectionClose', (c) => closes.push(c));
    try {
      const result = await runClient(port, { requests: [{ path: '/' }], close: null });
      assert.equal(result.responses[0].status, 200);
      const vanishedAt = Date.now();
      await until('the idle timeout', () => closes.length === 1, 5000);
      const waited = Date.now() - vanishedAt;
      assert.equal(closes[0].initiator, 'idle-timeout');
      assert.ok(waited >= 300 && waited < 3000, `freed after ${waited} ms`);
      assert.equal(server.counters().connectionsOpen, 0);
    } finally {
      await server.close();
    }
  });

  it('requestTimeoutMs: a handler that never answers gets 503 for it, the stream is freed, a late end() is ignored', async () => {
    const stuck: Res[] = [];
    const timedOut: string[] = [];
    const { server, port } = await startServer(
      (req, res) => {
        if (req.path === '/never') stuck.push(res);
        else res.text(200, 'fine\n');
      },
      { requestTimeoutMs: 400 },
    );
    server.on('requestTimeout', (req) => timedOut.push(req.path));
    try {
      const result = await runClient(port, { timeout: 5, requests: [{ path: '/never' }, { path: '/never' }] });
      for (const r of result.responses) {
        assert.equal(r.status, 503);
        assert.equal(r.body_text, 'request timed out\n');
        assert.ok(r.elapsed_ms >= 350, `answered after ${r.elapsed_ms} ms`);
      }
      assert.deepEqual(timedOut, ['/never', '/never']);
      assert.equal(server.pendingRequests, 0);
      await until('the streams to be freed', () => server.counters().requestStreamsOpen === 0, 2000);
      // The handler answers late: nothing is sent, nothing throws, the server goes on.
      for (const res of stuck) res.text(200, 'too late\n');
      const next = await request(port, { path: '/other' });
      assert.equal(next.status, 200);
      assert.equal(next.body_text, 'fine\n');
    } finally {
      await server.close();
    }
  });

  it('requestTimeoutMs 0 turns the timeout off', async () => {
    const { server, port } = await startServer(async (_req, res) => {
      await sleep(600);
      res.text(200, 'patient\n');
    }, { requestTimeoutMs: 0 });
    try {
      const res = await request(port, { path: '/' });
      assert.equal(res.status, 200);
    } finally {
      await server.close();
    }
  });

  it('live counts: connections and request streams open now, back to 0 when done', async () => {
    const waiting: (() => void)[] = [];
    const { server, port } = await startServer((_req, res) => {
      waiting.push(() => res.text(200, 'ok\n'));
    });
    try {
      const client = runClient(port, { timeout: 10, requests: [{ path: '/1' }, { path: '/2' }, { path: '/3' }] });
      await until('three requests to arrive', () => waiting.length === 3, 5000);
      assert.equal(server.counters().connectionsOpen, 1);
      assert.equal(server.counters().requestStreamsOpen, 3);
      for (const answer of waiting) answer();
      const result = await client;
      assert.deepEqual(result.responses.map((r) => r.status), [200, 200, 200]);
      await until('counts to return to 0', () => {
        const c = server.counters();
        return c.connectionsOpen === 0 && c.requestStreamsOpen === 0;
      }, 3000);
    } finally {
      await server.close();
    }
  });
});

describe('limit flags of the CLI', function () {
  this.timeout(30000);

  it('--max-connections and --handshake-timeout-ms reach the server', async () => {
    const cli = await startCli(['--profile', 'a', '--max-connections', '2', '--handshake-timeout-ms', '400']);
    try {
      const half = await abandonHandshakes(cli.port, 3, 0.8);
      assert.equal(half.answered, 2, 'only two connections admitted');
      await sleep(300); // both dropped by the handshake timeout by now
      const res = await request(cli.port, { path: '/login' });
      assert.equal(res.status, 200);
    } finally {
      assert.equal(await cli.stop(), 0);
    }
  });

  for (const bad of ['abc', '-5', '1.5']) {
    it(`--idle-timeout-ms ${bad} exits 2 with a one-line error and the usage`, async () => {
      const { code, stderr } = await runCli(['--idle-timeout-ms', bad]);
      assert.equal(code, 2);
      assert.match(stderr, /error: option '--idle-timeout-ms <ms>' argument '.*' is invalid\. expected a non-negative integer\.\nusage: /);
    });
  }
});
