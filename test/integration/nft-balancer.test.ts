// Many machines behind the kernel's own balancer: deploy/quic-lb-nft.sh's
// nftables ruleset, loaded in a namespace that does nothing else, routes
// each datagram to the machine named by the QUIC-LB server ID in its
// connection ID. Two machines (namespaces, each a server of two workers,
// the VIP on lo, answering straight to the client), aioquic and quic-go
// clients that move to a new port and to a new address between requests.
// Then the contrast: the same clients behind a 4-tuple hash (what IPVS
// does) lose the moved connections. Then a machine that restarts: its old
// clients get a stateless reset under the shared key and reconnect at once.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import type { H3Client, RunnerConnectionPlan, RunnerResult } from '../helpers/clients/adapter';
import { aioquicClient } from '../helpers/clients/aioquic';
import { quicGoClient } from '../helpers/clients/quic-go';
import { BalancerTopology, CLIENT_AWAY, CLIENT_HOME, makeBalancerTopology, nftAvailable, VIP } from '../helpers/balancer-namespaces';
import { namespacesAllowed } from '../helpers/netns';
import { ManagedProcess, startProcess } from '../helpers/process';

const ROOT = path.join(__dirname, '..', '..');
const GENERATOR = path.join(ROOT, 'deploy', 'quic-lb-nft.sh');
const FIXTURE = path.join(__dirname, '..', 'helpers', 'fixtures', 'quic-lb-server.ts');
const PORT = 4433;
const SERVER_IDS = ['a1b2', 'c3d4'];
const RESET_KEY = 'ab'.repeat(32);

/** What each machine and worker answers ("<label> worker <k>\n"), by the answer's SHA-256. */
const WHO = new Map(
  [0, 1].flatMap((m) => [0, 1].map((w) => [createHash('sha256').update(`machine-${m} worker ${w}\n`).digest('hex'), `machine-${m} worker ${w}`] as const)),
);

/** The connections of one plan result: which machine and worker served each, and whether it kept going after its move. */
function outcome(result: RunnerResult) {
  return result.connections.map((conn, i) => {
    const responses = result.responses.filter((r) => r.connection === i);
    const served = [...new Set(responses.map((r) => WHO.get(r.sha256) ?? `status ${r.status} ${r.error ?? ''}`))];
    const ok = responses.every((r) => r.status === 200 && r.error === null && WHO.has(r.sha256));
    return { i, served, kept: ok && served.length === 1 && conn.migrated === true, conn, responses };
  });
}

/** The ruleset for this topology, from the shipped generator. */
function idRuleset(t: BalancerTopology): string {
  const servers = t.machines.flatMap((m, i) => ['--server', `${SERVER_IDS[i]}=${m.address}@${m.balancerDevice}`]);
  return execFileSync('bash', [GENERATOR, '--vip', VIP, '--port', String(PORT), '--ingress', t.ingress, '--config-id', '1', ...servers], { encoding: 'utf8' });
}

/** The contrast: a hash of the client's address and port, as IPVS (and any 4-tuple balancer) routes. */
function tupleRuleset(t: BalancerTopology): string {
  const chains = t.machines.map((m, i) => `chain m${i} {\n counter\n fwd ip to ${m.address} device "${m.balancerDevice}"\n }`).join('\n');
  const map = t.machines.map((_, i) => `${i} : goto m${i}`).join(', ');
  return `table netdev quic_lb
delete table netdev quic_lb
table netdev quic_lb {
 chain ingress {
  type filter hook ingress device "${t.ingress}" priority filter; policy accept;
  ip daddr ${VIP} udp dport ${PORT} jhash ip saddr . udp sport mod ${t.machines.length} vmap { ${map} }
 }
 ${chains}
}
`;
}

