// W11: the same server on 1 and on 2 workers, Profile A's
// `GET /login` with TypeScript handlers, measured by W1 (1 connection x 20
// streams) and by W5's load (64 connections x 16 streams). The server is
// pinned to its one core either way, as every server in this harness is
// (the load client needs the other): what is compared is server CPU per
// request, so the cost workers add shows, not the cores they would use.
// The spread of W5's 64 connections over the workers and the packets a
// worker handed to another (0 with eBPF steering) come from the workers'
// own counters.
import { Params } from './config';
import { log } from './log';
import { check, Check, extraView, median } from './report';
import { cpuPerRequest, h3Load, runClient } from './clients';
import { LOADCLIENT } from './config';
import { cpuNanos } from './procfs';
import { H3NodeBuild } from './builds';
import { startH3Node, stopServer, workerStats, WorkerStats } from './servers';
import { measureW1 } from './workloads';

export interface W11Row {
  /** 1 or 2 workers; 0: the control, two separate one-worker servers on the same core. */
  workers: number;
  round: number;
  w1_rps: number;
  w1_cpu_us_per_req: number;
  w5_rps: number;
  w5_cpu_us_per_req: number;
  /** Connections W5's load opened, per worker. */
  w5_connections: number[];
  /** Packets a worker's socket read for another worker's connection, over the whole run. */
  packets_forwarded: number;
  steering: string;
  errors: number;
}

const W5_LOAD = (P: Params) => ['-conns', '64', '-streams', '16', '-requests', String(P.w5Requests), '-timeout', '10s'];

/**
 * The control: two separate servers of one worker each, on the same core,
 * each loaded by its own client with half of W5's connections. What two
 * busy servers cost when they time-share one core, without any group:
 * the share of the 2-worker figure that is the core's, not the workers'.
 */
async function control(P: Params, h3: H3NodeBuild, round: number): Promise<W11Row> {
  const a = await startH3Node(h3, 'a', false);
  const b = await startH3Node(h3, 'a', false);
  try {
    const half = (port: number, requests: number) =>
      runClient(LOADCLIENT, ['-url', `https://127.0.0.1:${port}/login`, '-conns', '32', '-streams', '16', '-requests', String(requests), '-timeout', '10s']);
    await Promise.all([half(a.port, P.warmup), half(b.port, P.warmup)]);
    const pids = [...a.pids, ...b.pids];
    const n0 = cpuNanos(pids);
    const out = await Promise.all([half(a.port, P.w5Requests / 2), half(b.port, P.w5Requests / 2)]);
    const n1 = cpuNanos(pids);
    const loads = out.map((o) => JSON.parse(o) as { requests: number; rps: number; errors: number; timeouts: number });
    const requests = loads[0].requests + loads[1].requests;
    const row: W11Row = {
      workers: 0,
      round,
      w1_rps: NaN,
      w1_cpu_us_per_req: NaN,
      w5_rps: loads[0].rps + loads[1].rps,
      w5_cpu_us_per_req: (n1 - n0) / 1e3 / requests,
      w5_connections: [32, 32],
      packets_forwarded: 0,
      steering: 'none',
      errors: loads.reduce((n, l) => n + l.errors + l.timeouts, 0),
    };
    log(`  W11 control round ${round}: two one-worker servers on the one core, 32 connections each: ${row.w5_cpu_us_per_req.toFixed(2)} us/req; errors ${row.errors}`);
    return row;
  } finally {
    await stopServer(a);
    await stopServer(b);
  }
}

export async function runW11(P: Params, h3: H3NodeBuild): Promise<W11Row[]> {
  const rows: W11Row[] = [];
  for (let round = 1; round <= P.w11Rounds; round++) {
    rows.push(await control(P, h3, round));
    for (const workers of [1, 2]) {
      const s = await startH3Node(h3, 'a', false, workers);
      try {
        // Every worker warmed first (8 connections land on both): W1's own
        // warm-up is one connection, which may land on the other worker
        // than its measured one, leaving that worker's JIT cold.
        await h3Load(s, `https://127.0.0.1:${s.port}/login`, ['-conns', '8', '-streams', '20', '-requests', String(P.warmup)]);
        const w1Before = workers > 1 ? await workerStats(s) : null;
        const w1 = await measureW1(P, s, s.port, { exactCpu: true });
        const w1After = workers > 1 ? await workerStats(s) : null;
        const w1Worker = w1After ? w1After.workers.map((w, i) => w.connectionsAccepted - w1Before!.workers[i].connectionsAccepted).join('/') : '1';
        const before = workers > 1 ? await workerStats(s) : null;
        const w5 = await h3Load(s, `https://127.0.0.1:${s.port}/login`, W5_LOAD(P), { exactCpu: true });
        const after = workers > 1 ? await workerStats(s) : null;
        const accepted = (st: WorkerStats | null) => st?.workers.map((w) => w.connectionsAccepted) ?? [];
        const row: W11Row = {
          workers,
          round,
          w1_rps: w1.rps,
          w1_cpu_us_per_req: cpuPerRequest(w1),
          w5_rps: w5.rps,
          w5_cpu_us_per_req: cpuPerRequest(w5),
          w5_connections: after ? accepted(after).map((n, i) => n - accepted(before)[i]) : [64],
          packets_forwarded: after ? after.workers.reduce((n, w) => n + w.packetsForwarded, 0) : 0,
          steering: after?.steering ?? 'none',
          errors: w1.errors + w1.timeouts + w5.errors + w5.timeouts,
        };
        rows.push(row);
        log(
          `  W11 ${workers} worker(s) round ${round}: W1 ${row.w1_rps.toFixed(0)} req/s, ${row.w1_cpu_us_per_req.toFixed(2)} us/req (connections per worker ${w1Worker}); ` +
            `W5 load ${row.w5_rps.toFixed(0)} req/s, ${row.w5_cpu_us_per_req.toFixed(2)} us/req; connections per worker ${row.w5_connections.join('/')}; ` +
            `forwarded ${row.packets_forwarded} (${row.steering}); errors ${row.errors}`,
        );
      } finally {
        await stopServer(s);
      }
    }
  }
  return rows;
}

