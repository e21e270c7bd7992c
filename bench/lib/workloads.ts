// The workloads W1..W8 (bench/README.md, "What runs"): each starts its
// servers fresh, warms them, measures, stops them, and keeps one row per
// measured run.
import fs from 'node:fs';
import path from 'node:path';
import type { H3NodeBuild } from './builds';
import { fetchStats, h2Load, h3Load, H3LoadOptions, Load, Measured, runClient, runToEnd, startClient, Transfer, transfer } from './clients';
import { LOADCLIENT, Params, PYTHON, ROOT, SERVER_CORE, WORK } from './config';
import { impairedLink, LinkRules } from '../../test/helpers/impaired-link';
import { statusKiB } from './procfs';
import { runProcess } from '../../test/helpers/process';
import { log } from './log';
import {
  counters,
  H3NodeServer,
  hasCreateSecureServer,
  hasLauncher,
  bunBinary,
  Server,
  sleep,
  startCaddy,
  startCaddyW8,
  startBoundaryFloor,
  startH3NodeCompatWithInitialWindow,
  startH3Node,
  startH3NodeCompat,
  startH3NodeCompatSameBytes,
  startBunFetch,
  startH3NodeFetch,
  startH3NodeHono,
  startFetchFloor,
  startH3NodeStream,
  startH3NodeW8Native,
  startNodeHttp2,
  startNodeHttp2Compat,
  stopServer,
} from './servers';

export type Row = Measured & { workload: string; variant: string; round: number };

/** UDP receive + send calls per request (NaN where the run did not read the counters). */
export const udpSyscallsPerReq = (m: Measured) => (m.udp_recv_calls_per_req ?? NaN) + (m.udp_send_calls_per_req ?? NaN);

export const TS = 'h3-node (TypeScript)';
export const NATIVE = 'h3-node (native)';
/**
 * createServer again with a `date` field added to each answer
 * (bench/servers/h3-node.mjs --date): the field createSecureServer must send
 * and createServer's exchange does not, whose bytes take W1's round of 20
 * answers past one packet (docs/design.md, "W1's two fields and the packet
 * they overflow"). W1 and W3.
 */
export const TS_DATE = 'h3-node (createServer + date)';
/** The node:http2-compatible API (createSecureServer + compat-app.mjs). */
export const COMPAT = 'h3-node (createSecureServer)';
/**
 * The same listener with `date` and `content-length` left out of every
 * answer (bench/servers/h3-node-compat.mjs, H3_BENCH_SAME_BYTES): its packets
 * are createServer's byte for byte, so the row beside createServer's
 * measures the API alone. W1 and W3; an extra view, not the issue's check.
 */
export const COMPAT_SAME_BYTES = 'h3-node (createSecureServer, no date or content-length)';
/** W1/W3's routes as a fetch handler through serve({ fetch }) (bench/servers/h3-node-fetch.mjs). */
export const SERVE = 'h3-node (serve)';
/** W1's routes as a Hono app (a middleware, three routes) through serve({ fetch: app.fetch }) (bench/servers/h3-node-hono.mjs). W1 only. */
export const HONO = 'h3-node (serve, Hono app)';
/**
 * createSecureServer making one platform Request per request and reading
 * the fetch handler's Response, nothing else (bench/servers/fetch-floor.mjs):
 * the floor under serve's row that the platform's own classes set.
 */
export const FETCH_FLOOR = 'h3-node (fetch floor: a Request and a Response per request)';
/** Bun 1.4.4's HTTP/3 server running serve's fetch handler (bench/peers/bun-fetch.mjs): the JavaScript peer. W1 and W3. */
export const BUN = 'bun (Bun.serve, http3)';
/** The real core with the least JavaScript per request (bench/servers/boundary-floor.mjs): no API, W6's floor. */
export const FLOOR = 'h3-node (boundary floor)';
/** node:http2's compatibility API running the same listener, loaded with h2load. */
export const H2_COMPAT = 'node-http2 compat (h2load)';
/** W8's other servers (the first is COMPAT). */
export const W8_STREAM = 'h3-node (RequestStream)';
export const W8_CADDY = 'caddy (proxy / file_server)';
export const W8_H2 = 'node-http2 compat';
/** W8 with no JavaScript in the transfer (bench_transfer.rs): what any API on this core could reach at most. */
export const W8_NATIVE = 'h3-node (native transfer, no JavaScript)';
/**
 * A download row's variant when the client reads with UDP_GRO: the client's
 * per-datagram receive work then runs on its own core rather than in the
 * server's sendmsg (loopback; bench/README.md, "What sets W8's pace").
 */
