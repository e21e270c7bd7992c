// The soak (docs/reliability.md): a Profile A server in this process, the
// quic-go clients of test/soak/main.go in another, three phases:
//
//   load    N connections x M streams of mixed Profile A requests for S seconds
//   churn   K connections opened, one request each, closed (CONNECTION_CLOSE)
//   vanish  V clients that drop their socket without CONNECTION_CLOSE, freed
//           only by the server's idle timeout
//
// After each phase it waits until the native core's live-connection and
// live-request-stream counts (and the JavaScript side's pending requests)
// are back to 0, then measures RSS the same way as before the phase.
//
// RSS method: process.memoryUsage().rss of the server process, read after
// three full garbage collections 200 ms apart, each V8's "last resort"
// collection (the one that also returns free heap pages to the system), so
// that the young generation V8 grows under load and keeps after an ordinary
// gc() does not count as growth (it did: up to +31 MiB of heapTotal with
// heapUsed unchanged). The reference level is taken
// after a warm-up of the same shape as the load phase (same connections and
// streams, shorter), so that the high-water marks a first burst leaves
// behind (the V8 heap's size, the allocator's arenas, JIT code) are in the
// reference and what is compared is growth beyond them, the sign of a leak.
// Each phase is compared with the level just before it.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import { createServer, Http3Server } from '../../src';
import { PROFILES } from '../../src/demo/profiles';
import { silentLogger } from '../../src/lib/log';
import { runJsonProcess } from '../helpers/process';

const HERE = __dirname;
const BIN = path.join(HERE, 'bin', 'soak');

export interface SoakParams {
  warmup: { conns: number; streams: number; seconds: number };
  load: { conns: number; streams: number; seconds: number; rounds?: number };
  churn: { conns: number; parallel: number };
  /**
   * The vanishing clients advertise this max_idle_timeout; the connection's
   * idle timeout is the smaller of both sides' (RFC 9000 section 10.1), so the
   * server (default 30 s) frees them after this long.
   */
  vanish: { conns: number; idleMs: number };
}

export const FULL: SoakParams = {
  warmup: { conns: 500, streams: 20, seconds: 10 },
  load: { conns: 500, streams: 20, seconds: 60 },
  churn: { conns: 10000, parallel: 64 },
  vanish: { conns: 200, idleMs: 2000 },
};

export const SHORT: SoakParams = {
  warmup: { conns: 50, streams: 10, seconds: 5 },
  load: { conns: 50, streams: 10, seconds: 5 },
  churn: { conns: 500, parallel: 32 },
  vanish: { conns: 20, idleMs: 1000 },
};

export interface ClientResult {
  mode: string;
  conns: number;
  streams?: number;
  seconds: number;
  requests: number;
  failed: number;
  rps: number;
  connects_failed: number;
  per_case: Record<string, number>;
  failure_samples: string[];
}

export interface PhaseResult {
  phase: string;
  client: ClientResult;
  /** Connection closes the server saw during the phase, by who ended them. */
  closes: Record<string, number>;
  /** Milliseconds from the client's exit until every count was back to 0. */
  settleMs: number;
  after: { connectionsOpen: number; requestStreamsOpen: number; pendingRequests: number };
  rssBeforeMiB: number;
  rssAfterMiB: number;
  rssChangePct: number;
  /** V8 heap after the same collections, for reading RSS changes. */
  heapUsedMiB: number;
  heapTotalMiB: number;
}

export interface SoakReport {
  params: SoakParams;
  baselineRssMiB: number;
  phases: PhaseResult[];
}

/** Builds the Go client once (go.mod/go.sum pin quic-go). */
export function buildClient(): string {
  execFileSync('go', ['build', '-o', BIN, '.'], { cwd: HERE, stdio: ['ignore', 'inherit', 'inherit'] });
  return BIN;
}

