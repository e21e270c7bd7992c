// W8 alone (one-connection transfers): the same servers, client
// and cores as `npm run bench`, one line per transfer.
//   node --import tsx bench/tools/w8.ts [--rounds 3] [--quick] [--only compat,native,h2,caddy,stream] [--direction upload|download]
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { stopAll } from '../../test/helpers/process';
import { currentBuild } from '../lib/builds';
import { parameters, WORK } from '../lib/config';
import { COMPAT, W8_CADDY, W8_H2, W8_NATIVE, W8_STREAM, Workloads } from '../lib/workloads';

const NAMES: Record<string, string> = { compat: COMPAT, native: W8_NATIVE, stream: W8_STREAM, caddy: W8_CADDY, h2: W8_H2 };

async function main() {
  const { values } = parseArgs({
    options: { rounds: { type: 'string' }, quick: { type: 'boolean', default: false }, only: { type: 'string' }, direction: { type: 'string' } },
  });
  const base = parameters(values.quick ?? false);
  const P = { ...base, w8Rounds: values.rounds ? Number(values.rounds) : base.w8Rounds };
  fs.mkdirSync(WORK, { recursive: true });
  const picked = values.only?.split(',').map((n) => {
    const name = NAMES[n];
    if (!name) throw new Error(`--only: unknown server ${n} (one of ${Object.keys(NAMES).join(', ')})`);
    return name;
  });
  const d = values.direction;
  if (d !== undefined && d !== 'upload' && d !== 'download') throw new Error(`--direction: upload or download, not ${d}`);
  const run = new Workloads(P, await currentBuild());
  await run.w8(picked ? (v) => picked.includes(v) : undefined, d ? [d] : undefined);
}

main()
  .catch((e) => {
    console.error(`w8: ${(e as Error).stack ?? e}`);
    process.exitCode = 1;
  })
  .finally(() => stopAll());