export const w8Gro = (variant: string) => `${variant}, client reads with UDP_GRO`;
/** The servers whose download is measured a second time with the client reading with UDP_GRO. */
const W8_GRO_SERVERS = new Set<string>([COMPAT, W8_CADDY]);

export type W8Row = Transfer & { variant: string; round: number };

/**
 * W8's file read alone on the server core, no network (bench/tools/fs-read-cost.mjs):
 * as the download listener reads it (`streams`), and as the native transfer does (`raw`).
 */
export interface W8FileRead {
  mode: 'streams' | 'raw';
  cpu_s_per_gib: number;
}

/** W10's links: a lossy long path, and a bottleneck. */
export const W10_LINKS: Record<string, LinkRules & { title: string; rateMbps?: number }> = {
  lossy: { title: '30 ms RTT, 1 % loss each way', delayMs: 15, loss: 0.01 },
  bottleneck: { title: '100 Mbit/s bottleneck, 20 ms RTT, 1-BDP drop-tail queue', delayMs: 10, rateMbps: 100 },
};
export const W10_CADDY = 'caddy (file_server)';
/** W10's extra server on the bottleneck: createSecureServer starting at quic-go's and Chromium's window. */
export const W10_IW = 32;
export const W10_COMPAT_IW = `h3-node (createSecureServer, initialWindow ${W10_IW})`;
export type W10Row = Transfer & {
  variant: string;
  link: string;
  round: number;
  queue_drops: number;
  loss_drops: number;
  /** UDP payload bytes the relay passed on to the client (the framing efficiency's denominator). */
  delivered_bytes: number;
  /** How late the relay's delay timers fired (its own fidelity), mean and p99 over the transfer's datagrams. */
  relay_late_mean_ms: number;
  relay_late_p99_ms: number;
};

const warm = (n: number, extra: string[] = []) => ['-conns', '1', '-streams', '20', '-requests', String(n), ...extra];
const post4096 = ['-method', 'POST', '-body', '4096'];

/** W1's measured run on a started server: unmeasured warm-up (JIT, pools), then `GET /login` on 1 connection x 20 streams. */
export async function measureW1(P: Params, s: Server, port: number, options: H3LoadOptions = {}): Promise<Measured> {
  await h3Load(s, `https://127.0.0.1:${port}/login`, warm(P.warmup));
  return h3Load(s, `https://127.0.0.1:${port}/login`, warm(P.w1Requests), options);
}

/** W3's measured run on a started server: warm-up, then `POST /count` with 4096-byte bodies on 1 connection x 20 streams. */
export async function measureW3(P: Params, s: Server, port: number, options: H3LoadOptions = {}): Promise<Measured> {
  await h3Load(s, `https://127.0.0.1:${port}/count`, [...post4096, ...warm(P.warmup)]);
  return h3Load(s, `https://127.0.0.1:${port}/count`, [...post4096, ...warm(P.w3Requests)], options);
}

/** A server a standalone tool starts fresh for each of its rows: the row's name and how to start it for Profile A (W1) or C (W3). */
export type ToolServer = [variant: string, start: (profile: 'a' | 'c') => Promise<(Server & { port: number }) | H3NodeServer>];

/**
 * The standalone tools' loop (bench/tools/w6.ts, w1w3-api.ts): `P.rounds`
 * rounds of the given workloads through every server in turn, each started
 * fresh and stopped after its row, in the full run's order, server CPU from
 * schedstat; createServer's launchers also give UDP syscalls per request.
 */
