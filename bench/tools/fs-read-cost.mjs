// What W8's download listener spends reading the file, alone: the same
// pipeline(fs.createReadStream(file), sink) with a sink that only counts, no
// network, no addon; CPU of the whole process (libuv's file threads too)
// per GiB. With --raw, the way the native transfer reads it instead
// (bench_transfer.rs): synchronous 64 KiB reads, each into a zeroed
// buffer (Rust's `vec![0; n]`: a memset; the buffer is reused, since a new
// Node Buffer per read would measure V8's allocator instead). The difference is what the listener's file reading adds to the
// native transfer's row (bench/README.md, "What sets W8's pace"); W8 runs
// both after its transfers. Read the file once first so that both come
// from the page cache. --json prints one JSON object.
//   taskset -c 0 node bench/tools/fs-read-cost.mjs [--raw] [--json] <file>
import fs from 'node:fs';
import { pipeline, Writable } from 'node:stream';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({ allowPositionals: true, options: { raw: { type: 'boolean', default: false }, json: { type: 'boolean', default: false } } });
const file = positionals[0];
if (!file) {
  process.stderr.write('usage: node bench/tools/fs-read-cost.mjs [--raw] [--json] <file>\n');
  process.exit(2);
}
const PIECE = 64 * 1024;
const start = process.cpuUsage();
const wallStart = performance.now();

function report(bytes) {
  const used = process.cpuUsage(start);
  const cpu = (used.user + used.system) / 1e6;
  const wall = (performance.now() - wallStart) / 1000;
  const perGiB = cpu / (bytes / 2 ** 30);
  const mode = values.raw ? 'raw' : 'streams';
  if (values.json) console.log(JSON.stringify({ mode, bytes, cpu_s: cpu, wall_s: wall, cpu_s_per_gib: perGiB }));
  else console.log(`${mode}: ${bytes} bytes, CPU ${cpu.toFixed(2)} s, wall ${wall.toFixed(2)} s, ${perGiB.toFixed(2)} s/GiB`);
}

if (values.raw) {
  const fd = fs.openSync(file, 'r');
  const piece = Buffer.allocUnsafe(PIECE);
  let bytes = 0;
  for (;;) {
    piece.fill(0);
    const n = fs.readSync(fd, piece, 0, PIECE, null);
    if (n === 0) break;
    bytes += n;
  }
  fs.closeSync(fd);
  report(bytes);
} else {
  let bytes = 0;
  const sink = new Writable({
    write(chunk, _encoding, done) {
      bytes += chunk.length;
      done();
    },
  });
  pipeline(fs.createReadStream(file), sink, (e) => {
    if (e) throw e;
    report(bytes);
  });
}
