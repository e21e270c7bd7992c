// What a run prints and keeps: the table of medians, the target checks, the
// pace evidence, and bench/results/<date>[-quick].json, .md and .svg.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { renderChart } from '../chart';
import { AddonSize, BUILD_NOISE_BYTES } from './addon-size';
import type { Comparison } from './baseline';
import { cpuPerRequest, type Measured } from './clients';
import { CLIENT_CORE, CORES, Params, ROOT, SERVER_CORE } from './config';
import { log } from './log';
import { FIRST_DATAGRAM_BYTES, slowStartCeiling } from './slow-start-ceiling';
import { W9Row, w9Checks, w9Table } from './w9';
import { BUN, COMPAT, COMPAT_SAME_BYTES, FETCH_FLOOR, FLOOR, HONO, H2_COMPAT, NATIVE, SERVE, Row, TS, TS_DATE, udpSyscallsPerReq, W10_CADDY, W10_COMPAT_IW, W10_IW, W10_LINKS, W10Row, W4Result, W5Result, W7Result, W8_CADDY, W8FileRead, w8Gro, W8_H2, W8_NATIVE, W8_STREAM, W8Row } from './workloads';
import { W11Row, w11Checks, w11Table } from './w11';

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor((s.length - 1) / 2)] : NaN;
};

export interface Check {
  id: string;
  what: string;
  value: number;
  target: number;
  /** 'min': value >= target passes; 'max': value <= target passes. */
  kind: 'min' | 'max';
  unit: string;
  pass: boolean;
  /** A stricter view added here, not one of the issue's targets. */
  extra?: boolean;
}

export function check(id: string, what: string, value: number, kind: 'min' | 'max', target: number, unit = 'x'): Check {
  const pass = Number.isFinite(value) && (kind === 'min' ? value >= target : value <= target);
  return { id, what, value, target, kind, unit, pass };
}

/** A check beyond the issue's targets (shown, never called a miss). */
export const extraView = (c: Check): Check => ({ ...c, extra: true });

export function verdict(c: Check): string {
  if (c.extra) return c.pass ? 'met (extra view)' : 'below (extra view, not a target)';
  if (!Number.isFinite(c.value)) return 'not measured';
  return c.pass ? 'met' : 'MISSED';
}

export function fmt(v: number, unit: string): string {
  if (unit === 'yes') return v >= 1 ? 'yes' : 'no';
  if (unit === 'x') return `${v.toFixed(2)}x`;
  if (unit === 'B') return `${v.toFixed(0)} B`;
  if (unit === '/req') return `${v.toFixed(2)}/req`;
  return `${v.toFixed(1)} ${unit}`;
}

export const pct = (x: number) => (Number.isFinite(x) ? `${(100 * x).toFixed(0)}%` : 'n/a');

/** Everything one run measured. */
export interface RunResults {
  quick: boolean;
  P: Params;
  rows: Row[];
  w4: W4Result;
  w5: W5Result[];
  /** Absent when this checkout has no native handler path (see builds.ts). */
  w5Native?: W5Result;
  ceiling?: Measured;
  w7: W7Result;
  w8: W8Row[];
  /** W8's file read alone, the listener's way and the native transfer's (absent before it was measured). */
  w8FileReads?: W8FileRead[];
  w9: W9Row[];
  w10: W10Row[];
  w11: W11Row[];
  /** With --baseline. */
  comparison?: Comparison;
  started: number;
}

/** Medians over the rounds of one workload and server. */
export class Medians {
  constructor(private readonly rows: Row[]) {}

  of(workload: string, variant: string, key: keyof Measured): number {
    return median(this.select(workload, variant).map((r) => Number(r[key])));
  }

  /** Server CPU per request, to the nanosecond where the run measured it so (procfs.cpuNanos), else from clock ticks. */
  cpu(workload: string, variant: string): number {
    return median(this.select(workload, variant).map(cpuPerRequest));
  }

  /**
   * Server CPU per request of `variant` over `base`'s, round by round, and
   * the median of those ratios. The two rows of a round are measured
   * seconds apart (workloads.ts runs them back to back), so a round's ratio
   * cancels this VM's drift in speed over minutes, which the ratio of the
   * two medians does not (W2's ratios are taken the same way).
   */
  pairedCpu(workload: string, variant: string, base: string): { ratio: number; perRound: number[]; ofMedians: number } {
    const baseByRound = new Map(this.select(workload, base).map((r) => [r.round, cpuPerRequest(r)]));
    const perRound = this.select(workload, variant)
      .filter((r) => baseByRound.has(r.round))
      .map((r) => cpuPerRequest(r) / baseByRound.get(r.round)!);
    return { ratio: median(perRound), perRound, ofMedians: this.cpu(workload, variant) / this.cpu(workload, base) };
  }

  /** Share of its core the server used: CPU per request x req/s. */
  serverBusy(workload: string, variant: string): string {
    const xs = this.select(workload, variant).map((r) => (r.cpu_us_per_req * r.rps) / 1e6);
    return `${(100 * median(xs)).toFixed(0)}%`;
  }

  clientBusy(workload: string, variant: string): string {
    const xs = this.select(workload, variant)
      .filter((r) => r.client_cpu_s !== undefined)
      .map((r) => r.client_cpu_s! / r.seconds);
    return xs.length ? `${(100 * median(xs)).toFixed(0)}%` : 'n/a';
  }

  /** UDP receive and send calls per request (native counters), where the run read them. */
  udpCalls(workload: string, variant: string): { recv: number; send: number; total: number } {
    const rows = this.select(workload, variant);
    return {
      recv: median(rows.map((r) => r.udp_recv_calls_per_req ?? NaN)),
      send: median(rows.map((r) => r.udp_send_calls_per_req ?? NaN)),
      total: median(rows.map(udpSyscallsPerReq)),
    };
  }

  private select(workload: string, variant: string): Row[] {
    return this.rows.filter((r) => r.workload === workload && r.variant === variant);
  }
}