export async function measureRounds(P: Params, workloads: ReadonlyArray<'W1' | 'W3'>, servers: ToolServer[]): Promise<Row[]> {
  const rows: Row[] = [];
  for (let round = 1; round <= P.rounds; round++) {
    for (const workload of workloads) {
      const [profile, measure] = workload === 'W1' ? (['a', measureW1] as const) : (['c', measureW3] as const);
      for (const [variant, start] of servers) {
        const s = await start(profile);
        const udp = 'launcher' in s ? { counters: () => counters(s) } : {};
        const m = await measure(P, s, s.port, { exactCpu: true, ...udp });
        rows.push({ workload, variant, round, ...m });
        const calls = m.udp_recv_calls_per_req !== undefined ? `  UDP syscalls ${udpSyscallsPerReq(m).toFixed(3)}/req` : '';
        log(`round ${round} ${workload} ${variant.padEnd(56)} ${m.rps.toFixed(0).padStart(6)} req/s  ${(m.cpu_us_per_req_exact ?? NaN).toFixed(2)} us/req${calls}`);
        await stopServer(s);
      }
    }
  }
  return rows;
}

/**
 * W2's measured run on a started server: P.w2Warmup unmeasured fresh
 * connections (the connection open/close paths' JIT and pools), then P.w2Fresh fresh
 * connections one after another, each a full handshake (the client keeps no
 * session tickets) and one `GET /login`. Server CPU to the nanosecond
 * (schedstat): the figure is CPU per fresh connection, to within a few percent.
 */
export async function measureW2(P: Params, s: Server, port: number): Promise<Measured> {
  const url = `https://127.0.0.1:${port}/login`;
  await h3Load(s, url, ['-fresh', '-requests', String(P.w2Warmup)]);
  return h3Load(s, url, ['-fresh', '-requests', String(P.w2Fresh)], { exactCpu: true });
}

export interface W4Result {
  attempts: Array<{ status: number; after_ms: number; past_cap: number; client_handed: number }>;
}

export interface W5Result {
  server: string;
  idle: number;
  rss_before_kib: number;
  rss_idle_kib: number;
  per_idle_kib: number;
  load: Measured;
}

export interface W7Result {
  sent: number;
  send_seconds: number;
  echoed: number;
  usage_datagrams: number;
  quiche_dgram_recv: number;
  wt_datagrams_counted: number;
  stats: Measured;
}

export class Workloads {
  readonly rows: Row[] = [];
  readonly w8Rows: W8Row[] = [];
  readonly w8FileReads: W8FileRead[] = [];
  readonly w10Rows: W10Row[] = [];

  /** `h3` is the h3-node measured (this checkout); without a native path the native-handler rows are left out. */
  constructor(
    private readonly P: Params,
    private readonly h3: H3NodeBuild,
  ) {}

  get hasNative(): boolean {
    return this.h3.native.kind !== 'unavailable';
  }

  /** Whether dist/ has createSecureServer (until it is merged and built, its rows are left out). */
  get hasCompat(): boolean {
    return hasCreateSecureServer(this.h3);
  }

  /** Whether the checkout has serve()'s launcher (added with the W6 rows for serve). */
  get hasServe(): boolean {
    return hasLauncher(this.h3, 'h3-node-fetch.mjs');
  }

  /** Whether the checkout has the floor's launcher (and a native handler to set it beside). */
  get hasFloor(): boolean {
    return this.hasNative && hasLauncher(this.h3, 'boundary-floor.mjs');
  }

  /**
   * W1's or W3's rows for createSecureServer, serve and the boundary floor,
   * those this checkout has: each started, measured (server CPU from
   * schedstat) and stopped in turn.
   */
  private async apiRows(workload: 'W1' | 'W3', profile: 'a' | 'c', measure: typeof measureW1, round: number) {
    const servers: Array<[string, boolean, () => Promise<Server & { port: number }>]> = [
      [COMPAT, this.hasCompat, () => startH3NodeCompat(this.h3)],
      [COMPAT_SAME_BYTES, this.hasCompat, () => startH3NodeCompatSameBytes(this.h3)],
      [SERVE, this.hasServe, () => startH3NodeFetch(this.h3)],
      [HONO, workload === 'W1' && hasLauncher(this.h3, 'h3-node-hono.mjs'), () => startH3NodeHono(this.h3)],
      [FETCH_FLOOR, hasLauncher(this.h3, 'fetch-floor.mjs'), () => startFetchFloor(this.h3)],
      [FLOOR, this.hasFloor, () => startBoundaryFloor(this.h3, profile)],
      // The peer, measured between this project's rows of the round (the checks pair serve's and Bun's by round).
      [BUN, bunBinary() !== undefined, () => startBunFetch()],
    ];
    for (const [variant, present, start] of servers) {
      if (!present) continue;
      const s = await start();
      this.keep(workload, variant, round, await measure(this.P, s, s.port, { exactCpu: true }));
      await stopServer(s);
    }
  }

