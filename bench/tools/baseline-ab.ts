// The `--baseline` comparison alone (W1 and W3, TypeScript and native
// paths, baseline then current in every round), without the other
// workloads: for a question about one change that a full run would take an
// hour to answer. Full request counts; the rounds are a flag.
//   node --import tsx bench/tools/baseline-ab.ts <git-rev> [--rounds 5]
import fs from 'node:fs';
import { compareWithBaseline, prepareBaseline } from '../lib/baseline';
import { currentBuild } from '../lib/builds';
import { cpuPerRequest } from '../lib/clients';
import { parameters, WORK } from '../lib/config';

async function main() {
  const [rev, ...rest] = process.argv.slice(2);
  if (!rev || rev.startsWith('--')) throw new Error('usage: baseline-ab.ts <git-rev> [--rounds N]');
  const i = rest.indexOf('--rounds');
  const P = { ...parameters(false), rounds: i >= 0 ? Number(rest[i + 1]) : 5 };
  if (!Number.isInteger(P.rounds) || P.rounds < 1) throw new Error('--rounds takes a whole number of at least 1');
  fs.mkdirSync(WORK, { recursive: true });
  const current = await currentBuild();
  const baseline = await prepareBaseline(rev);
  const c = await compareWithBaseline(P, current, baseline);
  for (const v of c.verdicts) {
    const ratios = c.rows
      .filter((r) => r.workload === v.workload && r.path === v.path)
      .map((r) => `${r.design[0]}${r.round} ${cpuPerRequest(r).toFixed(2)}`);
    console.log(`${v.workload} ${v.path}: baseline ${v.baseline_us.toFixed(2)} us, current ${v.current_us.toFixed(2)} us, ${v.ratio.toFixed(3)}x  [${ratios.join(' ')}]`);
  }
  for (const n of c.notes) console.log(`note: ${n}`);
}

main().catch((e) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
