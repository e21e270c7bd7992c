// The baseline comparison by instructions instead of CPU time, for a host
// whose CPU time is too noisy to settle "within 5 %" (steal time: single
// rounds of one build read 0.5x to 1.7x of the other). Each build's
// Profile A server (the TypeScript path: W1's GET /login on 1 connection x
// 20 streams) is counted by bench/tools/callgrind-requests.sh (every
// thread's user-space instructions over a window of requests, after a
// warm-up long enough for start-up's compilation and major GC), baseline
// and current in turn in every round. Instruction counts do not move with
// the host; a V8 collection or compilation that falls in one window still
// does, which the median of the rounds' ratios absorbs.
// --api serve or createSecureServer counts that API's launcher instead
// (bench/servers/h3-node-fetch.mjs, h3-node-compat.mjs), native the Rust
// bench handler (the addon variant with the bench-handler feature).
// --workload W3 counts W3 instead (POST /count with 4096-byte bodies;
// createServer's launcher then serves Profile C); W5 counts W5's load
// (W1's request on 64 connections x 16 streams, their handshakes in the
// window) without its idle connections.
//   node --import tsx bench/tools/instructions-ab.ts <git-rev> [--rounds 3] [--requests 20000] [--api createServer|native|serve|createSecureServer] [--workload W1|W3|W5]
import path from 'node:path';
import { prepareBaseline } from '../lib/baseline';
import { currentBuild, type H3NodeBuild } from '../lib/builds';
import { ROOT } from '../lib/config';
import { median } from '../lib/report';
import { runProcess } from '../../test/helpers/process';

function flag(rest: string[], name: string, fallback: number): number {
  const i = rest.indexOf(name);
  const v = i >= 0 ? Number(rest[i + 1]) : fallback;
  if (!Number.isInteger(v) || v < 1) throw new Error(`${name} takes a whole number of at least 1`);
  return v;
}

function nativeArgs(build: H3NodeBuild, profile: string): string[] {
  if (build.native.kind !== 'flag') throw new Error(`${build.name}: no native handler flag (${build.native.kind === 'unavailable' ? build.native.why : 'environment'})`);
  return ['--native', profile, ...(build.native.addon ? ['--addon', build.native.addon] : [])];
}

const LAUNCHERS: Record<string, (build: H3NodeBuild, workload: string) => string[]> = {
  createServer: ({ root }, workload) => [path.join(root, 'bench/servers/h3-node.mjs'), workload === 'W3' ? 'c' : 'a', 'PORT'],
  native: (build, workload) => [path.join(build.root, 'bench/servers/h3-node.mjs'), workload === 'W3' ? 'c' : 'a', 'PORT', ...nativeArgs(build, workload === 'W3' ? 'c' : 'a')],
  serve: ({ root }) => [path.join(root, 'bench/servers/h3-node-fetch.mjs'), 'PORT', 'certs/demo-cert.pem', 'certs/demo-key.pem'],
  createSecureServer: ({ root }) => [path.join(root, 'bench/servers/h3-node-compat.mjs'), 'PORT', 'certs/demo-cert.pem', 'certs/demo-key.pem'],
};

const LOADS: Record<string, Record<string, string>> = {
  W1: { URL_PATH: '/login' },
  W3: { URL_PATH: '/count', LOAD_ARGS: '-method POST -body 4096' },
  W5: { URL_PATH: '/login', CONNS: '64', STREAMS: '16' },
};

/** Instructions per request of `build`'s server for `api` under `workload`, one window of `requests`. */
async function perRequest(build: H3NodeBuild, api: string, workload: string, requests: number): Promise<number> {
  const r = await runProcess('bash', [path.join(ROOT, 'bench/tools/callgrind-requests.sh'), `${workload}-${api}`, String(requests), '--', ...LAUNCHERS[api](build, workload)], {
    env: { WARM: '12000', H3_BENCH_NATIVE_HANDLER: '', ...LOADS[workload] },
    timeoutMs: 900_000,
  });
  const m = / (\d+) per request /.exec(r.stdout);
  if (r.code !== 0 || !m) throw new Error(`callgrind-requests.sh for ${build.name}: ${r.stderr.trim() || r.stdout.trim()}`);
  return Number(m[1]);
}

async function main() {
  const [rev, ...rest] = process.argv.slice(2);
  if (!rev || rev.startsWith('--')) throw new Error('usage: instructions-ab.ts <git-rev> [--rounds 3] [--requests 20000]');
  const rounds = flag(rest, '--rounds', 3);
  const requests = flag(rest, '--requests', 20_000);
  const a = rest.indexOf('--api');
  const api = a >= 0 ? rest[a + 1] : 'createServer';
  if (!(api in LAUNCHERS)) throw new Error(`--api takes ${Object.keys(LAUNCHERS).join(', ')}, got ${api}`);
  const w = rest.indexOf('--workload');
  const workload = w >= 0 ? rest[w + 1] : 'W1';
  if (!(workload in LOADS)) throw new Error(`--workload takes W1, W3 or W5, got ${workload}`);
  const [baseline, current] = [(await prepareBaseline(rev)).build, await currentBuild()];
  const ratios: number[] = [];
  for (let round = 1; round <= rounds; round++) {
    const b = await perRequest(baseline, api, workload, requests);
    const c = await perRequest(current, api, workload, requests);
    ratios.push(c / b);
    console.log(`round ${round}: baseline ${b}, current ${c} instructions/request, ${(c / b).toFixed(3)}x`);
  }
  console.log(`${workload} ${api} against ${rev}: ${median(ratios).toFixed(3)}x instructions per request (median of ${rounds} rounds, ${requests} requests a window)`);
}

main().catch((e) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