  startH3Node(profile: 'a' | 'b' | 'c', native: boolean): Promise<H3NodeServer> {
    return startH3Node(this.h3, profile, native);
  }

  keep(workload: string, variant: string, round: number, m: Measured) {
    this.rows.push({ workload, variant, round, ...m });
    log(
      `  ${workload} ${variant.padEnd(22)} ${m.rps.toFixed(0).padStart(7)} req/s  p50 ${m.p50_ms.toFixed(2)} ms  p99 ${m.p99_ms.toFixed(2)} ms  ` +
        `cpu ${m.cpu_us_per_req.toFixed(1)} us/req${m.cpu_us_per_req_exact !== undefined ? ` (schedstat ${m.cpu_us_per_req_exact.toFixed(1)})` : ''}  peak RSS ${(m.peak_rss_kib / 1024).toFixed(1)} MiB  errors ${m.errors + m.timeouts}` +
        (m.client_cpu_s !== undefined ? `  client cpu ${((100 * m.client_cpu_s) / m.seconds).toFixed(0)}%` : '') +
        (m.udp_recv_calls_per_req !== undefined ? `  UDP syscalls ${udpSyscallsPerReq(m).toFixed(3)}/req` : ''),
    );
  }

  /** W1 and W2's servers: h3-node on both paths and Caddy, answering Profile A. */
  profileAServers(): Array<[string, () => Promise<Server & { port?: number; portA?: number }>]> {
    return [
      [TS, () => this.startH3Node('a', false)],
      ...(this.hasNative ? [[NATIVE, () => this.startH3Node('a', true)] as [string, () => Promise<H3NodeServer>]] : []),
      ['caddy', () => startCaddy(false)],
    ];
  }

  async w1w2(round: number) {
    const P = this.P;
    for (const [variant, start] of this.profileAServers()) {
      const s = await start();
      const p = s.port ?? s.portA!;
      // Exact CPU (schedstat) for every h3-node row: W6 and the createSecureServer checks
      // compare them with each other to within a few percent, which /proc's ticks do not give.
      // The TypeScript row's UDP syscalls per request from the native counters (target).
      const udp = variant === TS ? { counters: () => counters(s as H3NodeServer) } : {};
      this.keep('W1', variant, round, await measureW1(P, s, p, { exactCpu: variant !== 'caddy', ...udp }));
      // The API rows right after createServer's, its server idle meanwhile:
      // the createSecureServer-vs-createServer check pairs the two rows of a
      // round, and this VM's speed drifts over the minutes the other
      // servers' W1 and W2 would put between them.
      if (variant === TS) {
        await this.apiRows('W1', 'a', measureW1, round);
        const d = await startH3Node(this.h3, 'a', false, 1, SERVER_CORE, true);
        this.keep('W1', TS_DATE, round, await measureW1(P, d, d.port, { exactCpu: true, counters: () => counters(d) }));
        await stopServer(d);
      }
      this.keep('W2', variant, round, await measureW2(P, s, p));
      await stopServer(s);
    }
    const h2 = await startNodeHttp2('a');
    await h2Load(h2, `https://127.0.0.1:${h2.port}/login`, P.warmup);
    this.keep('W1', 'node-http2 (h2load)', round, await h2Load(h2, `https://127.0.0.1:${h2.port}/login`, P.w1Requests));
    await stopServer(h2);
    const h2c = await startNodeHttp2Compat();
    await h2Load(h2c, `https://127.0.0.1:${h2c.port}/login`, P.warmup);
    this.keep('W1', H2_COMPAT, round, await h2Load(h2c, `https://127.0.0.1:${h2c.port}/login`, P.w1Requests));
    await stopServer(h2c);
  }

