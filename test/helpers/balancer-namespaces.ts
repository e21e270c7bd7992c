// A balancer and its machines, each in a network namespace of its own (root
// only), for test/integration/nft-balancer.test.ts:
//
//   this namespace (the clients)   10.214.0.1 and 10.214.0.3 (a second address to move to)
//        | veth
//   balancer namespace             10.214.0.2; nftables rules only, and IP forwarding
//        | veth per machine          (for the answers, which pass it as a router)
//   machine namespace <i>          10.214.<10+i>.2, the VIP 10.214.100.1 on lo
//
// Clients reach the VIP through the balancer. The balancer's ruleset hands
// each datagram, unchanged, to one machine's link address; the machine takes
// it for the VIP on its `lo` and answers from the VIP (direct server return).
import { execFileSync } from 'node:child_process';
import { ip } from './netns';

export const VIP = '10.214.100.1';
export const CLIENT_HOME = '10.214.0.1';
export const CLIENT_AWAY = '10.214.0.3';

export interface Machine {
  /** Its namespace. */
  readonly ns: string;
  /** Its address on the link to the balancer. */
  readonly address: string;
  /** The balancer's end of that link. */
  readonly balancerDevice: string;
}

export interface BalancerTopology {
  readonly balancerNs: string;
  /** The balancer's interface clients' packets arrive on. */
  readonly ingress: string;
  readonly machines: Machine[];
  /** `nft -f -` in the balancer's namespace with this ruleset. */
  loadRuleset(text: string): void;
  /** The balancer's conntrack entries (its /proc/net/nf_conntrack) for UDP `port`. */
  conntrackEntries(port: number): string[];
  /** The packet counter of every chain of `table` that has one, by chain name. */
  chainCounters(table: string): Record<string, number>;
  remove(): void;
}

function inNs(ns: string, ...cmd: string[]): void {
  ip('netns', 'exec', ns, ...cmd);
}

export function makeBalancerTopology(machineCount: number): BalancerTopology {
  const tag = process.pid % 10000;
  const balancerNs = `h3lb-${process.pid}`;
  const machineNs = Array.from({ length: machineCount }, (_, i) => `h3lb-${process.pid}-m${i}`);
  for (const ns of [balancerNs, ...machineNs]) {
    try {
      ip('netns', 'del', ns);
    } catch {
      // not there: the usual case
    }
    ip('netns', 'add', ns);
    inNs(ns, 'ip', 'link', 'set', 'lo', 'up');
  }
  const sysctl = (ns: string, ...settings: string[]) => execFileSync('ip', ['netns', 'exec', ns, 'sysctl', '-qw', ...settings]);
  // Answers from the machines pass the balancer as a router. Their source
  // is the VIP, which no route of the balancer's points back at: loose
  // reverse-path checks (none) let them through, as on a DSR balancer.
  sysctl(balancerNs, 'net.ipv4.ip_forward=1', 'net.ipv4.conf.all.rp_filter=0', 'net.ipv4.conf.default.rp_filter=0');

  const clientSide = `h3lbc${tag}`;
  const ingress = `h3lbi${tag}`;
  ip('link', 'add', clientSide, 'type', 'veth', 'peer', 'name', ingress);
  ip('link', 'set', ingress, 'netns', balancerNs);
  ip('addr', 'add', `${CLIENT_HOME}/24`, 'dev', clientSide);
  ip('addr', 'add', `${CLIENT_AWAY}/24`, 'dev', clientSide);
  ip('link', 'set', clientSide, 'up');
  inNs(balancerNs, 'ip', 'addr', 'add', '10.214.0.2/24', 'dev', ingress);
  inNs(balancerNs, 'ip', 'link', 'set', ingress, 'up');
  ip('route', 'add', `${VIP}/32`, 'via', '10.214.0.2');

  const machines = machineNs.map((ns, i): Machine => {
    const outer = `h3lbm${i}x${tag}`;
    const inner = `h3lbm${i}n${tag}`;
    ip('link', 'add', outer, 'type', 'veth', 'peer', 'name', inner);
    ip('link', 'set', outer, 'netns', balancerNs);
    ip('link', 'set', inner, 'netns', ns);
    inNs(balancerNs, 'ip', 'addr', 'add', `10.214.${10 + i}.1/24`, 'dev', outer);
    inNs(balancerNs, 'ip', 'link', 'set', outer, 'up');
    sysctl(balancerNs, `net.ipv4.conf.${outer}.rp_filter=0`);
    inNs(ns, 'ip', 'addr', 'add', `10.214.${10 + i}.2/24`, 'dev', inner);
    inNs(ns, 'ip', 'link', 'set', inner, 'up');
    inNs(ns, 'ip', 'addr', 'add', `${VIP}/32`, 'dev', 'lo');
    inNs(ns, 'ip', 'route', 'add', 'default', 'via', `10.214.${10 + i}.1`);
    return { ns, address: `10.214.${10 + i}.2`, balancerDevice: outer };
  });
  sysctl(balancerNs, `net.ipv4.conf.${ingress}.rp_filter=0`);

  return {
    balancerNs,
    ingress,
    machines,
    loadRuleset(text: string) {
      execFileSync('ip', ['netns', 'exec', balancerNs, 'nft', '-f', '-'], { input: text, stdio: ['pipe', 'ignore', 'pipe'] });
    },
    conntrackEntries(port: number) {
      const out = execFileSync('ip', ['netns', 'exec', balancerNs, 'cat', '/proc/net/nf_conntrack'], { encoding: 'utf8' });
      return out.split('\n').filter((l) => / udp /.test(l) && (l.includes(`dport=${port} `) || l.includes(`sport=${port} `)));
    },
    chainCounters(table: string) {
      const out = execFileSync('ip', ['netns', 'exec', balancerNs, 'nft', '-j', 'list', 'table', 'netdev', table], { encoding: 'utf8' });
      const counts: Record<string, number> = {};
      for (const item of (JSON.parse(out) as { nftables: Record<string, unknown>[] }).nftables) {
        const rule = item.rule as { chain: string; expr: Record<string, unknown>[] } | undefined;
        if (!rule) continue;
        for (const e of rule.expr) {
          const c = e.counter as { packets: number } | undefined;
          if (c) counts[rule.chain] = (counts[rule.chain] ?? 0) + c.packets;
        }
      }
      return counts;
    },
    remove() {
      // Deleting a namespace deletes its ends of the veth pairs, and with
      // them both ends and the route through them.
      for (const ns of [...machineNs, balancerNs]) {
        try {
          ip('netns', 'del', ns);
        } catch {
          // already gone
        }
      }
    },
  };
}

/** Whether this machine has nft (scripts/setup-system.sh installs it). */
export function nftAvailable(): boolean {
  try {
    execFileSync('nft', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
