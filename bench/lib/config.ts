// What a bench run is given: its command line, the workload sizes that follow
// from it, where things are, and which core runs what.
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { PYTHON, ROOT } from '../../test/helpers/paths';

export { PYTHON, ROOT };
export const WORK = path.join(ROOT, 'bench/.work');
export const CERT = path.join(ROOT, 'certs/demo-cert.pem');
export const KEY = path.join(ROOT, 'certs/demo-key.pem');
export const LOADCLIENT = path.join(ROOT, 'bench/loadclient/loadclient');
export const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK']).stdout.toString().trim() || 100);

export const CORES = os.cpus().length;
export const SERVER_CORE = '0';
export const CLIENT_CORE = CORES > 1 ? '1' : '0';

/** A failure the user can act on: reported as its one-line message, without a stack. */
export class BenchError extends Error {}

export interface Options {
  quick: boolean;
  /** --baseline <git-rev>: the previous design, measured beside this one. */
  baseline?: string;
}

export function parseOptions(argv: string[]): Options {
  const options: Options = { quick: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--quick') options.quick = true;
    else if (arg === '--baseline' && argv[i + 1] && !argv[i + 1].startsWith('--')) options.baseline = argv[++i];
    else if (arg.startsWith('--baseline=')) options.baseline = arg.slice('--baseline='.length);
    else throw new BenchError(`unknown argument ${arg}; usage: npm run bench -- [--quick] [--baseline <git-rev>]`);
  }
  return options;
}

export type Params = ReturnType<typeof parameters>;

export function parameters(quick: boolean) {
  return {
    rounds: quick ? 1 : 5,
    /** Unmeasured requests before each measured W1/W3 run, for every server. */
    warmup: quick ? 3_000 : 10_000,
    w1Requests: quick ? 10_000 : 100_000,
    /** W2: fresh connections per server per round (one full handshake and one GET /login each). */
    w2Fresh: quick ? 100 : 2_000,
    /**
     * W2's unmeasured fresh connections before those: V8 optimizes the
     * connection path (open, close, its log line) only after 1,100 to 3,100
     * of them even on a server W1 has warmed (--trace-opt, bench/README.md).
     */
    w2Warmup: quick ? 20 : 3_000,
    w3Requests: quick ? 5_000 : 50_000,
    w4Attempts: quick ? 1 : 3,
    w5Idle: quick ? 300 : 1000,
    w5Requests: quick ? 10_000 : 100_000,
    w7Datagrams: quick ? 20_000 : 100_000,
    /** Streams on the one connection of the load-client ceiling probe. */
    ceilingStreams: 100,
    /** W8: bytes of each upload and download (1 GiB; quick: 64 MiB), rounds, the client's limit per transfer. */
    w8Bytes: (quick ? 64 : 1024) * 1024 * 1024,
    /** W8: an unmeasured upload first, as W1/W3 warm up (JIT, and the heap's first growth before a full GC). */
    w8Warmup: (quick ? 16 : 64) * 1024 * 1024,
    w8Rounds: quick ? 1 : 3,
    w8TimeoutS: quick ? 60 : 300,
    /** W10: the download's size, rounds per link and server, and the client's limit. */
    w10Bytes: 10 * 1024 * 1024,
    w10Rounds: quick ? 1 : 3,
    /**
     * W10's lossy link takes more rounds: at 1 % random loss one build's
     * goodput ranged 0.88-8.06 MB/s over 12 rounds (how far slow start got
     * before the first loss), so three rounds' median can move 2x between
     * two runs of one build (docs/notes/2026-12-04-remaining-rows-on-one-host.md).
     */
    w10LossyRounds: quick ? 1 : 9,
    /** W9: bytes echoed on one bidirectional stream, seconds of datagram round trips, rounds. */
    w9Bytes: (quick ? 32 : 256) * 1024 * 1024,
    w9Seconds: quick ? 3 : 10,
    w9Rounds: quick ? 1 : 3,
    /** W11: rounds of W1 and W5's load on 1 and 2 workers. */
    w11Rounds: quick ? 1 : 3,
    w10TimeoutS: 120,
  };
}