/** Per-round figures: their median, the relative spread (max - min) / median, and the relative standard error of their mean (sd / sqrt(n) / mean). */
export function spread(xs: number[]): { median: number; relSpread: number; relStdErr: number } {
  const n = xs.length;
  const mean = xs.reduce((a, b) => a + b, 0) / n;
  const sd = n > 1 ? Math.sqrt(xs.reduce((a, x) => a + (x - mean) ** 2, 0) / (n - 1)) : NaN;
  return { median: median(xs), relSpread: n ? (Math.max(...xs) - Math.min(...xs)) / median(xs) : NaN, relStdErr: sd / Math.sqrt(n) / mean };
}

/** W2's CPU per fresh connection: per server, and each h3-node row over Caddy, round by round. */
export interface W2Summary {
  fresh: number;
  servers: Array<{
    variant: string;
    cpu_us: number;
    per_round_us: number[];
    rel_spread: number;
    rel_std_err: number;
    ttfb_p50_ms: number;
    conns_per_s: number;
    /** Per round: the share of the server's core that other processes used during the run ("core busy (all)" minus the server's own), which inflates the server's CPU figure too (caches, switches). */
    others_on_server_core: number[];
  }>;
  /** Median of the rounds' own ratios: a round measures both servers within seconds, so its ratio cancels the machine's drift between rounds. */
  vs_caddy: Array<{ variant: string; ratio: number; per_round: number[]; rel_spread: number; rel_std_err: number }>;
}

export function w2Summary(rows: Row[], fresh: number): W2Summary {
  const w2 = rows.filter((r) => r.workload === 'W2' && r.cpu_us_per_req_exact !== undefined);
  const variants = [...new Set(w2.map((r) => r.variant))];
  const byRound = (variant: string) => new Map(w2.filter((r) => r.variant === variant).map((r) => [r.round, r]));
  const servers = variants.map((variant) => {
    const own = [...byRound(variant).values()];
    const xs = own.map((r) => r.cpu_us_per_req_exact!);
    const s = spread(xs);
    return {
      variant,
      cpu_us: s.median,
      per_round_us: xs,
      rel_spread: s.relSpread,
      rel_std_err: s.relStdErr,
      ttfb_p50_ms: median(own.map((r) => r.p50_ms)),
      conns_per_s: median(own.map((r) => r.rps)),
      others_on_server_core: own.map((r) => Math.max(0, (r.server_core_all ?? NaN) - (r.cpu_us_per_req_exact! * r.rps) / 1e6)),
    };
  });
  const caddy = byRound('caddy');
  const vs_caddy = variants
    .filter((v) => v !== 'caddy' && caddy.size)
    .map((variant) => {
      const per_round = [...byRound(variant).entries()]
        .filter(([round]) => caddy.has(round))
        .map(([round, r]) => r.cpu_us_per_req_exact! / caddy.get(round)!.cpu_us_per_req_exact!);
      const s = spread(per_round);
      return { variant, ratio: s.median, per_round, rel_spread: s.relSpread, rel_std_err: s.relStdErr };
    });
  return { fresh, servers, vs_caddy };
}

/** W2's section under the results table. */
export function w2Lines(s: W2Summary): string[] {
  const p = (x: number) => (Number.isFinite(x) ? `${(100 * x).toFixed(1)} %` : 'n/a');
  const lines = [
    `W2: ${s.fresh} fresh connections per server per round (full handshake + one GET /login each); server CPU per fresh connection from the scheduler (schedstat ns, all threads), median over rounds`,
    `| server | CPU us per fresh connection | per round | spread (max-min)/median | std error of mean | TTFB p50 ms | connections/s | other processes on core ${SERVER_CORE}, per round |`,
    '|---|---:|---|---:|---:|---:|---:|---|',
    ...s.servers.map(
      (x) =>
        `| ${x.variant} | ${x.cpu_us.toFixed(1)} | ${x.per_round_us.map((v) => v.toFixed(1)).join(', ')} | ${p(x.rel_spread)} | ${p(x.rel_std_err)} | ` +
        `${x.ttfb_p50_ms.toFixed(2)} | ${x.conns_per_s.toFixed(0)} | ${x.others_on_server_core.map(pct).join(', ')} |`,
    ),
    '',
    ...s.vs_caddy.map(
      (x) =>
        `- W2 ${x.variant} / caddy, CPU per fresh connection: ${x.ratio.toFixed(3)}x (median of the rounds' ratios ${x.per_round.map((v) => v.toFixed(3)).join(', ')}; ` +
        `spread ${p(x.rel_spread)}, std error ${p(x.rel_std_err)})`,
    ),
  ];
  return lines;
}

/** W8's transfers of one server and direction that completed. */
const w8Of = (r: RunResults, variant: string, direction: string) => r.w8.filter((t) => t.variant === variant && t.direction === direction && !t.error);
const w8Median = (r: RunResults, variant: string, direction: string, key: 'mb_per_s' | 'cpu_s_per_gib' | 'seconds') =>
  median(w8Of(r, variant, direction).map((t) => t[key]));
/** The worst RSS growth over the rounds (a memory bound holds for every transfer, not the median one). */
/**
 * The native transfer's download CPU per GiB with the file read the way
 * the listener reads it (fs.createReadStream) instead of its own reads:
 * an estimate made of two measurements of the same run (NaN without them).
 */
const w8FileRead = (r: RunResults, mode: W8FileRead['mode']) => median((r.w8FileReads ?? []).filter((x) => x.mode === mode).map((x) => x.cpu_s_per_gib));
const w8NativeWithListenerReads = (r: RunResults) =>
  w8Median(r, W8_NATIVE, 'download', 'cpu_s_per_gib') + w8FileRead(r, 'streams') - w8FileRead(r, 'raw');

const w8RssMax = (r: RunResults, variant: string, direction: string) => {
  const xs = w8Of(r, variant, direction).map((t) => t.rss_growth_kib / 1024);
  return xs.length ? Math.max(...xs) : NaN;
};

