// What W8's download listener spends reading the file, alone: the same
// pipeline(fs.createReadStream(file), sink) with a sink that only counts, no
// network, no addon; CPU of the whole process (libuv's file threads too)
// per GiB. Beside it, what the native transfer's reads cost (dd with the
// same 64 KiB reads: `dd if=<file> of=/dev/null bs=64k` under `time`).
// Read the file once first so that both come from the page cache.
//   taskset -c 0 node bench/tools/fs-read-cost.mjs bench/.work/w8-1024MiB.bin
import fs from 'node:fs';
import { pipeline, Writable } from 'node:stream';

const file = process.argv[2];
if (!file) {
  process.stderr.write('usage: node bench/tools/fs-read-cost.mjs <file>\n');
  process.exit(2);
}
const start = process.cpuUsage();
const wallStart = performance.now();
let bytes = 0;
const sink = new Writable({
  write(chunk, _encoding, done) {
    bytes += chunk.length;
    done();
  },
});
pipeline(fs.createReadStream(file), sink, (e) => {
  if (e) throw e;
  const used = process.cpuUsage(start);
  const cpu = (used.user + used.system) / 1e6;
  const wall = (performance.now() - wallStart) / 1000;
  console.log(`${bytes} bytes: CPU ${cpu.toFixed(2)} s, wall ${wall.toFixed(2)} s, ${(cpu / (bytes / 2 ** 30)).toFixed(2)} s/GiB`);
});