const med = (rows: W11Row[], workers: number, of: (r: W11Row) => number) => median(rows.filter((r) => r.workers === workers).map(of));

/** The smaller worker's share of W5's connections, over the rounds (the worst round). */
function smallestShare(rows: W11Row[]): number {
  const shares = rows.filter((r) => r.workers === 2).map((r) => Math.min(...r.w5_connections) / r.w5_connections.reduce((a, b) => a + b, 0));
  return shares.length ? Math.min(...shares) : NaN;
}

export function w11Checks(rows: W11Row[]): Check[] {
  if (!rows.length) return [];
  const two = rows.filter((r) => r.workers === 2);
  return [
    check('W11', 'server CPU/req, 2 workers vs 1 (W1, 1 connection)', med(rows, 2, (r) => r.w1_cpu_us_per_req) / med(rows, 1, (r) => r.w1_cpu_us_per_req), 'max', 1.1),
    check('W11', 'server CPU/req, 2 workers vs 1 (W5 load, 64 connections)', med(rows, 2, (r) => r.w5_cpu_us_per_req) / med(rows, 1, (r) => r.w5_cpu_us_per_req), 'max', 1.1),
    extraView(
      check('W11', 'W5 load on 2 workers vs 2 separate servers on the one core (the control)', med(rows, 2, (r) => r.w5_cpu_us_per_req) / med(rows, 0, (r) => r.w5_cpu_us_per_req), 'max', 1.1),
    ),
    check('W11', 'connections per worker, 64 over 2: the smaller share (worst round)', 100 * smallestShare(rows), 'min', 40, '%'),
    check('W11', 'packets a worker handled for another (eBPF steering)', two.every((r) => r.steering === 'ebpf') ? Math.max(...two.map((r) => r.packets_forwarded)) : NaN, 'max', 0),
  ];
}

/** W11's table, and what the figures project for 16 cores. */
export function w11Table(P: Params, rows: W11Row[]): string[] {
  const lines = [
    `W11: Profile A on 1 and 2 workers, the server pinned to one core, median of ${P.w11Rounds} round(s)`,
    '| workers | W1 req/s | W1 server CPU us/req | W5 load req/s | W5 server CPU us/req | W5 connections per worker (each round) | packets forwarded | steering |',
    '|---:|---:|---:|---:|---:|---|---:|---|',
  ];
  for (const workers of [1, 2]) {
    const mine = rows.filter((r) => r.workers === workers);
    if (!mine.length) continue;
    lines.push(
      `| ${workers} | ${med(rows, workers, (r) => r.w1_rps).toFixed(0)} | ${med(rows, workers, (r) => r.w1_cpu_us_per_req).toFixed(2)} | ` +
        `${med(rows, workers, (r) => r.w5_rps).toFixed(0)} | ${med(rows, workers, (r) => r.w5_cpu_us_per_req).toFixed(2)} | ` +
        `${mine.map((r) => r.w5_connections.join('/')).join(', ')} | ${Math.max(...mine.map((r) => r.packets_forwarded))} | ${mine[0].steering} |`,
    );
  }
  const control = rows.filter((r) => r.workers === 0);
  if (control.length) {
    lines.push(
      `| control: 2 separate 1-worker servers | | | ${med(rows, 0, (r) => r.w5_rps).toFixed(0)} | ${med(rows, 0, (r) => r.w5_cpu_us_per_req).toFixed(2)} | 32 + 32 | 0 | none |`,
    );
  }
  const cpu2 = med(rows, 2, (r) => r.w5_cpu_us_per_req);
  if (Number.isFinite(cpu2)) {
    lines.push(
      `- Projection, not a measurement: at ${cpu2.toFixed(2)} us of server CPU per request (W5's load on 2 workers), one core answers ` +
        `${(1e6 / cpu2).toFixed(0)} requests/s, so 16 workers on 16 cores would answer up to ${((16 * 1e6) / cpu2 / 1000).toFixed(0)}k requests/s, ` +
        `if the load spreads (a client's first connection ID picks the worker: binomial over connections), the NIC spreads interrupts over ` +
        `the cores, and the load clients are elsewhere. Nothing else is shared between workers but atomic counters and the kernel's socket lookup.`,
    );
  }
  return lines;
}