function targetChecks(r: RunResults, med: Medians, w2: W2Summary): Check[] {
  const w1Rps = med.of('W1', TS, 'rps');
  const w8Ratio = (direction: string, peer: string, ours = COMPAT) => w8Median(r, ours, direction, 'mb_per_s') / w8Median(r, peer, direction, 'mb_per_s');
  // Server CPU per GiB, the peer's over ours: the same ratio where the client, not the server, sets the pace.
  const w8CpuRatio = (direction: string, peer: string, ours = COMPAT) => w8Median(r, peer, direction, 'cpu_s_per_gib') / w8Median(r, ours, direction, 'cpu_s_per_gib');
  // The same four targets for W8 with no JavaScript in the transfer (the
  // core answering alone): where this misses, no API on this core can meet
  // the target (bench/README.md, "What sets W8's pace").
  const w8FloorViews = (['upload', 'download'] as const).flatMap((direction) =>
    [
      [W8_CADDY, direction === 'upload' ? 'Caddy proxy' : 'Caddy file_server', 2.0] as const,
      [W8_H2, 'node:http2', 0.5] as const,
    ].flatMap(([peer, label, target]) => [
      extraView(check('W8', `${direction} MB/s vs ${label}, native transfer (no JavaScript)`, w8Ratio(direction, peer, W8_NATIVE), 'min', target)),
      extraView(check('W8', `${direction}: server CPU per GiB, ${label} over the native transfer (no JavaScript)`, w8CpuRatio(direction, peer, W8_NATIVE), 'min', target)),
    ]),
  );
  return [
    check('W1', 'req/s vs Caddy', w1Rps / med.of('W1', 'caddy', 'rps'), 'min', 2.0),
    // Server-bound view: requests one fully busy core could serve (1 / CPU
    // per request). At 20 streams neither server nor client saturates a
    // core, so req/s above is bounded by the client and the round trip.
    extraView(check('W1', 'capacity/core vs Caddy', med.of('W1', 'caddy', 'cpu_us_per_req') / med.of('W1', TS, 'cpu_us_per_req'), 'min', 2.0)),
    check('W1', 'CPU/request vs Caddy', med.of('W1', TS, 'cpu_us_per_req') / med.of('W1', 'caddy', 'cpu_us_per_req'), 'max', 0.5),
    check('W1', 'UDP syscalls per request (receive + send), 1 connection x 20 streams', med.udpCalls('W1', TS).total, 'max', 0.5, '/req'),
    check('W2', 'TTFB p50 vs Caddy', med.of('W2', TS, 'p50_ms') / med.of('W2', 'caddy', 'p50_ms'), 'max', 1.0),
    check('W2', 'CPU per fresh connection vs Caddy', w2.vs_caddy.find((x) => x.variant === TS)?.ratio ?? NaN, 'max', 0.5),
    check('W3', 'req/s vs Caddy->Node', med.of('W3', TS, 'rps') / med.of('W3', 'caddy -> node http', 'rps'), 'min', 2.0),
    check('W3', 'req/s vs node:http2', med.of('W3', TS, 'rps') / med.of('W3', 'node-http2 (h2load)', 'rps'), 'min', 0.8),
    check('W4', 'bytes read past cap (max)', Math.max(...r.w4.attempts.map((a) => a.past_cap)), 'max', 65536, 'B'),
    check('W4', '413 before upload done', r.w4.attempts.every((a) => a.status === 413 && a.client_handed < 1024 ** 3) ? 1 : 0, 'min', 1, 'yes'),
    check('W5', 'RSS per idle connection', r.w5[0].per_idle_kib, 'max', 50, 'KiB'),
    check('W5', 'req/s vs W1', r.w5[0].load.rps / w1Rps, 'min', 0.9),
    check('W6', 'W1 TypeScript vs native', w1Rps / med.of('W1', NATIVE, 'rps'), 'min', 0.7),
    check('W6', 'W3 TypeScript vs native', med.of('W3', TS, 'rps') / med.of('W3', NATIVE, 'rps'), 'min', 0.7),
    // Server CPU per request over the native handler's, through
    // createServer, createSecureServer and serve (a fetch handler).
    check('W6', 'W1 CPU/req createServer vs native handler', med.cpu('W1', TS) / med.cpu('W1', NATIVE), 'max', 1.4),
    check('W6', 'W3 CPU/req createServer vs native handler', med.cpu('W3', TS) / med.cpu('W3', NATIVE), 'max', 1.4),
    check('W6', 'W1 CPU/req createSecureServer vs native handler', med.cpu('W1', COMPAT) / med.cpu('W1', NATIVE), 'max', 1.4),
    check('W6', 'W3 CPU/req createSecureServer vs native handler', med.cpu('W3', COMPAT) / med.cpu('W3', NATIVE), 'max', 1.4),
    check('W6', 'W1 CPU/req serve (fetch handler) vs native handler', med.cpu('W1', SERVE) / med.cpu('W1', NATIVE), 'max', 1.4),
    check('W6', 'W3 CPU/req serve (fetch handler) vs native handler', med.cpu('W3', SERVE) / med.cpu('W3', NATIVE), 'max', 1.4),
    // The same ratio for the least JavaScript the boundary allows (no API at
    // all: bench/servers/boundary-floor.mjs). Above 1.4x, no API on this
    // boundary can meet the targets just above.
    extraView(check('W6', 'W1 CPU/req boundary floor (least JavaScript, no API) vs native handler', med.cpu('W1', FLOOR) / med.cpu('W1', NATIVE), 'max', 1.4)),
    extraView(check('W6', 'W3 CPU/req boundary floor (least JavaScript, no API) vs native handler', med.cpu('W3', FLOOR) / med.cpu('W3', NATIVE), 'max', 1.4)),
    // The fetch handler against the node:http2-shaped API on the same core,
    // and both against Bun's HTTP/3 server running the same fetch handler
    // (bench/servers/fetch-app.mjs). Paired by round like the checks below.
    ...(['W1', 'W3'] as const).flatMap((w) => [
      check(w, 'CPU/req serve (fetch handler) vs createSecureServer', med.pairedCpu(w, SERVE, COMPAT).ratio, 'max', 1.2),
      check(w, 'peak RSS serve (fetch handler) vs createSecureServer', med.of(w, SERVE, 'peak_rss_kib') / med.of(w, COMPAT, 'peak_rss_kib'), 'max', 1.2),
      check(w, 'CPU/req serve (fetch handler) vs Bun.serve (http3)', med.pairedCpu(w, SERVE, BUN).ratio, 'max', 1.0),
      check(w, 'CPU/req createSecureServer vs Bun.serve (http3)', med.pairedCpu(w, COMPAT, BUN).ratio, 'max', 1.0),
    ]),
    ...(['W1', 'W3'] as const).map((w) =>
      extraView(check(w, 'CPU/req fetch floor (a platform Request and Response on createSecureServer) vs createSecureServer', med.pairedCpu(w, FETCH_FLOOR, COMPAT).ratio, 'max', 1.2)),
    ),
    extraView(check('W1', 'CPU/req serve with a Hono app vs serve with the hand-written handler', med.pairedCpu('W1', HONO, SERVE).ratio, 'max', 1.5)),
    check('W7', 'usage.datagrams = quiche', r.w7.usage_datagrams === r.w7.quiche_dgram_recv && r.w7.usage_datagrams > 0 ? 1 : 0, 'min', 1, 'yes'),
    check('W7', '/stats p99 meanwhile', r.w7.stats.p99_ms, 'max', 10, 'ms'),
    // createSecureServer: what the node:http2-shaped API costs over createServer, and against node:http2's own.
    // Paired by round (the median of the rounds' own ratios): the two rows differ by a few percent, less than this VM drifts between rounds.
    check('W1', 'CPU/req createSecureServer vs createServer', med.pairedCpu('W1', COMPAT, TS).ratio, 'max', 1.0),
    // The same with createServer sending the `date` field createSecureServer
    // must send: both rounds of 20 answers then take two packets, and the
    // client acknowledges each round at once (docs/design.md, "W1's two
    // fields and the packet they overflow").
    extraView(check('W1', 'CPU/req createSecureServer vs createServer sending date too', med.pairedCpu('W1', COMPAT, TS_DATE).ratio, 'max', 1.0)),
    // And the other way round: createSecureServer with `date` and
    // `content-length` left out (res.sendDate = false), so both send the
    // same bytes in the same packets: the API's own cost.
    extraView(check('W1', 'CPU/req createSecureServer without date and content-length vs createServer (same bytes)', med.pairedCpu('W1', COMPAT_SAME_BYTES, TS).ratio, 'max', 1.0)),
    check('W3', 'CPU/req createSecureServer vs createServer', med.pairedCpu('W3', COMPAT, TS).ratio, 'max', 1.0),
    extraView(check('W3', 'CPU/req createSecureServer vs createServer sending date too', med.pairedCpu('W3', COMPAT, TS_DATE).ratio, 'max', 1.0)),
    extraView(check('W3', 'CPU/req createSecureServer without date and content-length vs createServer (same bytes)', med.pairedCpu('W3', COMPAT_SAME_BYTES, TS).ratio, 'max', 1.0)),
    check('W1', 'CPU/req createSecureServer vs node:http2 compat', med.cpu('W1', COMPAT) / med.cpu('W1', H2_COMPAT), 'max', 0.7),
    check('W8', 'upload MB/s vs Caddy proxy', w8Ratio('upload', W8_CADDY), 'min', 2.0),
    check('W8', 'download MB/s vs Caddy file_server', w8Ratio('download', W8_CADDY), 'min', 2.0),
    check('W8', 'upload MB/s vs node:http2', w8Ratio('upload', W8_H2), 'min', 0.5),
    check('W8', 'download MB/s vs node:http2', w8Ratio('download', W8_H2), 'min', 0.5),
    extraView(check('W8', 'upload: server CPU per GiB, Caddy proxy over createSecureServer', w8CpuRatio('upload', W8_CADDY), 'min', 2.0)),
    extraView(check('W8', 'download: server CPU per GiB, Caddy file_server over createSecureServer', w8CpuRatio('download', W8_CADDY), 'min', 2.0)),
    extraView(check('W8', 'upload: server CPU per GiB, node:http2 over createSecureServer', w8CpuRatio('upload', W8_H2), 'min', 0.5)),
    extraView(check('W8', 'download: server CPU per GiB, node:http2 over createSecureServer', w8CpuRatio('download', W8_H2), 'min', 0.5)),
    ...w8FloorViews,
    // The download again with the client reading with UDP_GRO, so that its
    // per-datagram receive runs on its own core and not inside the server's
    // sendmsg (loopback; bench/README.md, "What sets W8's pace"). node:http2's
    // TCP client has that from loopback's 64 KiB segments already.
    extraView(check('W8', 'download MB/s vs node:http2, the HTTP/3 client reading with UDP_GRO', w8Ratio('download', W8_H2, w8Gro(COMPAT)), 'min', 0.5)),
    extraView(check('W8', 'download: server CPU per GiB, node:http2 over createSecureServer, the HTTP/3 client reading with UDP_GRO', w8CpuRatio('download', W8_H2, w8Gro(COMPAT)), 'min', 0.5)),
    extraView(check('W8', 'download MB/s vs Caddy file_server, both read with UDP_GRO', w8Ratio('download', w8Gro(W8_CADDY), w8Gro(COMPAT)), 'min', 2.0)),
    extraView(
      check('W8', 'download: server CPU per GiB, Caddy file_server over the native transfer with the listener\'s file reading (estimate)', w8Median(r, W8_CADDY, 'download', 'cpu_s_per_gib') / w8NativeWithListenerReads(r), 'min', 2.0),
    ),
    check('W8', 'RSS growth in a transfer (max)', Math.max(w8RssMax(r, COMPAT, 'upload'), w8RssMax(r, COMPAT, 'download')), 'max', 32, 'MiB'),
    ...w9Checks(r.w9),
    ...w10Checks(r.w10),
    ...w11Checks(r.w11),
  ];
}

