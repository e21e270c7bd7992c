// W11 alone (one server on 1 and 2 workers): the same servers,
// client and cores as `npm run bench`, then W11's table and checks.
//   node --import tsx bench/tools/w11.ts [--rounds 3] [--quick]
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { stopAll } from '../../test/helpers/process';
import { currentBuild } from '../lib/builds';
import { parameters, WORK } from '../lib/config';
import { log } from '../lib/log';
import { runW11, w11Checks, w11Table } from '../lib/w11';

async function main() {
  const { values } = parseArgs({ options: { rounds: { type: 'string' }, quick: { type: 'boolean', default: false } } });
  const base = parameters(values.quick ?? false);
  const P = { ...base, w11Rounds: values.rounds ? Number(values.rounds) : base.w11Rounds };
  fs.mkdirSync(WORK, { recursive: true });
  const rows = await runW11(P, await currentBuild());
  log('');
  for (const line of w11Table(P, rows)) log(line);
  for (const c of w11Checks(rows)) log(`- ${c.id} ${c.what}: ${c.value.toFixed(2)}${c.unit} (target ${c.kind === 'min' ? '>=' : '<='} ${c.target})`);
}

main()
  .catch((e) => {
    console.error(`w11: ${(e as Error).stack ?? e}`);
    process.exitCode = 1;
  })
  .finally(() => stopAll());
