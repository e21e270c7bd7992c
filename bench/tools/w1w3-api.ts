// W1's and W3's createSecureServer-vs-createServer check alone,
// with the two rows that tell the API's cost from the `date` field's:
// createServer, createServer + date (its answers take createSecureServer's
// packets), createSecureServer, and createSecureServer without `date` and
// `content-length` (createServer's packets). Each server started fresh per
// round in the full run's order, server CPU from schedstat, ratios paired by
// round as the full run's report pairs them. Same cores, client and code as
// `npm run bench` (bench/lib); writes nothing under bench/results.
//   node --import tsx bench/tools/w1w3-api.ts [--rounds 5] [--only W1|W3]
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { stopAll } from '../../test/helpers/process';
import { currentBuild } from '../lib/builds';
import { parameters, WORK } from '../lib/config';
import { log } from '../lib/log';
import { Medians } from '../lib/report';
import { startH3Node, startH3NodeCompat, startH3NodeCompatSameBytes } from '../lib/servers';
import { COMPAT, COMPAT_SAME_BYTES, measureRounds, TS, TS_DATE, ToolServer } from '../lib/workloads';

async function main() {
  const { values } = parseArgs({ options: { rounds: { type: 'string', default: '5' }, only: { type: 'string' } } });
  const P = { ...parameters(false), rounds: Number(values.rounds) };
  if (!Number.isInteger(P.rounds) || P.rounds < 1) throw new Error('--rounds takes a whole number of at least 1');
  if (values.only !== undefined && values.only !== 'W1' && values.only !== 'W3') throw new Error(`--only takes W1 or W3, got ${values.only}`);
  fs.mkdirSync(WORK, { recursive: true });
  fs.writeFileSync(`${WORK}/body-4096.bin`, Buffer.alloc(4096, 'x'));
  const h3 = await currentBuild();
  const servers: ToolServer[] = [
    [TS, (profile) => startH3Node(h3, profile, false)],
    [COMPAT, () => startH3NodeCompat(h3)],
    [COMPAT_SAME_BYTES, () => startH3NodeCompatSameBytes(h3)],
    [TS_DATE, (profile) => startH3Node(h3, profile, false, 1, undefined, true)],
  ];
  const workloads = (['W1', 'W3'] as const).filter((w) => values.only === undefined || values.only === w);
  const rows = await measureRounds(P, workloads, servers);
  const med = new Medians(rows);
  log('');
  for (const workload of workloads) {
    for (const v of [TS, TS_DATE, COMPAT, COMPAT_SAME_BYTES]) log(`- ${workload} ${v}: ${med.cpu(workload, v).toFixed(2)} us/req (median)`);
    for (const [v, base] of [[COMPAT, TS], [COMPAT, TS_DATE], [COMPAT_SAME_BYTES, TS]]) {
      const c = med.pairedCpu(workload, v, base);
      log(`- ${workload} ${v} / ${base}: ${c.ratio.toFixed(3)}x (rounds ${c.perRound.map((x) => x.toFixed(3)).join(', ')}; ratio of medians ${c.ofMedians.toFixed(3)}x)`);
    }
  }
}

main()
  .catch((e) => {
    console.error(`w1w3-api: ${(e as Error).stack ?? e}`);
    process.exitCode = 1;
  })
  .finally(() => stopAll());