/** Goodput of the body: its bytes over the time from the response's header section to its last byte (MB/s). */
export const bodyGoodput = (t: W10Row) => t.bytes / (t.seconds - t.head_seconds) / 1e6;
const w10Goodput = (rows: W10Row[], variant: string, link: string, of: (t: W10Row) => number = (t) => t.mb_per_s) =>
  median(rows.filter((t) => t.variant === variant && t.link === link && !t.error).map(of));

/** W10's checks: goodput against Caddy on the lossy path, and the share of the bottleneck used. */
export function w10Checks(rows: W10Row[]): Check[] {
  // 100 Mbit/s is 12.5 MB/s (decimal, as the client reports MB/s).
  const link = ((W10_LINKS.bottleneck.rateMbps ?? NaN) * 1e6) / 8 / 1e6;
  return [
    check('W10', 'goodput, 30 ms RTT, 1 % loss, vs Caddy', w10Goodput(rows, COMPAT, 'lossy') / w10Goodput(rows, W10_CADDY, 'lossy'), 'min', 1.0),
    // The body's goodput: a 10 MiB download at 100 Mbit/s lasts 0.84 s, of
    // which the handshake and the request's round trip (40 ms at 20 ms RTT)
    // would be 5 % whatever the server did; the whole-transfer share is
    // shown beside it.
    check('W10', 'goodput at a 100 Mbit/s bottleneck, share of the link (body, from its first byte)', (100 * w10Goodput(rows, COMPAT, 'bottleneck', bodyGoodput)) / link, 'min', 90, '%'),
    extraView(check('W10', 'the same over the whole transfer, handshake included', (100 * w10Goodput(rows, COMPAT, 'bottleneck')) / link, 'min', 90, '%')),
    extraView(check('W10', 'goodput at the bottleneck vs Caddy', w10Goodput(rows, COMPAT, 'bottleneck') / w10Goodput(rows, W10_CADDY, 'bottleneck'), 'min', 1.0)),
    extraView(
      check('W10', `share of the link (body) with initialWindow ${W10_IW}, as quic-go and Chromium start`, (100 * w10Goodput(rows, W10_COMPAT_IW, 'bottleneck', bodyGoodput)) / link, 'min', 90, '%'),
    ),
  ];
}

