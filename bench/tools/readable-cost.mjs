// What one request-shaped Readable costs through its whole life, alone: no
// server, no network. Each turn makes 20 objects (W1's 20 streams), and for
// the Readable kind does what an eager request object went through for a
// body-less GET nobody reads: construct, push(null), resume() after the
// response (the dump node:http does), 'end', autoDestroy, 'close'; the
// plain kind makes objects with a field. CPU per object from
// process.cpuUsage, three rounds of each, alternating.
//   taskset -c 0 node bench/tools/readable-cost.mjs [objects]
// docs/design.md ("The JavaScript side's cost per request") has the figures.
import { Readable } from 'node:stream';

class Request extends Readable {
  constructor() {
    super();
    this.url = '/login';
    this.push(null);
  }
  _read() {}
}

class Plain {
  constructor() {
    this.url = '/login';
  }
}

const N = Number(process.argv[2] ?? 20000);

async function turn(kind) {
  const objects = [];
  for (let i = 0; i < 20; i++) objects.push(kind === 'readable' ? new Request() : new Plain());
  if (kind === 'readable') for (const o of objects) o.resume();
  await new Promise(setImmediate);
}

for (const kind of ['readable', 'plain', 'readable', 'plain', 'readable', 'plain']) {
  const t0 = process.cpuUsage();
  for (let i = 0; i < N / 20; i++) await turn(kind);
  const t = process.cpuUsage(t0);
  console.log(`${kind.padEnd(8)} ${((t.user + t.system) / N).toFixed(3)} us per object`);
}
