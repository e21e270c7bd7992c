// Many machines: connection IDs in the QUIC-LB plaintext format
// let a balancer route every packet of a connection to the server that owns
// it. Two servers on this host behind a QUIC-LB-decoding relay
// (test/helpers/quic-lb-balancer.ts), which needs no root; real clients
// (aioquic) connect through it. The shipped balancer, deploy/'s nftables
// ruleset, routes between namespaced machines in nft-balancer.test.ts.
import assert from 'node:assert/strict';
import { createServer } from '../../src';
import { request, runClients } from '../helpers/clients/h3client';
import { quicLbBalancer } from '../helpers/quic-lb-balancer';
import { startOnWorkers, startServer } from '../helpers/server';

/** `read()` once it reaches `want`, or its value after 3 s. */
async function settled(read: () => number, want: number): Promise<number> {
  const until = Date.now() + 3000;
  while (read() < want && Date.now() < until) await new Promise((r) => setTimeout(r, 25));
  return read();
}

describe('QUIC-LB connection IDs', function () {
  this.timeout(60_000);

  it('behind a QUIC-LB balancer, every connection is served by one server, found by the ID it issued', async () => {
    const ids = [Buffer.from('a1b2', 'hex'), Buffer.from('c3d4', 'hex')];
    const a = await startServer((_req, res) => res.text(200, 'from a\n'), { quicLb: { configId: 1, serverId: ids[0] } });
    const b = await startServer((_req, res) => res.text(200, 'from b\n'), { quicLb: { configId: 1, serverId: 'c3d4' } });
    const lb = await quicLbBalancer(1, [
      { port: a.port, serverId: ids[0] },
      { port: b.port, serverId: ids[1] },
    ]);
    try {
      // A client's first Initials go where a hash of its random ID says, so
      // 8 connections all land on one server 1 time in 128: connect until
      // both have been picked (at least 8, at most 40 connections).
      const answers: string[] = [];
      const bothServed = () => answers.includes('from a\n') && answers.includes('from b\n');
      for (let i = 0; i < 40 && (i < 8 || !bothServed()); i++) {
        // A larger answer needs many round trips after the handshake, all
        // routed by the server's own connection IDs.
        const res = await request(lb.port, { path: `/${i}` }, 10);
        assert.equal(res.status, 200, `connection ${i}`);
        answers.push(res.body_text);
      }
      // Every datagram after a client's first flight carried one of the
      // servers' IDs and went where that ID said; a mis-routed one would
      // have been answered with a stateless reset and the request failed.
      assert.ok(lb.byServerId[0] > 0 && lb.byServerId[1] > 0, `routed by server id: ${lb.byServerId}`);
      assert.ok(bothServed(), `both servers served: ${answers.join('')}`);
      assert.equal(a.server.counters().statelessResetsSent + b.server.counters().statelessResetsSent, 0);
      assert.equal(a.server.counters().connectionsAccepted + b.server.counters().connectionsAccepted, answers.length);
    } finally {
      lb.close();
      await a.server.close();
      await b.server.close();
    }
  });

  it('two servers of two workers each on this host behind the balancer: clients that move to a new port keep their connections', async () => {
    const lbIds = ['a1b2', 'c3d4'];
    const a = await startOnWorkers({ workers: 2, app: 'who', extra: { quicLb: { configId: 1, serverId: lbIds[0] } } });
    const b = await startOnWorkers({ workers: 2, app: 'who', extra: { quicLb: { configId: 1, serverId: lbIds[1] } } });
    const lb = await quicLbBalancer(1, [
      { port: a.port, serverId: Buffer.from(lbIds[0], 'hex') },
      { port: b.port, serverId: Buffer.from(lbIds[1], 'hex') },
    ]);
    try {
      // Each client moves between its requests: the balancer sees a new
      // client port (and gives it a new socket towards the servers), and
      // routes by the server ID; the server's kernel steers by the worker
      // index after it.
      const plan = { requests: [{ path: '/' }, { path: '/' }, { path: '/' }], sequential: true, rebind_before: 1, timeout: 10 };
      const results = await runClients(lb.port, plan, 16);
      for (const [i, r] of results.entries()) {
        assert.deepEqual(r.responses.map((x) => x.status), [200, 200, 200], `connection ${i}: ${r.responses.map((x) => x.error)}`);
        assert.equal(new Set(r.responses.map((x) => x.body_text)).size, 1, 'one worker served every request');
      }
      const accepted = [a, b].map((s) => s.server.counters().connectionsAccepted);
      assert.equal(accepted[0] + accepted[1], 16);
      assert.ok(accepted.every((n) => n > 0), `both servers served: ${accepted}`);
      // Counted once quiche has validated the new path, which may finish
      // after the answer reached the client.
      const moves = await settled(() => [a, b].reduce((n, s) => n + s.server.counters().pathMigrations, 0), 16);
      assert.ok(moves >= 16, `every move followed: ${moves}`);
      assert.equal(a.server.counters().statelessResetsSent + b.server.counters().statelessResetsSent, 0);
      for (const s of [a, b]) {
        const w = s.server.workerStats()!;
        if (w.steering === 'ebpf') assert.equal(w.workers[0].packetsForwarded + w.workers[1].packetsForwarded, 0);
      }
    } finally {
      lb.close();
      await a.server.close();
      await b.server.close();
    }
  });

  it('a configuration outside the draft is refused with the reason', async () => {
    await assert.rejects(createServer({ quicLb: { configId: 7, serverId: 'aa' } }).listen(0), /config id must be 0 to 6/);
    await assert.rejects(createServer({ quicLb: { configId: 0, serverId: Buffer.alloc(16) } }).listen(0), /server id must be 1 to 15 bytes, got 16/);
    await assert.rejects(createServer({ quicLb: { configId: 0, serverId: 'xyz' } }).listen(0), /serverId must be a Buffer or an even number of hex digits/);
  });
});
