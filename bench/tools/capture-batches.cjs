// Preload (node -r) for a server that runs this project's StreamServer:
// copies the first event batches the native core hands to JavaScript into
// the file named by H3_CAPTURE_BATCHES (each as a u32 LE length and the
// bytes), written at exit. replay-batches.mjs feeds them back through the
// TypeScript layers with no core and no network, so the JavaScript side's
// cost per request can be measured and profiled alone (--cpu-prof).
//   H3_CAPTURE_BATCHES=/tmp/w1.bin node -r ./bench/tools/capture-batches.cjs bench/servers/h3-node.mjs a 4433
const fs = require('node:fs');
const path = require('node:path');

const out = process.env.H3_CAPTURE_BATCHES;
const LIMIT = Number(process.env.H3_CAPTURE_LIMIT ?? 4000);
if (out) {
  const { StreamServer } = require(path.join(__dirname, '../../dist/lib/stream-server.js'));
  const kept = [];
  const onBatch = StreamServer.prototype.onBatch;
  StreamServer.prototype.onBatch = function (batch) {
    if (kept.length < LIMIT) kept.push(Buffer.from(batch));
    return onBatch.call(this, batch);
  };
  process.on('exit', () => {
    const parts = [];
    for (const b of kept) {
      const len = Buffer.alloc(4);
      len.writeUInt32LE(b.length);
      parts.push(len, b);
    }
    fs.writeFileSync(out, Buffer.concat(parts));
  });
}