/**
 * The bottleneck share a perfect sender could reach (bench/lib/slow-start-ceiling.ts),
 * from RFC 9002's initial window and from 32 packets, at the framing
 * efficiency measured on the h3-node rows (body bytes over the bytes the
 * relay delivered). A model: printed beside the measured shares, not a check.
 */
function w10CeilingLines(rows: W10Row[]): string[] {
  const rules = W10_LINKS.bottleneck;
  const ok = rows.filter((t) => t.link === 'bottleneck' && t.variant.startsWith('h3-node') && !t.error && t.delivered_bytes > 0);
  if (ok.length === 0) return [];
  const efficiency = median(ok.map((t) => t.bytes / t.delivered_bytes));
  const linkBytesPerS = ((rules.rateMbps ?? NaN) * 1e6) / 8;
  const share = (packets: number) =>
    (100 *
      slowStartCeiling({
        bytes: ok[0].bytes,
        linkBytesPerS,
        rttS: (2 * (rules.delayMs ?? 0)) / 1000,
        initialWindowBytes: packets * FIRST_DATAGRAM_BYTES,
        efficiency,
      })) /
    linkBytesPerS;
  const measured = (variant: string) => ((100 * w10Goodput(rows, variant, 'bottleneck', bodyGoodput) * 1e6) / linkBytesPerS).toFixed(1);
  return [
    `- Ceiling at the bottleneck (a model, not a measurement): a sender that loses nothing, doubling its window every round trip until it fills the link, ` +
      `at the framing efficiency measured here (${(100 * efficiency).toFixed(1)} % of the bytes delivered are body), reaches ` +
      `${share(10).toFixed(1)} % of the link by the body measure from an initial window of 10 packets of ${FIRST_DATAGRAM_BYTES} bytes (RFC 9002 section 7.2), ` +
      `${share(W10_IW).toFixed(1)} % from ${W10_IW} packets (quic-go's and Chromium's). Measured: h3-node ${measured(COMPAT)} % (10 packets), ` +
      `${measured(W10_COMPAT_IW)} % (initialWindow ${W10_IW}), Caddy ${measured(W10_CADDY)} % (quic-go: 32 packets).`,
  ];
}

/** W10's table: per link and server, the median goodput over the rounds and what the relay dropped. */
export function w10Table(P: Params, rows: W10Row[]): string[] {
  const lines = [
    `W10: one ${P.w10Bytes / 1024 / 1024} MiB download through a user-space relay, median of ${P.w10LossyRounds} round(s) on the lossy link (goodput range over them in brackets) and ${P.w10Rounds} at the bottleneck`,
    '| link | server | goodput MB/s | body goodput MB/s | seconds | until the response head s | relay drops (loss / queue) | relay delay late, mean / p99 ms | server CPU s/GiB | failed |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const [link, rules] of Object.entries(W10_LINKS)) {
    for (const variant of [...new Set(rows.filter((t) => t.link === link).map((t) => t.variant))]) {
      const ok = rows.filter((t) => t.link === link && t.variant === variant && !t.error);
      const failed = rows.filter((t) => t.link === link && t.variant === variant && t.error).length;
      const m = (f: (t: W10Row) => number) => median(ok.map(f));
      lines.push(
        `| ${rules.title} | ${variant} | ${m((t) => t.mb_per_s).toFixed(2)}${link === 'lossy' && ok.length > 1 ? ` [${Math.min(...ok.map((t) => t.mb_per_s)).toFixed(2)}-${Math.max(...ok.map((t) => t.mb_per_s)).toFixed(2)}]` : ''} | ${m(bodyGoodput).toFixed(2)} | ${m((t) => t.seconds).toFixed(2)} | ${m((t) => t.head_seconds).toFixed(3)} | ` +
          `${m((t) => t.loss_drops)} / ${m((t) => t.queue_drops)} | ${m((t) => t.relay_late_mean_ms).toFixed(2)} / ${m((t) => t.relay_late_p99_ms).toFixed(1)} | ` +
          `${m((t) => t.cpu_s_per_gib).toFixed(2)} | ${failed} |`,
      );
    }
  }
  for (const t of rows.filter((x) => x.error)) lines.push(`- W10 ${t.link} ${t.variant} round ${t.round} failed: ${t.error}`);
  lines.push(...w10CeilingLines(rows));
  return lines;
}

