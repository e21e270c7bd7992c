// The benchmark harness: runs W1..W11 against this project and its
// peers one after another in the same run, server and client pinned to
// separate cores, prints a table, writes bench/results/<date>[-quick].json
// and an SVG chart next to it. See bench/README.md.
//
//   npm run bench                          full run (< 20 min)
//   npm run bench -- --quick               smoke run (< 3 min)
//   npm run bench -- --baseline <git-rev>  also W1/W3 of that commit, built beside this one
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { stopAll } from '../test/helpers/process';
import { compareWithBaseline, prepareBaseline } from './lib/baseline';
import { BENCH_FEATURE, currentBuild } from './lib/builds';
import { BenchError, CLIENT_CORE, CORES, parameters, parseOptions, ROOT, SERVER_CORE, WORK } from './lib/config';
import { log } from './lib/log';
import { report } from './lib/report';
import { startCaddy } from './lib/servers';
import { NATIVE, TS, Workloads } from './lib/workloads';
import { runW9 } from './lib/w9';
import { runW11 } from './lib/w11';

async function main() {
  const options = parseOptions(process.argv.slice(2));
  const P = parameters(options.quick);
  fs.mkdirSync(WORK, { recursive: true });
  const started = Date.now();
  log(`h3-node benchmark ${options.quick ? '(quick)' : '(full)'} — ${new Date().toISOString()}`);
  log(`machine: ${CORES} cores (${os.cpus()[0]?.model}), load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  log(`taskset: servers on core ${SERVER_CORE}, load clients on core ${CLIENT_CORE}${CORES < 2 ? ' (only one core: NOT separated)' : ''}`);
  log(`server CPU per request = (utime+stime of the server process(es) from /proc over the client's run) / requests; peak RSS = VmHWM`);

  const h3 = await currentBuild();
  if (h3.native.kind === 'flag' && h3.native.addon) {
    log(`native handler: ${path.relative(ROOT, h3.native.addon)} (addon built with --features ${BENCH_FEATURE})`);
  }
  if (h3.native.kind === 'unavailable') log(`native-handler rows left out: ${h3.native.why}`);
  const run = new Workloads(P, h3);
  if (!run.hasCompat) log(`createSecureServer rows left out: dist/index.js does not export it (not merged or not built); W8 runs its peers and the RequestStream row`);
  const baseline = options.baseline ? await prepareBaseline(options.baseline) : undefined;

  for (let round = 1; round <= P.rounds; round++) {
    log(`round ${round}/${P.rounds}: W1 (GET /login, 1 conn x 20 streams, ${P.w1Requests} requests), W2 (${P.w2Fresh} fresh connections after ${P.w2Warmup} unmeasured)`);
    await run.w1w2(round);
    log(`round ${round}/${P.rounds}: W3 (POST 4096-byte bodies, 1 conn x 20 streams, ${P.w3Requests} requests)`);
    await run.w3(round);
  }
  log(`W4: Profile C, one client trying to send 1 GiB, ${P.w4Attempts} attempt(s)`);
  const w4 = await run.w4();
  log(`W5: ${P.w5Idle} idle connections held open, then 64 connections x 16 streams of W1's request`);
  const w5 = [await run.w5(TS, () => run.startH3Node('a', false))];
  if (!options.quick) w5.push(await run.w5('caddy', () => startCaddy(false)));
  let w5Native;
  let ceiling;
  if (run.hasNative) {
    log(`W5 with the native handler (no JavaScript): whether the server or the load client sets W5's pace`);
    w5Native = await run.w5(NATIVE, () => run.startH3Node('a', true));
    log(`load client ceiling: W1's request on 1 conn x ${P.ceilingStreams} streams against the native handler, client saturated`);
    ceiling = await run.clientCeiling();
  }
  log(`W11: Profile A on 1 and 2 workers (W1, then W5's load of 64 connections x 16 streams), ${P.w11Rounds} round(s)`);
  const w11 = await runW11(P, h3);
  log(`W7: one WebTransport session receiving ${P.w7Datagrams} datagrams; GET /stats meanwhile`);
  const w7 = await run.w7();
  log(`W9: WebTransport echo on one session (application API, native echo, webtransport-go): ${P.w9Bytes / 1024 / 1024} MiB on a stream, datagrams for ${P.w9Seconds} s, ${P.w9Rounds} round(s)`);
  const w9 = await runW9(P);
  log(`W8: one connection, ${P.w8Bytes / 1024 / 1024} MiB uploaded to a streaming handler and downloaded from a file, ${P.w8Rounds} round(s)`);
  await run.w8();
  log(`W10: one ${P.w10Bytes / 1024 / 1024} MiB download over impaired links (user-space relay), ${P.w10LossyRounds} round(s) per server on the lossy link, ${P.w10Rounds} at the bottleneck`);
  await run.w10();
  const comparison = baseline ? await compareWithBaseline(P, h3, baseline) : undefined;

  report({ quick: options.quick, P, rows: run.rows, w4, w5, w5Native, ceiling, w7, w8: run.w8Rows, w8FileReads: run.w8FileReads, w9, w10: run.w10Rows, w11, comparison, started });
}

main()
  .catch((e) => {
    console.error(`bench: ${e instanceof BenchError ? e.message : ((e as Error).stack ?? e)}`);
    process.exitCode = 1;
  })
  .finally(() => stopAll());
