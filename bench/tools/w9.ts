// W9 alone (WebTransport echo through the application API, the
// native echo and webtransport-go): the same servers, client and cores as
// `npm run bench`, then W9's table and checks.
//   node --import tsx bench/tools/w9.ts [--rounds 3] [--quick]
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { stopAll } from '../../test/helpers/process';
import { parameters, WORK } from '../lib/config';
import { log } from '../lib/log';
import { runW9, w9Checks, w9Table } from '../lib/w9';

async function main() {
  const { values } = parseArgs({ options: { rounds: { type: 'string' }, quick: { type: 'boolean', default: false } } });
  const base = parameters(values.quick ?? false);
  const P = { ...base, w9Rounds: values.rounds ? Number(values.rounds) : base.w9Rounds };
  fs.mkdirSync(WORK, { recursive: true });
  const rows = await runW9(P);
  log('');
  for (const line of w9Table(P, rows)) log(line);
  for (const c of w9Checks(rows)) log(`- ${c.id} ${c.what}: ${c.value.toFixed(2)}x (target >= ${c.target})${c.extra ? ' (extra view)' : ''}`);
}

main()
  .catch((e) => {
    console.error(`w9: ${(e as Error).stack ?? e}`);
    process.exitCode = 1;
  })
  .finally(() => stopAll());