/** W8's table: per server and direction, medians over the rounds (RSS growth: the largest). */
function w8Table(r: RunResults): string[] {
  const lines = [
    `W8: one connection, ${r.P.w8Bytes / 1024 / 1024} MiB up (POST /upload) and down (GET /file), median of ${r.P.w8Rounds} round(s)`,
    `| server | direction | protocol | MB/s | seconds | server CPU s/GiB | RSS before MiB | RSS growth MiB (max) | client process busy | core ${SERVER_CORE} busy (all) | core ${CLIENT_CORE} busy (all) | failed |`,
    '|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  const seen = new Set<string>();
  for (const t of r.w8) {
    const key = `${t.variant}|${t.direction}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const ok = w8Of(r, t.variant, t.direction);
    const failed = r.w8.filter((x) => x.variant === t.variant && x.direction === t.direction && x.error).length;
    const m = (f: (x: W8Row) => number) => median(ok.map(f));
    lines.push(
      `| ${t.variant} | ${t.direction} | ${t.proto === 'h3' ? 'HTTP/3' : 'HTTP/2 + TLS'} | ${m((x) => x.mb_per_s).toFixed(0)} | ${m((x) => x.seconds).toFixed(2)} | ` +
        `${m((x) => x.cpu_s_per_gib).toFixed(2)} | ${(m((x) => x.rss_before_kib) / 1024).toFixed(1)} | ${w8RssMax(r, t.variant, t.direction).toFixed(1)} | ` +
        `${pct(m((x) => x.client_cpu_s / x.seconds))} | ${pct(m((x) => x.server_core_all))} | ${pct(m((x) => x.client_core_all))} | ${failed} |`,
    );
  }
  // The layer under createSecureServer, against the same peers: how much of a W8 ratio the compat layer costs.
  const floor = (direction: string) =>
    [W8_CADDY, W8_H2].map((peer) => `${(w8Median(r, W8_STREAM, direction, 'mb_per_s') / w8Median(r, peer, direction, 'mb_per_s')).toFixed(2)}x ${peer}`).join(', ');
  lines.push('', `- W8 RequestStream (no compat layer, not a target): upload ${floor('upload')}; download ${floor('download')}`);
  // The core alone: createSecureServer's share of what the core allows.
  const share = (direction: string) => {
    const compat = w8Median(r, COMPAT, direction, 'mb_per_s');
    const native = w8Median(r, W8_NATIVE, direction, 'mb_per_s');
    const busy = median(w8Of(r, W8_NATIVE, direction).map((x) => x.client_cpu_s / x.seconds));
    return `${direction} ${native.toFixed(0)} MB/s with the client ${pct(busy)} busy (createSecureServer ${(compat / native).toFixed(2)}x of it)`;
  };
  if (w8Of(r, W8_NATIVE, 'upload').length + w8Of(r, W8_NATIVE, 'download').length > 0) {
    lines.push(`- W8 native transfer (the core alone, no JavaScript; not a target): ${share('upload')}; ${share('download')}`);
  }
  // Paired by round (both downloads on the same server, one after the
  // other), since this VM's pace drifts between rounds more than the
  // difference being read.
  const gro = (variant: string) => {
    const perRound = (key: 'mb_per_s' | 'cpu_s_per_gib') =>
      w8Of(r, w8Gro(variant), 'download').flatMap((g) => {
        const plain = w8Of(r, variant, 'download').find((t) => t.round === g.round);
        return plain ? [g[key] / plain[key]] : [];
      });
    const say = (xs: number[]) => `${median(xs).toFixed(2)}x (rounds ${xs.map((x) => x.toFixed(2)).join(', ')})`;
    return `${variant} ${say(perRound('mb_per_s'))} the MB/s, ${say(perRound('cpu_s_per_gib'))} the server CPU per GiB`;
  };
  if (w8Of(r, w8Gro(COMPAT), 'download').length > 0) {
    lines.push(`- W8 download with the client reading with UDP_GRO (loopback runs a receiver's per-datagram work in the sender's sendmsg; not a target): ${gro(COMPAT)}; ${gro(W8_CADDY)}`);
  }
  if (r.w8FileReads?.length) {
    lines.push(
      `- W8 file read alone on the server core (bench/tools/fs-read-cost.mjs): ${w8FileRead(r, 'streams').toFixed(2)} s/GiB through fs.createReadStream as the listener reads it, ` +
        `${w8FileRead(r, 'raw').toFixed(2)} s/GiB in 64 KiB reads as the native transfer does; the native transfer's download with the listener's reads: ` +
        `${w8NativeWithListenerReads(r).toFixed(2)} s/GiB (an estimate), createSecureServer ${w8Median(r, COMPAT, 'download', 'cpu_s_per_gib').toFixed(2)}`,
    );
  }
  for (const t of r.w8.filter((x) => x.error)) lines.push(`- W8 ${t.variant} ${t.direction} round ${t.round} failed: ${t.error}`);
  return lines;
}

/** W6's floor: what the crossing costs with the least JavaScript, and what each API adds above it. */
export function floorLines(med: Medians): string[] {
  const line = (w: string) => {
    const native = med.cpu(w, NATIVE);
    const floor = med.cpu(w, FLOOR);
    if (!Number.isFinite(floor) || !Number.isFinite(native)) return `- Floor, ${w}: not measured`;
    const above = (v: string, name: string) => `${name} ${(med.cpu(w, v) - floor).toFixed(1)} us`;
    return (
      `- Floor, ${w}: the real core with the least JavaScript per request (decode, one fixed answer, submit; no API) costs ${floor.toFixed(1)} us of server CPU ` +
      `per request, ${(floor / native).toFixed(2)}x the native handler's ${native.toFixed(1)} us; above that floor: ${above(TS, 'createServer')}, ${above(COMPAT, 'createSecureServer')}, ${above(SERVE, 'serve')}`
    );
  };
  return [line('W1'), line('W3')];
}

