// W6 alone (server CPU per request over the native handler's):
// W1 and W3 through createServer, createSecureServer, serve, the native
// handler and the boundary floor (bench/servers/boundary-floor.mjs: the real core
// with the least JavaScript per request), each started fresh per round in
// the same order as the full run, server CPU from schedstat for every row.
// Same cores, client and code as `npm run bench` (bench/lib); writes
// nothing under bench/results.
//   node --import tsx bench/tools/w6.ts [--rounds 5]
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { stopAll } from '../../test/helpers/process';
import { currentBuild } from '../lib/builds';
import { parameters, WORK } from '../lib/config';
import { log } from '../lib/log';
import { floorLines, Medians } from '../lib/report';
import { startBoundaryFloor, startH3Node, startH3NodeCompat, startH3NodeFetch } from '../lib/servers';
import { COMPAT, FLOOR, measureRounds, NATIVE, SERVE, TS, ToolServer } from '../lib/workloads';

async function main() {
  const { values } = parseArgs({ options: { rounds: { type: 'string', default: '5' } } });
  const P = { ...parameters(false), rounds: Number(values.rounds) };
  if (!Number.isInteger(P.rounds) || P.rounds < 1) throw new Error('--rounds takes a whole number of at least 1');
  fs.mkdirSync(WORK, { recursive: true });
  fs.writeFileSync(`${WORK}/body-4096.bin`, Buffer.alloc(4096, 'x'));
  const h3 = await currentBuild();
  if (h3.native.kind === 'unavailable') throw new Error(`no native handler: ${h3.native.why}`);
  const servers: ToolServer[] = [
    [TS, (profile) => startH3Node(h3, profile, false)],
    [NATIVE, (profile) => startH3Node(h3, profile, true)],
    [COMPAT, () => startH3NodeCompat(h3)],
    [SERVE, () => startH3NodeFetch(h3)],
    [FLOOR, (profile) => startBoundaryFloor(h3, profile)],
  ];
  const rows = await measureRounds(P, ['W1', 'W3'], servers);
  const med = new Medians(rows);
  log('');
  for (const w of ['W1', 'W3']) {
    const native = med.cpu(w, NATIVE);
    for (const v of [TS, COMPAT, SERVE, FLOOR]) log(`- W6 ${w} CPU/req ${v} vs native handler: ${(med.cpu(w, v) / native).toFixed(2)}x (${med.cpu(w, v).toFixed(1)} / ${native.toFixed(1)} us)`);
  }
  for (const line of floorLines(med)) log(line);
}

main()
  .catch((e) => {
    console.error(`w6: ${(e as Error).stack ?? e}`);
    process.exitCode = 1;
  })
  .finally(() => stopAll());