  /** W2 alone (bench/tools/w2.ts): each server started fresh, W2's warm-up and measured run, stopped. */
  async w2(round: number) {
    for (const [variant, start] of this.profileAServers()) {
      const s = await start();
      this.keep('W2', variant, round, await measureW2(this.P, s, s.port ?? s.portA!));
      await stopServer(s);
    }
  }

  async w3(round: number) {
    const P = this.P;
    const body = path.join(WORK, 'body-4096.bin');
    fs.writeFileSync(body, Buffer.alloc(4096, 'x'));
    for (const native of this.hasNative ? [false, true] : [false]) {
      const s = await this.startH3Node('c', native);
      this.keep('W3', native ? NATIVE : TS, round, await measureW3(P, s, s.port, { exactCpu: true }));
      await stopServer(s);
      // Right after createServer's row, as in W1 (the check pairs them by round).
      if (!native) {
        await this.apiRows('W3', 'c', measureW3, round);
        const d = await startH3Node(this.h3, 'c', false, 1, SERVER_CORE, true);
        this.keep('W3', TS_DATE, round, await measureW3(P, d, d.port, { exactCpu: true }));
        await stopServer(d);
      }
    }
    const c = await startCaddy(true);
    this.keep('W3', 'caddy -> node http', round, await measureW3(P, c, c.portC));
    await stopServer(c);
    const h2 = await startNodeHttp2('c');
    await h2Load(h2, `https://127.0.0.1:${h2.port}/count`, P.warmup, body);
    this.keep('W3', 'node-http2 (h2load)', round, await h2Load(h2, `https://127.0.0.1:${h2.port}/count`, P.w3Requests, body));
    await stopServer(h2);
  }

  async w4(): Promise<W4Result> {
    const out = await runClient(process.execPath, ['--expose-gc', '--import', 'tsx', 'bench/upload-cap.ts', String(this.P.w4Attempts)]);
    const attempts = [...out.matchAll(/status (\d+) after ([\d.]+) ms;.*client handed (\d+) of \d+ bytes.*= (-?\d+) past the cap/g)].map((m) => ({
      status: Number(m[1]),
      after_ms: Number(m[2]),
      client_handed: Number(m[3]),
      past_cap: Number(m[4]),
    }));
    for (const a of attempts) log(`  W4 413 after ${a.after_ms} ms, ${a.past_cap} bytes read past the cap, client had handed ${a.client_handed} bytes to QUIC`);
    return { attempts };
  }

  async w5(variant: string, start: () => Promise<Server & { port?: number; portA?: number }>): Promise<W5Result> {
    const s = await start();
    const p = s.port ?? s.portA!;
    // Warm the request path first (JIT, heap, pools), so the baseline is not
    // charged to the idle connections.
    await h3Load(s, `https://127.0.0.1:${p}/login`, warm(5000));
    await sleep(500);
    const before = statusKiB(s.pids, 'VmRSS');
    let idleRss = 0;
    let idleCount = 0;
    const load = await h3Load(
      s,
      `https://127.0.0.1:${p}/login`,
      ['-idle', String(this.P.w5Idle), '-idle-hold', '1500ms', '-conns', '64', '-streams', '16', '-requests', String(this.P.w5Requests), '-timeout', '10s'],
      {
        onStderrLine: (line) => {
          const m = line.match(/^IDLE_READY (\d+)/);
          if (m) {
            idleCount = Number(m[1]);
            // Sample once the server has settled (the client holds for 1.5 s).
            setTimeout(() => (idleRss = statusKiB(s.pids, 'VmRSS')), 1000);
          }
        },
      },
    );
    await stopServer(s);
    const per = idleCount ? (idleRss - before) / idleCount : 0;
    const r = { server: variant, idle: idleCount, rss_before_kib: before, rss_idle_kib: idleRss, per_idle_kib: per, load };
    this.rows.push({ workload: 'W5', variant, round: 1, ...load });
    log(
      `  W5 ${variant.padEnd(22)} ${idleCount} idle: RSS ${(before / 1024).toFixed(1)} -> ${(idleRss / 1024).toFixed(1)} MiB = ${per.toFixed(1)} KiB/conn; ` +
        `then 64x16: ${load.rps.toFixed(0)} req/s, p99 ${load.p99_ms.toFixed(2)} ms, errors ${load.errors + load.timeouts}`,
    );
    return r;
  }

