// A server bound to a wildcard address (`::` or `0.0.0.0`) on a host with
// several addresses answers every client from the address that client sent
// to: the core reads each datagram's destination (IP_PKTINFO,
// IPV6_RECVPKTINFO) and sends the path's packets from it. A client that
// matches replies to its 4-tuple (aioquic, quic-go, most NATs and
// firewalls) drops an answer from any other address.
//
// On loopback any user can check it: 127.0.0.2 is this machine too, and
// without the per-packet source the kernel answers from 127.0.0.1. In a
// network namespace (root) the server has two addresses on its link, a
// virtual address on `lo` (as a direct-server-return balancer hands
// packets over) and the same three in IPv6.
import assert from 'node:assert/strict';
import type { H3Client, RunnerConnectionPlan } from '../helpers/clients/adapter';
import { aioquicClient } from '../helpers/clients/aioquic';
import { quicGoClient } from '../helpers/clients/quic-go';
import { assertAllExact, hostPort, startAddressesServer } from '../helpers/addresses';
import { ip, makeNamespace, Namespace, namespacesAllowed } from '../helpers/netns';

const CLIENTS: H3Client[] = [aioquicClient(), quicGoClient()];

/** Four connections to `target`, each a small and a larger download; every datagram back must come from `target`. */
async function fetchAt(client: H3Client, target: string, port: number): Promise<void> {
  const connections: RunnerConnectionPlan[] = Array.from({ length: 4 }, (_, i) => ({ paths: [`/1024-s${i}`, `/150000-l${i}`] }));
  const what = `${client.name} to ${hostPort(target, port)}`;
  const result = await client.runPlan!({ host: target, port, sni: 'localhost', timeout: 20, parallel: 4, connections });
  assertAllExact(result, what);
  for (const [i, c] of result.connections.entries()) {
    assert.deepEqual(c.peer_addresses, [hostPort(target, port)], `${what}, connection ${i}: the datagrams it received came from`);
  }
}

describe('replies leave from the address the client reached', function () {
  this.timeout(120_000);

  describe('on loopback (127.0.0.2 is this machine too)', () => {
    for (const host of ['0.0.0.0', '::']) {
      it(`a server on ${host} answers a client of 127.0.0.2 from 127.0.0.2, and counts the packets it gave a source`, async () => {
        const server = await startAddressesServer({ host });
        try {
          for (const client of CLIENTS) await fetchAt(client, '127.0.0.2', server.port);
          const c = await server.counters('127.0.0.2');
          assert.ok(c.udpSentWithSource > 0, `udpSentWithSource ${c.udpSentWithSource}`);
          assert.equal(c.sendFailures, 0);
        } finally {
          await server.stop();
        }
      });
    }

    it('a server bound to one address sends without naming a source (the kernel uses the bound one)', async () => {
      const server = await startAddressesServer({ host: '127.0.0.2' });
      try {
        for (const client of CLIENTS) await fetchAt(client, '127.0.0.2', server.port);
        assert.equal((await server.counters('127.0.0.2')).udpSentWithSource, 0);
      } finally {
        await server.stop();
      }
    });

    it('two workers that forward packets to each other keep the address the packet came in on', async () => {
      // Forwarding (not the kernel's eBPF steering) is the path that must
      // carry the destination from the worker that read the packet to the
      // worker that owns the connection.
      const server = await startAddressesServer({ host: '0.0.0.0', workers: 2, steering: 'forwarding' });
      try {
        for (const client of CLIENTS) await fetchAt(client, '127.0.0.3', server.port);
        const c = await server.counters('127.0.0.3');
        assert.ok(c.udpSentWithSource > 0, `udpSentWithSource ${c.udpSentWithSource}`);
      } finally {
        await server.stop();
      }
    });
  });

  describe('in a network namespace: two addresses on the link and a virtual one on lo, IPv4 and IPv6', function () {
    let ns: Namespace | undefined;
    const n = 31;
    const v4 = [`10.213.${n}.2`, `10.213.${n}.3`, `10.213.${n}.100`];
    const v6 = [`fd00:213:${n}::2`, `fd00:213:${n}::3`, `fd00:213:${n}::100`];

    before(function () {
      if (!namespacesAllowed()) {
        console.log('      (skipped: network namespaces need root with CAP_NET_ADMIN; the loopback cases above still ran)');
        this.skip();
      }
      ns = makeNamespace(n);
      ns.ip('addr', 'add', `${v4[1]}/24`, 'dev', ns.innerLink);
      ns.ip('addr', 'add', `${v4[2]}/32`, 'dev', 'lo');
      ip('route', 'add', `${v4[2]}/32`, 'via', v4[0]);
      // nodad: usable at once, not after duplicate address detection.
      ip('-6', 'addr', 'add', `fd00:213:${n}::1/64`, 'dev', ns.hostLink, 'nodad');
      ns.ip('-6', 'addr', 'add', `${v6[0]}/64`, 'dev', ns.innerLink, 'nodad');
      ns.ip('-6', 'addr', 'add', `${v6[1]}/64`, 'dev', ns.innerLink, 'nodad');
      ns.ip('-6', 'addr', 'add', `${v6[2]}/128`, 'dev', 'lo');
      ip('-6', 'route', 'add', `${v6[2]}/128`, 'via', v6[0]);
    });

    after(() => {
      if (!ns) return;
      // The namespace takes its addresses and the veth pair with it; the
      // host routes through the pair go with the link.
      ns.remove();
    });

    for (const [host, workers, targets] of [
      ['::', 1, [...v4, ...v6]],
      ['0.0.0.0', 1, v4],
      ['::', 2, [...v4, ...v6]],
    ] as const) {
      it(`a server on ${host} with ${workers} worker(s): aioquic and quic-go, sending to each of ${targets.length} addresses, are answered from it`, async () => {
        const server = await startAddressesServer({ host, workers, ns });
        try {
          for (const target of targets) for (const client of CLIENTS) await fetchAt(client, target, server.port);
          const c = await server.counters(v4[0]);
          assert.ok(c.udpSentWithSource > 0, `udpSentWithSource ${c.udpSentWithSource}`);
          assert.equal(c.sendFailures, 0);
        } finally {
          await server.stop();
        }
      });
    }
  });
});
