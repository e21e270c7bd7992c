// The fetch handler's rows alone: W1 and W3 through createSecureServer,
// serve({ fetch }), the fetch floor (bench/servers/fetch-floor.mjs), serve with a Hono app (W1) and Bun 1.4.4's HTTP/3 server
// running serve's fetch handler, each server started fresh per round in
// that order, server CPU from schedstat and peak RSS, then the full run's
// fetch checks (ratios paired by round). Same cores, client and code as
// `npm run bench` (bench/lib); writes nothing under bench/results.
//   node --import tsx bench/tools/fetch-rows.ts [--rounds 5] [--only W1|W3]
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { stopAll } from '../../test/helpers/process';
import { currentBuild } from '../lib/builds';
import { parameters, WORK } from '../lib/config';
import { log } from '../lib/log';
import { Medians } from '../lib/report';
import { bunBinary, startBunFetch, startFetchFloor, startH3NodeCompat, startH3NodeFetch, startH3NodeHono } from '../lib/servers';
import { BUN, COMPAT, FETCH_FLOOR, HONO, measureRounds, Row, SERVE, ToolServer } from '../lib/workloads';

async function main() {
  const { values } = parseArgs({ options: { rounds: { type: 'string', default: '5' }, only: { type: 'string' } } });
  const rounds = Number(values.rounds);
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error('--rounds takes a whole number of at least 1');
  if (values.only !== undefined && values.only !== 'W1' && values.only !== 'W3') throw new Error(`--only takes W1 or W3, got ${values.only}`);
  if (!bunBinary()) throw new Error('Bun is not installed: run bash bench/setup.sh (it installs bun@1.4.4 under bench/.work/bun)');
  fs.mkdirSync(WORK, { recursive: true });
  fs.writeFileSync(`${WORK}/body-4096.bin`, Buffer.alloc(4096, 'x'));
  const h3 = await currentBuild();
  const servers = (w: 'W1' | 'W3'): ToolServer[] => [
    [COMPAT, () => startH3NodeCompat(h3)],
    [SERVE, () => startH3NodeFetch(h3)],
    [FETCH_FLOOR, () => startFetchFloor(h3)],
    ...(w === 'W1' ? [[HONO, () => startH3NodeHono(h3)] as ToolServer] : []),
    [BUN, () => startBunFetch()],
  ];
  const workloads = (['W1', 'W3'] as const).filter((w) => values.only === undefined || values.only === w);
  const rows: Row[] = [];
  for (let round = 1; round <= rounds; round++) {
    log(`round ${round}/${rounds} (each line below says round 1: one round at a time)`);
    for (const w of workloads) {
      const got = await measureRounds({ ...parameters(false), rounds: 1 }, [w], servers(w));
      rows.push(...got.map((r) => ({ ...r, round })));
    }
  }
  const med = new Medians(rows);
  log('');
  for (const w of workloads) {
    for (const v of [COMPAT, SERVE, FETCH_FLOOR, HONO, BUN]) {
      if (!rows.some((r) => r.workload === w && r.variant === v)) continue;
      log(`- ${w} ${v}: ${med.cpu(w, v).toFixed(2)} us/req, peak RSS ${(med.of(w, v, 'peak_rss_kib') / 1024).toFixed(1)} MiB (medians)`);
    }
    const pairs: Array<[string, string]> = [[SERVE, COMPAT], [FETCH_FLOOR, COMPAT], [SERVE, FETCH_FLOOR], [SERVE, BUN], [COMPAT, BUN], ...(w === 'W1' ? ([[HONO, SERVE]] as Array<[string, string]>) : [])];
    for (const [v, base] of pairs) {
      const c = med.pairedCpu(w, v, base);
      log(`- ${w} CPU/req ${v} / ${base}: ${c.ratio.toFixed(3)}x (rounds ${c.perRound.map((x) => x.toFixed(3)).join(', ')}; ratio of medians ${c.ofMedians.toFixed(3)}x)`);
    }
    log(`- ${w} peak RSS ${SERVE} / ${COMPAT}: ${(med.of(w, SERVE, 'peak_rss_kib') / med.of(w, COMPAT, 'peak_rss_kib')).toFixed(3)}x`);
  }
}

main()
  .catch((e) => {
    console.error(`fetch-rows: ${(e as Error).stack ?? e}`);
    process.exitCode = 1;
  })
  .finally(() => stopAll());
