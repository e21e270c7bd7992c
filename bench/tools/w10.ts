// W10 alone (goodput over impaired links), for working on
// pacing and loss recovery without the full run: the same servers, relay,
// client and cores as `npm run bench`, then W10's table and checks.
//   node --import tsx bench/tools/w10.ts [--rounds 3] [--lossy-rounds 9] [--link lossy|bottleneck]
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { stopAll } from '../../test/helpers/process';
import { currentBuild } from '../lib/builds';
import { parameters, WORK } from '../lib/config';
import { log } from '../lib/log';
import { w10Checks, w10Table } from '../lib/report';
import { Workloads } from '../lib/workloads';

async function main() {
  const { values } = parseArgs({ options: { rounds: { type: 'string', default: '3' }, 'lossy-rounds': { type: 'string', default: '9' }, link: { type: 'string' } } });
  const P = { ...parameters(false), w10Rounds: Number(values.rounds), w10LossyRounds: Number(values['lossy-rounds']) };
  fs.mkdirSync(WORK, { recursive: true });
  const run = new Workloads(P, await currentBuild());
  await run.w10(values.link);
  log('');
  for (const line of w10Table(P, run.w10Rows)) log(line);
  for (const c of w10Checks(run.w10Rows)) log(`- ${c.id} ${c.what}: ${c.value.toFixed(2)}${c.unit ? ` ${c.unit}` : 'x'} (target ${c.kind === 'min' ? '>=' : '<='} ${c.target})`);
}

main()
  .catch((e) => {
    console.error(`w10: ${(e as Error).stack ?? e}`);
    process.exitCode = 1;
  })
  .finally(() => stopAll());
