// W2 alone, for working on the handshake's cost without the full run: each
// server (h3-node TypeScript and native handler, Caddy) started fresh per
// round, W2's unmeasured warm-up and its measured fresh connections, then
// the W2 section the full run prints (CPU per fresh connection, its spread
// over the rounds, the ratio to Caddy) and the TTFB ratio. Same cores, same
// client, same code as `npm run bench` (bench/lib). Writes nothing under
// bench/results; with --json <file> the rows and the summary go there.
//   node --import tsx bench/tools/w2.ts [--rounds 3] [--fresh 2000] [--warmup N] [--quick] [--json <file>]
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { stopAll } from '../../test/helpers/process';
import { currentBuild } from '../lib/builds';
import { CLIENT_CORE, parameters, SERVER_CORE, WORK } from '../lib/config';
import { log } from '../lib/log';
import { median, w2Lines, w2Summary } from '../lib/report';
import { TS, Workloads } from '../lib/workloads';

async function main() {
  const { values } = parseArgs({
    options: { rounds: { type: 'string', default: '3' }, fresh: { type: 'string' }, warmup: { type: 'string' }, quick: { type: 'boolean', default: false }, json: { type: 'string' } },
  });
  const P = { ...parameters(values.quick!), rounds: Number(values.rounds) };
  if (values.fresh) P.w2Fresh = Number(values.fresh);
  if (values.warmup) P.w2Warmup = Number(values.warmup);
  fs.mkdirSync(WORK, { recursive: true });
  log(`W2 alone: ${P.rounds} round(s) of ${P.w2Fresh} fresh connections per server (after ${P.w2Warmup} unmeasured); servers on core ${SERVER_CORE}, client on core ${CLIENT_CORE}`);
  const h3 = await currentBuild();
  const run = new Workloads(P, h3);
  if (!run.hasNative && h3.native.kind === 'unavailable') log(`native-handler row left out: ${h3.native.why}`);
  const started = Date.now();
  for (let round = 1; round <= P.rounds; round++) {
    log(`round ${round}/${P.rounds}`);
    await run.w2(round);
  }
  const summary = w2Summary(run.rows, P.w2Fresh);
  log('');
  for (const line of w2Lines(summary)) log(line);
  const p50 = (variant: string) => median(run.rows.filter((r) => r.variant === variant).map((r) => r.p50_ms));
  log(`- W2 TTFB p50 ${TS} / caddy: ${(p50(TS) / p50('caddy')).toFixed(2)}x`);
  log(`W2 took ${((Date.now() - started) / 1000).toFixed(0)} s`);
  if (values.json) fs.writeFileSync(values.json, `${JSON.stringify({ parameters: P, rows: run.rows, summary }, null, 2)}\n`);
}

main()
  .catch((e) => {
    console.error(`w2: ${(e as Error).stack ?? e}`);
    process.exitCode = 1;
  })
  .finally(() => stopAll());