/** Who sets the pace of W1 and W5 (bench/README.md, "Where the load client sets the pace"): not targets, the evidence next to the two req/s checks. */
function paceLines(r: RunResults, med: Medians): string[] {
  const { ceiling, w5Native } = r;
  if (!ceiling || !w5Native) return ['- Pace: not measured (no native handler in this run)'];
  const caddyW1 = med.of('W1', 'caddy', 'rps');
  const clientPct = (m: Measured) => (m.client_cpu_s !== undefined ? `${((100 * m.client_cpu_s) / m.seconds).toFixed(0)}%` : 'n/a');
  return [
    `- Pace, W1: the load client tops out at ${ceiling.rps.toFixed(0)} req/s (1 conn x ${r.P.ceilingStreams} streams, native handler, client ${clientPct(ceiling)} busy); ` +
      `2.0x Caddy is ${(2 * caddyW1).toFixed(0)} req/s = ${((200 * caddyW1) / ceiling.rps).toFixed(0)}% of that ceiling; at W1's 20 streams the native handler ` +
      `(no JavaScript) reaches ${med.of('W1', NATIVE, 'rps').toFixed(0)} req/s = ${(med.of('W1', NATIVE, 'rps') / caddyW1).toFixed(2)}x Caddy`,
    `- Pace, W5: native handler ${w5Native.load.rps.toFixed(0)} req/s (client ${clientPct(w5Native.load)} busy) vs TypeScript ` +
      `${r.w5[0].load.rps.toFixed(0)} req/s (client ${clientPct(r.w5[0].load)} busy): the load client sets W5's rate`,
  ];
}

