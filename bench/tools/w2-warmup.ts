// How W2's CPU per fresh connection settles as a server warms: each server
// (h3-node TypeScript and native handler, Caddy) started fresh, then batches
// of fresh connections one after another, CPU per connection printed per
// batch. Shows how many connections the warm-up needs before the measured
// ones see a settled JIT (V8 tiers a function up by how often it ran, and the
// connection path runs a few times per connection, not per request).
//   node --import tsx bench/tools/w2-warmup.ts [--batches 8] [--size 500]
import { parseArgs } from 'node:util';
import { stopAll } from '../../test/helpers/process';
import { currentBuild } from '../lib/builds';
import { h3Load } from '../lib/clients';
import { parameters } from '../lib/config';
import { log } from '../lib/log';
import { stopServer } from '../lib/servers';
import { Workloads } from '../lib/workloads';

async function main() {
  const { values } = parseArgs({ options: { batches: { type: 'string', default: '8' }, size: { type: 'string', default: '500' } } });
  const batches = Number(values.batches);
  const size = Number(values.size);
  const run = new Workloads(parameters(false), await currentBuild());
  for (const [variant, start] of run.profileAServers()) {
    const s = await start();
    const url = `https://127.0.0.1:${s.port ?? s.portA!}/login`;
    const perBatch: string[] = [];
    for (let b = 0; b < batches; b++) {
      const m = await h3Load(s, url, ['-fresh', '-requests', String(size)], { exactCpu: true });
      perBatch.push(m.cpu_us_per_req_exact!.toFixed(0));
    }
    log(`${variant}: CPU us per fresh connection, batches of ${size}: ${perBatch.join(', ')}`);
    await stopServer(s);
  }
}

main()
  .catch((e) => {
    console.error(`w2-warmup: ${(e as Error).stack ?? e}`);
    process.exitCode = 1;
  })
  .finally(() => stopAll());