  /**
   * The load client's own ceiling: W1's request on one connection with many
   * streams against the native handler, so that the client, not the round
   * trip or the server, is the limit (its CPU near 100% proves it).
   */
  async clientCeiling(): Promise<Measured> {
    const P = this.P;
    const s = await this.startH3Node('a', true);
    const url = `https://127.0.0.1:${s.port}/login`;
    const args = ['-conns', '1', '-streams', String(P.ceilingStreams)];
    await h3Load(s, url, [...args, '-requests', String(P.warmup)]);
    const m = await h3Load(s, url, [...args, '-requests', String(P.w1Requests)]);
    await stopServer(s);
    this.keep('W1', `client ceiling (native, 1x${P.ceilingStreams})`, 1, m);
    return m;
  }

  /**
   * W8: per round, each server started fresh, warmed with an unmeasured
   * upload of P.w8Warmup bytes and an unmeasured download of the file, then
   * one upload of P.w8Bytes (POST /upload,
   * consumed as a stream) and one download (GET /file) on one connection
   * each. HTTP/3 with the quic-go client, except node:http2
   * (HTTP/2 over TLS, Go's net/http). A server that fails to start or a
   * transfer that fails is logged and left out (its checks read "not
   * measured"), so one stall does not lose the rest of the run. `only`
   * and `directions` narrow it (bench/tools/w8.ts); the full run uses all.
   */
  async w8(only?: (variant: string) => boolean, directions: ReadonlyArray<'upload' | 'download'> = ['upload', 'download']) {
    const P = this.P;
    const file = w8File(P.w8Bytes);
    let servers: Array<[string, 'h3' | 'h2', () => Promise<Server & { port: number }>]> = [];
    if (this.hasCompat) servers.push([COMPAT, 'h3', () => startH3NodeCompat(this.h3, file)]);
    servers.push(
      [W8_STREAM, 'h3', () => startH3NodeStream(this.h3, file)],
      [W8_CADDY, 'h3', () => startCaddyW8(file)],
      [W8_H2, 'h2', () => startNodeHttp2Compat(file)],
    );
    const native = this.h3.native;
    if (native.kind === 'flag' && native.addon && hasLauncher(this.h3, 'h3-node-w8-native.mjs')) {
      const addon = native.addon;
      servers.splice(1, 0, [W8_NATIVE, 'h3', () => startH3NodeW8Native(this.h3, file, addon)]);
    }
    if (only) servers = servers.filter(([variant]) => only(variant));
    for (let round = 1; round <= P.w8Rounds; round++) {
      for (const [variant, proto, start] of servers) {
        let s: Server & { port: number };
        try {
          s = await start();
        } catch (e) {
          log(`  W8 ${variant}: did not start: ${(e as Error).message}`);
          continue;
        }
        const warm = await transfer(s, `https://127.0.0.1:${s.port}/upload`, 'upload', proto, P.w8Warmup, P.w8TimeoutS);
        if (warm.error) log(`  W8 ${variant}: warm-up upload failed: ${warm.error}`);
        if (directions.includes('download')) {
          // The download path's first use (the file stream, the response's
          // write and drain: V8 compiling them) stays out of the measured
          // download too. The GET serves the whole file, so it is the full
          // size; unmeasured, it needs no readThrough (the measured one has its own).
          const warmDown = await transfer(s, `https://127.0.0.1:${s.port}/file`, 'download', proto, P.w8Bytes, P.w8TimeoutS);
          if (warmDown.error) log(`  W8 ${variant}: warm-up download failed: ${warmDown.error}`);
        }
        for (const direction of directions) {
          const urlPath = direction === 'upload' ? '/upload' : '/file';
          if (direction === 'download') readThrough(file);
          const t = await transfer(s, `https://127.0.0.1:${s.port}${urlPath}`, direction, proto, P.w8Bytes, P.w8TimeoutS);
          this.w8Log(t, variant, round);
          if (direction === 'download' && W8_GRO_SERVERS.has(variant)) {
            readThrough(file);
            const g = await transfer(s, `https://127.0.0.1:${s.port}${urlPath}`, direction, proto, P.w8Bytes, P.w8TimeoutS, true);
            this.w8Log(g, w8Gro(variant), round);
          }
        }
        await stopServer(s);
      }
    }
    if (directions.includes('download')) await this.w8FileReadCost(file);
  }