describe('QUIC-LB through nftables (deploy/quic-lb-nft.sh): two machines of two workers each behind a balancer namespace', function () {
  this.timeout(120_000);
  let topo: BalancerTopology | undefined;
  const procs: ManagedProcess[] = [];
  const aioquic = aioquicClient();
  const quicGo = quicGoClient();

  async function startMachine(i: number): Promise<void> {
    const m = topo!.machines[i];
    // The wildcard: each answer leaves from the address the datagram was sent to, the VIP.
    const p = startProcess('ip', ['netns', 'exec', m.ns, process.execPath, '--import', 'tsx', FIXTURE, '0.0.0.0', String(PORT), SERVER_IDS[i], `machine-${i}`, RESET_KEY], {
      label: `machine-${i}`,
    });
    procs[i] = p;
    await p.waitForJson((line) => 'listening' in line, 30_000);
  }

  before(async function () {
    if (!namespacesAllowed()) {
      console.log('      (skipped: network namespaces need root with CAP_NET_ADMIN; the QUIC-LB test on loopback still runs)');
      this.skip();
    }
    assert.ok(nftAvailable(), 'nft not found: scripts/setup-system.sh installs nftables');
    this.timeout(60_000);
    topo = makeBalancerTopology(2);
    await Promise.all([0, 1].map(startMachine));
    topo.loadRuleset(idRuleset(topo));
  });

  after(async () => {
    await Promise.all(procs.map((p) => p.stop()));
    topo?.remove();
  });

  const moves: { what: string; plan: (i: number) => RunnerConnectionPlan }[] = [
    { what: 'a new port', plan: (i) => ({ paths: [`/a${i}`, `/b${i}`, `/c${i}`], sequential: true, migrate_after: 1 }) },
    { what: 'a new address', plan: (i) => ({ paths: [`/a${i}`, `/b${i}`, `/c${i}`], sequential: true, migrate_after: 1, bind: CLIENT_HOME, migrate_bind: CLIENT_AWAY }) },
  ];
  const run = (client: H3Client, plan: (i: number) => RunnerConnectionPlan, count: number, timeout = 30, parallel = 8) =>
    client.runPlan!({ host: VIP, port: PORT, sni: 'localhost', timeout, parallel, connections: Array.from({ length: count }, (_, i) => plan(i)) });

  for (const client of [aioquic, quicGo]) {
    for (const move of moves) {
      it(`${client.name}: 16 clients that move to ${move.what} between requests, each served by the machine and worker that own it, answered from the VIP`, async () => {
        const before = topo!.chainCounters('quic_lb');
        const result = await run(client, move.plan, 16);
        const rows = outcome(result);
        const lost = rows.filter((r) => !r.kept);
        assert.deepEqual(
          lost.map((r) => ({ i: r.i, served: r.served, migrated: r.conn.migrated, error: r.conn.error })),
          [],
          'connections that lost their machine or did not move',
        );
        const machines = new Set(rows.map((r) => r.served[0].split(' ')[0]));
        assert.deepEqual([...machines].sort(), ['machine-0', 'machine-1'], 'both machines served');
        for (const r of rows) assert.deepEqual(r.conn.peer_addresses, [`${VIP}:${PORT}`], `connection ${r.i}: every datagram from the VIP`);
        const after = topo!.chainCounters('quic_lb');
        const delta = (chain: string) => (after[chain] ?? 0) - (before[chain] ?? 0);
        // The first flights went by hash; everything after, moves included, by the server ID.
        assert.ok(delta('id_0') > 0 && delta('id_1') > 0, `routed by server ID: ${delta('id_0')}, ${delta('id_1')}`);
        assert.ok(delta('hash_0') + delta('hash_1') > 0, 'first flights routed by hash');
        assert.equal(delta('quic'), 0, 'nothing dropped as too short');
        // Routed at ingress, before conntrack: the balancer holds no state per flow.
        assert.deepEqual(topo!.conntrackEntries(PORT), [], 'conntrack entries on the balancer');
      });
    }
  }

  it('the contrast: behind a 4-tuple hash (as IPVS routes) the same moves lose connections; the ID ruleset keeps all', async () => {
    const table: Record<string, { kept: number; lost: number }> = {};
    try {
      topo!.loadRuleset(tupleRuleset(topo!));
      for (const client of [aioquic, quicGo]) {
        for (const move of moves) {
          // A connection sent to the other machine never hears from its
          // own again: the plan ends it at its deadline.
          const rows = outcome(await run(client, move.plan, 16, 8));
          const kept = rows.filter((r) => r.kept).length;
          table[`4-tuple hash, ${client.name}, ${move.what}`] = { kept, lost: rows.length - kept };
        }
      }
    } finally {
      topo!.loadRuleset(idRuleset(topo!));
    }
    for (const client of [aioquic, quicGo]) {
      for (const move of moves) {
        const kept = outcome(await run(client, move.plan, 16)).filter((r) => r.kept).length;
        table[`QUIC-LB ruleset, ${client.name}, ${move.what}`] = { kept, lost: 16 - kept };
      }
    }
    console.log(Object.entries(table).map(([k, v]) => `      | ${k} | ${v.kept} | ${v.lost} |`).join('\n'));
    // Each moved client lands on the other machine with probability 1/2:
    // none lost of the 64 moves happens once in 2^64 runs. The ID ruleset
    // must keep every one.
    const rows = Object.entries(table);
    const tupleLost = rows.filter(([k]) => k.startsWith('4-tuple')).reduce((n, [, v]) => n + v.lost, 0);
    assert.ok(tupleLost > 0, `moved connections lost behind the 4-tuple hash: ${tupleLost} of 64`);
    for (const [k, v] of rows) if (!k.startsWith('4-tuple')) assert.equal(v.lost, 0, `${k}: ${v.lost} lost`);
  });

  it('a machine that restarts answers its old connections with a stateless reset under the shared key: quic-go clients see it at once and reconnect', async () => {
    const pauseMs = 6000;
    const started = Date.now();
    // All 12 at once, so that every first request is answered before the restart.
    const planned = run(quicGo, (i) => ({ paths: [`/a${i}`, `/b${i}`], sequential: true, pause_before: 1, pause_ms: pauseMs }), 12, 30, 12);
    // While every connection waits between its requests: machine 0 dies
    // (no CONNECTION_CLOSE leaves it) and comes back, a new process with
    // the same server ID and stateless reset key.
    await new Promise((r) => setTimeout(r, 1500));
    await procs[0].stop({ signal: 'SIGKILL' });
    await startMachine(0);
    const restartedAfter = Date.now() - started;
    const result = await planned;
    const elapsed = Date.now() - started;
    assert.ok(restartedAfter < 1500 + pauseMs, `machine 0 was back before the second requests (after ${restartedAfter} ms)`);
    const rows = result.connections.map((conn, i) => {
      const [first, second] = result.responses.filter((r) => r.connection === i);
      return { i, machine: (WHO.get(first.sha256) ?? '?').split(' ')[0], first, second, conn };
    });
    const onRestarted = rows.filter((r) => r.machine === 'machine-0');
    const onOther = rows.filter((r) => r.machine === 'machine-1');
    assert.equal(onRestarted.length + onOther.length, 12, 'every first request answered');
    assert.ok(onRestarted.length > 0 && onOther.length > 0, `connections on each machine: ${onRestarted.length}, ${onOther.length}`);
    for (const r of onOther) assert.equal(WHO.get(r.second.sha256)?.split(' ')[0], 'machine-1', `connection ${r.i} on machine 1 carries on`);
    for (const r of onRestarted) {
      assert.notEqual(r.second.status, 200, `connection ${r.i}: the restarted machine cannot have served it: ${JSON.stringify(r)}`);
      assert.match(`${r.second.error} ${r.conn.error}`, /stateless reset/i, `connection ${r.i} ended by a stateless reset`);
    }
    // The idle timeout is 30 s: a client left to find out by itself would
    // take that long after the pause.
    assert.ok(elapsed < 1500 + pauseMs + 8000, `the plan ended ${elapsed} ms after it began`);
    const again = outcome(await run(quicGo, (i) => ({ paths: [`/r${i}`] }), 12));
    assert.deepEqual(again.filter((r) => !r.responses.every((x) => x.status === 200)).map((r) => r.i), [], 'every reconnection served');
  });
});