/** Prints the tables and writes bench/results/<date>[-quick].json, .svg and .md. */
export function report(r: RunResults): void {
  const med = new Medians(r.rows);
  const w2 = w2Summary(r.rows, r.P.w2Fresh);
  const checks = targetChecks(r, med, w2);

  // Table of medians per workload and server; also kept for <date>.md.
  const md: string[] = [];
  const table = (line: string) => {
    md.push(line);
    process.stdout.write(`${line}\n`);
  };
  table('');
  table(`Results (median of ${r.P.rounds} round(s)); server on core ${SERVER_CORE}, client on core ${CLIENT_CORE}`);
  table(
    `| workload | server | req/s | p50 ms | p99 ms | server CPU us/req | server process busy | client process busy | core ${SERVER_CORE} busy (all) | core ${CLIENT_CORE} busy (all) | peak RSS MiB | errors |`,
  );
  table('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  const seen = new Set<string>();
  for (const row of r.rows) {
    const key = `${row.workload}|${row.variant}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const [w, v] = [row.workload, row.variant];
    const errs = r.rows.filter((x) => x.workload === w && x.variant === v).reduce((a, x) => a + x.errors + x.timeouts, 0);
    table(
      `| ${w} | ${v} | ${med.of(w, v, 'rps').toFixed(0)} | ${med.of(w, v, 'p50_ms').toFixed(2)} | ` +
        `${row.client.startsWith('h2load') ? 'n/a' : med.of(w, v, 'p99_ms').toFixed(2)} | ${med.of(w, v, 'cpu_us_per_req').toFixed(1)} | ` +
        `${med.serverBusy(w, v)} | ${med.clientBusy(w, v)} | ` +
        `${pct(med.of(w, v, 'server_core_all'))} | ${pct(med.of(w, v, 'client_core_all'))} | ` +
        `${(med.of(w, v, 'peak_rss_kib') / 1024).toFixed(1)} | ${errs} |`,
    );
  }
  table('');
  for (const v of [TS, TS_DATE]) {
    const udp = med.udpCalls('W1', v);
    if (v === TS_DATE && !Number.isFinite(udp.total)) continue;
    table(
      `- W1 ${v}: UDP syscalls per request ${Number.isFinite(udp.total) ? udp.total.toFixed(3) : 'not measured'} ` +
        `(receive ${udp.recv.toFixed(3)} + send ${udp.send.toFixed(3)}; native counters udpRecvCalls, udpSendCalls over the measured requests)`,
    );
  }
  for (const [w, v, base] of [['W1', COMPAT, TS], ['W3', COMPAT, TS], ['W1', COMPAT, TS_DATE], ['W3', COMPAT, TS_DATE], ['W1', COMPAT_SAME_BYTES, TS], ['W3', COMPAT_SAME_BYTES, TS]]) {
    const c = med.pairedCpu(w, v, base);
    if (!c.perRound.length) continue;
    table(
      `- ${w} ${v} / ${base}, server CPU per request: ${c.ratio.toFixed(3)}x (median of the rounds' ratios ` +
        `${c.perRound.map((v) => v.toFixed(3)).join(', ')}; the ratio of the two medians: ${c.ofMedians.toFixed(3)}x)`,
    );
  }
  table('');
  for (const line of w2Lines(w2)) table(line);
  if (r.w8.length) {
    table('');
    for (const line of w8Table(r)) table(line);
  }
  if (r.w9.length) {
    table('');
    for (const line of w9Table(r.P, r.w9)) table(line);
  }
  if (r.w10.length) {
    table('');
    for (const line of w10Table(r.P, r.w10)) table(line);
  }
  if (r.w11.length) {
    table('');
    for (const line of w11Table(r.P, r.w11)) table(line);
  }
  table('');
  table('| id | check | measured | target | verdict |');
  table('|---|---|---:|---:|---|');
  for (const c of checks) {
    table(`| ${c.id} | ${c.what} | ${fmt(c.value, c.unit)} | ${c.kind === 'min' ? '>=' : '<='} ${fmt(c.target, c.unit)} | ${verdict(c)} |`);
  }
  const seconds = (Date.now() - r.started) / 1000;
  log(`\ntotal time ${seconds.toFixed(0)} s`);

  const udp = med.udpCalls('W1', TS);
  const date = new Date().toISOString().slice(0, 10);
  const base = path.join(ROOT, 'bench/results', `${date}${r.quick ? '-quick' : ''}`);
  fs.mkdirSync(path.dirname(base), { recursive: true });
  const result = {
    date: new Date().toISOString(),
    mode: r.quick ? 'quick' : 'full',
    machine: { cores: CORES, cpu: os.cpus()[0]?.model, loadavg: os.loadavg() },
    taskset: { server_core: SERVER_CORE, client_core: CLIENT_CORE },
    parameters: r.P,
    rows: r.rows,
    w4: r.w4,
    w5: r.w5,
    w5_native: r.w5Native,
    client_ceiling: r.ceiling,
    w7: r.w7,
    w8: r.w8,
    w8_file_reads: r.w8FileReads,
    w9: r.w9,
    w10: r.w10,
    w11: r.w11,
    /** Medians over the rounds; the per-round figures are in rows (udp_recv_calls_per_req, udp_send_calls_per_req). */
    w1_udp_syscalls_per_request: { variant: TS, receive: udp.recv, send: udp.send, total: udp.total },
    /** W2's server CPU per fresh connection (schedstat), per round and as medians, and the per-round ratios to Caddy. */
    w2_cpu_per_connection: w2,
    checks,
    ...(r.comparison ? { baseline: r.comparison } : {}),
    seconds,
  };
  fs.writeFileSync(`${base}.json`, `${JSON.stringify(result, null, 2)}\n`);
  fs.writeFileSync(`${base}.svg`, renderChart(result));
  const w5Lines = [...r.w5, ...(r.w5Native ? [r.w5Native] : [])].map(
    (w) =>
      `- W5 ${w.server}: ${w.idle} idle connections: RSS ${(w.rss_before_kib / 1024).toFixed(1)} -> ${(w.rss_idle_kib / 1024).toFixed(1)} MiB ` +
      `= ${w.per_idle_kib.toFixed(1)} KiB per connection; then 64 x 16: ${w.load.rps.toFixed(0)} req/s`,
  );
  const pace = [...paceLines(r, med), ...floorLines(med)];
  for (const line of pace) log(line);
  md.push('', ...pace);
  const extra = [
    `- W4: ${r.w4.attempts.map((a) => `413 after ${a.after_ms} ms, ${a.past_cap} B past the cap`).join('; ')}`,
    ...w5Lines,
    `- W7: ${r.w7.sent} datagrams sent in ${r.w7.send_seconds.toFixed(2)} s; usage.datagrams ${r.w7.usage_datagrams}, quiche dgram_recv ${r.w7.quiche_dgram_recv}; ` +
      `/stats meanwhile ${r.w7.stats.requests} requests, p50 ${r.w7.stats.p50_ms} ms, p99 ${r.w7.stats.p99_ms} ms`,
  ];
  const comparison = r.comparison ? comparisonLines(r.comparison) : [];
  for (const line of comparison) log(line);
  fs.writeFileSync(`${base}.md`, [`${result.mode} run ${result.date}`, ...md, '', ...extra, ...(comparison.length ? ['', ...comparison] : []), ''].join('\n'));
  process.stdout.write(`wrote ${path.relative(ROOT, base)}.json, .svg and .md\n`);
}

/** The --baseline section: server CPU per request of both designs, their ratio, the 5 % verdict, and the shipped addon sizes. */
function comparisonLines(c: Comparison): string[] {
  const lines = [
    '',
    `Against the baseline ${c.baseline.rev} (${c.baseline.sha.slice(0, 12)}), measured in this run, interleaved round by round (median of ${c.rounds} round(s)):`,
    '',
    '| workload | path | baseline CPU us/req | current CPU us/req | current / baseline | within 5 % |',
    '|---|---|---:|---:|---:|---|',
  ];
  for (const v of c.verdicts) {
    const ratio = Number.isFinite(v.ratio) ? `${v.ratio.toFixed(3)}x` : 'n/a';
    const within = v.skipped ? `not measured: ${v.skipped}` : v.pass ? 'yes' : 'NO';
    lines.push(`| ${v.workload} | ${v.path} | ${v.baseline_us.toFixed(2)} | ${v.current_us.toFixed(2)} | ${ratio} | ${within} |`);
  }
  const n = (x: number) => x.toLocaleString('en-US');
  const size = (s: AddonSize) =>
    `${n(s.bytes)} bytes${s.stripped ? '' : ' (not stripped: no strip)'}, ${n(s.bytesWithoutBuildPaths)} without its build path ` +
    `(${s.buildPath ? `${s.buildPath.prefix}, ${s.buildPath.count} times` : 'none found'})`;
  const { growth } = c.addon;
  const sign = growth.bytes > 0 ? '+' : '';
  lines.push(
    '',
    `- Shipped addon, stripped as scripts/pack.sh strips it: baseline ${size(c.addon.baseline)}; current ${size(c.addon.current)}: ` +
      (growth.bytes <= 0
        ? `no larger (${n(growth.bytes)} bytes)`
        : growth.noLarger
          ? `no larger than two builds of the same sources differ (${sign}${n(growth.bytes)} bytes, noise up to ${BUILD_NOISE_BYTES})`
          : `LARGER by ${n(growth.bytes)} bytes`),
    `- No speed lost (W1 and W3 server CPU per request within 5 % of the baseline, TypeScript and native paths; addon no larger): ${c.pass ? 'PASS' : 'FAIL'}`,
  );
  for (const n of c.notes) lines.push(`- ${n}`);
  return lines;
}