  private w8Log(t: Transfer, variant: string, round: number) {
    this.w8Rows.push({ ...t, variant, round });
    const mib = (kib: number) => (kib / 1024).toFixed(1);
    log(
      `  W8 ${variant.padEnd(28)} ${t.direction.padEnd(8)} ` +
        (t.error
          ? `FAILED: ${t.error}`
          : `${t.mb_per_s.toFixed(0).padStart(5)} MB/s  ${t.seconds.toFixed(2)} s  server cpu ${t.cpu_s_per_gib.toFixed(2)} s/GiB  ` +
            `RSS ${mib(t.rss_before_kib)} -> peak ${mib(t.rss_peak_kib)} MiB (+${mib(t.rss_growth_kib)})  client cpu ${((100 * t.client_cpu_s) / t.seconds).toFixed(0)}%`),
    );
  }

  /**
   * What the download listener's file reading costs beside the native
   * transfer's, measured in the same run (bench/README.md, "What sets W8's
   * pace"): each way P.w8Rounds times, pinned like the servers.
   */
  private async w8FileReadCost(file: string) {
    for (let round = 1; round <= this.P.w8Rounds; round++) {
      for (const mode of ['streams', 'raw'] as const) {
        readThrough(file);
        const args = ['-c', SERVER_CORE, process.execPath, 'bench/tools/fs-read-cost.mjs', '--json', ...(mode === 'raw' ? ['--raw'] : []), file];
        const r = await runProcess('taskset', args, { cwd: ROOT, timeoutMs: 120_000 });
        try {
          const { cpu_s_per_gib } = JSON.parse(r.stdout.trim()) as { cpu_s_per_gib: number };
          this.w8FileReads.push({ mode, cpu_s_per_gib });
          log(`  W8 file read alone (${mode}) ${cpu_s_per_gib.toFixed(2)} s/GiB`);
        } catch {
          log(`  W8 file read alone (${mode}) failed: ${r.stderr.trim().split('\n')[0] ?? ''}`);
        }
      }
    }
  }

  /**
   * W10: goodput of one 10 MiB download (GET /file, quic-go client) through
   * the user-space impairment relay (test/helpers/impaired-link.ts, run in
   * this harness process), per link, this server (createSecureServer) and
   * Caddy's file_server alternating, each started fresh per round.
   * `only`: one link's name (bench/tools/w10.ts --link); every link without it.
   */
  async w10(only?: string) {
    const P = this.P;
    const file = w8File(P.w10Bytes);
    const servers: Array<[string, () => Promise<Server & { port: number }>]> = [];
    if (this.hasCompat) servers.push([COMPAT, () => startH3NodeCompat(this.h3, file)]);
    servers.push([W10_CADDY, () => startCaddyW8(file)]);
    for (const [link, rules] of Object.entries(W10_LINKS)) {
      if (only !== undefined && link !== only) continue;
      const linkServers = [...servers];
      if (link === 'bottleneck' && this.hasCompat) linkServers.push([W10_COMPAT_IW, () => startH3NodeCompatWithInitialWindow(this.h3, W10_IW, file)]);
      const rounds = link === 'lossy' ? P.w10LossyRounds : P.w10Rounds;
      for (let round = 1; round <= rounds; round++) {
        for (const [variant, start] of linkServers) {
          let s: Server & { port: number };
          try {
            s = await start();
          } catch (e) {
            log(`  W10 ${variant}: did not start: ${(e as Error).message}`);
            continue;
          }
          readThrough(file);
          const relay = await impairedLink(s.port, rules);
          const t = await transfer(s, `https://127.0.0.1:${relay.port}/file`, 'download', 'h3', P.w10Bytes, P.w10TimeoutS);
          relay.close();
          await stopServer(s);
          const late = relay.lateness();
          const row = {
            ...t,
            variant,
            link,
            round,
            queue_drops: relay.dropped.queueFull,
            delivered_bytes: relay.delivered.toClientBytes,
            loss_drops: relay.dropped.toClient + relay.dropped.toServer,
            relay_late_mean_ms: late.meanMs,
            relay_late_p99_ms: late.p99Ms,
          };
          this.w10Rows.push(row);
          log(
            `  W10 ${link.padEnd(10)} ${variant.padEnd(28)} ` +
              (t.error
                ? `FAILED: ${t.error}`
                : `${t.mb_per_s.toFixed(2).padStart(6)} MB/s  ${t.seconds.toFixed(2)} s  relay dropped ${row.loss_drops} (loss) + ${row.queue_drops} (queue full); ` +
                  `its delay late by ${late.meanMs.toFixed(2)} ms mean, ${late.p99Ms.toFixed(1)} ms p99, ${late.maxMs.toFixed(1)} ms max`),
          );
        }
      }
    }
  }

