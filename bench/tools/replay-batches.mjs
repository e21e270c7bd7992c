// Replays event batches captured by capture-batches.cjs through the real
// TypeScript layers (decodeBatch, StreamServer, the exchange or the
// node:http2-compatible objects, the command writer) with a stand-in for
// the native core whose submit() does nothing: the JavaScript side's CPU
// per request, without the I/O thread, the napi crossing or the network.
// One batch per event-loop turn (setImmediate), as the core delivers them.
//   node bench/tools/replay-batches.mjs demo-a|demo-c|compat <file> [passes]
// demo-a / demo-c: createServer with Profile A / C; compat: createSecureServer
// running bench/servers/compat-app.mjs. The file must come from the same kind
// of server (the batches carry its connection and stream IDs).
import fs from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const root = new URL('../../', import.meta.url).pathname;
const [kind, file, passesArg = '7'] = process.argv.slice(2);
if (!['demo-a', 'demo-c', 'compat'].includes(kind) || !file) {
  process.stderr.write('usage: node bench/tools/replay-batches.mjs demo-a|demo-c|compat <file> [passes]\n');
  process.exit(2);
}

const { StreamServer } = require(`${root}dist/lib/stream-server.js`);
let server;
StreamServer.prototype.listen = function () {
  server = this;
  const local = { address: '127.0.0.1', family: 'IPv4', port: 4433 };
  this.native = { submit() {}, address: () => local, counters: () => ({}), shutdown() {}, join() {} };
  this.local = local;
  return local;
};
let requests = 0;
const onRequest = StreamServer.prototype.onRequest;
StreamServer.prototype.onRequest = function (...args) {
  requests++;
  return onRequest.apply(this, args);
};

const raw = fs.readFileSync(file);
const batches = [];
for (let off = 0; off < raw.length; ) {
  const n = raw.readUInt32LE(off);
  batches.push(raw.subarray(off + 4, off + 4 + n));
  off += 4 + n;
}

const lib = require(`${root}dist/index.js`);
const quiet = { info() {}, warn() {}, error: (m) => process.stderr.write(`${m}\n`) };
if (kind === 'compat') {
  const { createApp } = await import(`${root}bench/servers/compat-app.mjs`);
  const tls = { cert: fs.readFileSync(`${root}certs/demo-cert.pem`), key: fs.readFileSync(`${root}certs/demo-key.pem`) };
  const h3 = lib.createSecureServer({ ...tls, allowHTTP1: false }, createApp());
  await new Promise((resolve) => h3.listen(0, '127.0.0.1', resolve));
} else {
  const { PROFILES } = require(`${root}dist/demo/index.js`);
  const { options, handler, attach } = PROFILES[kind === 'demo-a' ? 'a' : 'c'].create(quiet);
  const h3 = lib.createServer({ ...options, logger: quiet }, handler);
  attach?.(h3);
  await h3.listen(0, '127.0.0.1');
}

const turn = () => new Promise((resolve) => setImmediate(resolve));
async function pass() {
  for (const b of batches) {
    server.onBatch(b);
    await turn();
  }
}
await pass(); // warm-up; opens the connections the batches name
const perRequest = [];
for (let i = 0; i < Number(passesArg); i++) {
  requests = 0;
  const start = process.cpuUsage();
  await pass();
  const used = process.cpuUsage(start);
  perRequest.push(((used.user + used.system) * 1000) / requests);
}
perRequest.sort((a, b) => a - b);
const median = perRequest[perRequest.length >> 1];
process.stdout.write(`${kind}: ${requests} requests a pass, JavaScript CPU per request median ${(median / 1000).toFixed(2)} us (min ${(perRequest[0] / 1000).toFixed(2)})\n`);
process.exit(0);