function runClient(args: string[]): Promise<ClientResult> {
  return runJsonProcess<ClientResult>(BIN, args, undefined, `soak ${args[0]}`);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Gc = (options?: { type: string; execution: string; flavor?: string }) => void;

function getGc(): Gc {
  const existing = (globalThis as { gc?: Gc }).gc;
  if (existing) return existing;
  v8.setFlagsFromString('--expose-gc');
  return vm.runInNewContext('gc') as Gc;
}

async function settledRss(): Promise<number> {
  const gc = getGc();
  for (let i = 0; i < 3; i++) {
    gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
    await sleep(200);
  }
  return process.memoryUsage().rss / (1024 * 1024);
}

function counts(server: Http3Server) {
  const c = server.counters();
  return { connectionsOpen: c.connectionsOpen, requestStreamsOpen: c.requestStreamsOpen, pendingRequests: server.pendingRequests };
}

async function waitForZero(server: Http3Server, limitMs: number): Promise<number> {
  const started = Date.now();
  for (;;) {
    const c = counts(server);
    if (c.connectionsOpen === 0 && c.requestStreamsOpen === 0 && c.pendingRequests === 0) return Date.now() - started;
    if (Date.now() - started > limitMs) return -1;
    await sleep(50);
  }
}

export async function runSoak(params: SoakParams, log: (line: string) => void = () => {}): Promise<SoakReport> {
  const { options, handler } = PROFILES.a.create(silentLogger);
  // Default limits (idle timeout 30 s): the server as deployed.
  const server = createServer({ ...options, logger: silentLogger }, handler);
  const closes: Record<string, number> = {};
  server.on('connectionClose', (info) => (closes[info.initiator] = (closes[info.initiator] ?? 0) + 1));
  const { port } = await server.listen(0, '127.0.0.1');
  const addr = `127.0.0.1:${port}`;
  // Closed connections drain for 3 PTO, which a loaded run inflates.
  const settleLimit = 45000;
  const phases: PhaseResult[] = [];
  try {
    const w = params.warmup;
    const warm = await runClient(['load', '-addr', addr, '-conns', `${w.conns}`, '-streams', `${w.streams}`, '-duration', `${w.seconds}s`]);
    const warmSettle = await waitForZero(server, settleLimit);
    log(`soak: warm-up: ${warm.requests} requests, ${warm.failed} failed; counts 0 after ${warmSettle} ms`);
    const baseline = await settledRss();
    const heap = process.memoryUsage();
    log(
      `soak: warm-up done, RSS ${baseline.toFixed(1)} MiB, ` +
        `V8 heap ${(heap.heapUsed / 1048576).toFixed(1)}/${(heap.heapTotal / 1048576).toFixed(1)} MiB`,
    );

    const loadArgs = ['load', '-conns', `${params.load.conns}`, '-streams', `${params.load.streams}`, '-duration', `${params.load.seconds}s`];
    const rounds = params.load.rounds ?? 1;
    const plan: [string, string[]][] = [
      ...Array.from({ length: rounds }, (_, i): [string, string[]] => [rounds === 1 ? 'load' : `load ${i + 1}`, loadArgs]),
      ['churn', ['churn', '-conns', `${params.churn.conns}`, '-parallel', `${params.churn.parallel}`]],
      ['vanish', ['vanish', '-conns', `${params.vanish.conns}`, '-idle', `${params.vanish.idleMs}ms`]],
    ];
    let before = baseline;
    for (const [phase, args] of plan) {
      for (const k of Object.keys(closes)) delete closes[k];
      const client = await runClient([...args, '-addr', addr]);
      const settleMs = await waitForZero(server, settleLimit);
      const after = counts(server);
      const rssAfter = await settledRss();
      const result: PhaseResult = {
        phase,
        client,
        closes: { ...closes },
        settleMs,
        after,
        rssBeforeMiB: before,
        rssAfterMiB: rssAfter,
        rssChangePct: ((rssAfter - before) / before) * 100,
        heapUsedMiB: process.memoryUsage().heapUsed / (1024 * 1024),
        heapTotalMiB: process.memoryUsage().heapTotal / (1024 * 1024),
      };
      phases.push(result);
      log(
        `soak: ${phase}: ${client.requests} requests, ${client.failed} failed, ${client.rps.toFixed(0)} req/s; ` +
          `closes ${JSON.stringify(result.closes)}; counts 0 after ${settleMs} ms; ` +
          `RSS ${before.toFixed(1)} -> ${rssAfter.toFixed(1)} MiB (${result.rssChangePct.toFixed(1)}%), ` +
          `V8 heap ${result.heapUsedMiB.toFixed(1)}/${result.heapTotalMiB.toFixed(1)} MiB`,
      );
      before = rssAfter;
    }
    return { params, baselineRssMiB: baseline, phases };
  } finally {
    await server.close();
  }
}

// `npm run soak` (full) or `npm run soak -- --short`.
if (require.main === module) {
  const short = process.argv.includes('--short');
  buildClient();
  runSoak(short ? SHORT : FULL, (l) => console.error(l))
    .then((report) => {
      console.log(JSON.stringify(report, null, 2));
      const bad = report.phases.filter(
        (p) => p.client.failed > 0 || p.settleMs < 0 || Math.abs(p.rssChangePct) > 10,
      );
      process.exit(bad.length === 0 ? 0 : 1);
    })
    .catch((e) => {
      console.error(e);
      process.exit(1);
    });
}