  async w7(): Promise<W7Result> {
    const s = await this.startH3Node('b', false);
    const url = `https://127.0.0.1:${s.port}/stats`;
    // /stats polled on one stream for the whole time the sender runs.
    const poller = startClient(LOADCLIENT, ['-url', url, '-conns', '1', '-streams', '1', '-duration', '120s']);
    await sleep(300);
    const sender = JSON.parse(
      await runClient(PYTHON, ['bench/w7_datagrams.py', '--port', String(s.port), '--count', String(this.P.w7Datagrams)]),
    ) as { status: number; sent: number; seconds: number; echoed: number };
    // SIGTERM ends the poller early; it still prints its result.
    poller.signal('SIGTERM');
    const statsLoad = JSON.parse(await runToEnd(poller)) as Load;
    await sleep(200);
    const c = await counters(s);
    const doc = await fetchStats(s.port);
    await stopServer(s);
    const stats: Measured = {
      ...statsLoad,
      server: 'h3-node',
      client: 'quic-go h3',
      cpu_us_per_req: 0,
      peak_rss_kib: 0,
    };
    const r: W7Result = {
      sent: sender.sent,
      send_seconds: sender.seconds,
      echoed: sender.echoed,
      usage_datagrams: doc?.usage?.datagrams ?? -1,
      quiche_dgram_recv: c.quicDatagramsReceived,
      wt_datagrams_counted: c.wtDatagramsReceived,
      stats,
    };
    log(
      `  W7 sent ${r.sent} datagrams in ${r.send_seconds.toFixed(2)} s; usage.datagrams ${r.usage_datagrams}, quiche dgram_recv ${r.quiche_dgram_recv}; ` +
        `/stats meanwhile: ${stats.requests} requests, p50 ${stats.p50_ms} ms, p99 ${stats.p99_ms} ms`,
    );
    return r;
  }
}

/**
 * Reads W8's file once, unmeasured, so that every server's download reads
 * it from the page cache. Without this the first server to read it after
 * its pages were dropped paid for filling them: measured, a 1 GiB download
 * through createSecureServer took 6.4 s of server CPU from a cold cache and
 * 3.1 s from a warm one (the difference in the thread pool's reads), and
 * that server was always the same one, the first of the round.
 */
function readThrough(file: string): void {
  const buf = Buffer.allocUnsafe(1 << 20);
  const fd = fs.openSync(file, 'r');
  try {
    while (fs.readSync(fd, buf, 0, buf.length, null) > 0);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * W8's file, created once per size under bench/.work and kept: sparse (a
 * hole, no disk blocks), so creating it is instant and reading it is the
 * kernel zero-filling page-cache pages, the same cost for every server.
 */
export function w8File(bytes: number): string {
  const file = path.join(WORK, `w8-${bytes / 1024 / 1024}MiB.bin`);
  if (!fs.existsSync(file) || fs.statSync(file).size !== bytes) {
    fs.writeFileSync(file, '');
    fs.truncateSync(file, bytes);
  }
  return file;
}
