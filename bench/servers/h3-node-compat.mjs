// Benchmark launcher for this project's node:http2-compatible API:
// createSecureServer(options, listener) from dist/index.js, running the same
// listener as the node:http2 peer (compat-app.mjs): W1's and W3's routes, so
// they run through createSecureServer beside createServer (h3-node.mjs) in
// the same run, and W8's upload and download.
// Usage: node bench/servers/h3-node-compat.mjs <port> <cert> <key> [<file for GET /file>]
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { createApp } from './compat-app.mjs';

const require = createRequire(import.meta.url);
const { createSecureServer } = require('../../dist/index.js');
if (typeof createSecureServer !== 'function') {
  process.stderr.write('h3-node-compat: dist/index.js has no createSecureServer (not merged or not built yet)\n');
  process.exit(2);
}

const [portArg = '4433', cert, key, file] = process.argv.slice(2);
// PEM text, as a node:http2 program passes it.
// For experiments: H3_BENCH_CC=cubic|reno|bbr2, H3_BENCH_PACING=0 (the bench
// sets neither); H3_BENCH_INITIAL_WINDOW=<packets> (W10's extra row).
const transport = {
  ...(process.env.H3_BENCH_CC ? { congestionControl: process.env.H3_BENCH_CC } : {}),
  ...(process.env.H3_BENCH_PACING === '0' ? { pacing: false } : {}),
  ...(process.env.H3_BENCH_INITIAL_WINDOW ? { initialWindow: Number(process.env.H3_BENCH_INITIAL_WINDOW) } : {}),
};
const app = createApp(file);
const listener =
  process.env.H3_BENCH_SAME_BYTES === '1'
    ? (req, res) => {
        res.sendDate = false;
        res.removeHeader('content-length');
        app(req, res);
      }
    : app;
const server = createSecureServer({ cert: fs.readFileSync(cert), key: fs.readFileSync(key), ...transport }, listener);
server.on('error', (e) => {
  process.stderr.write(`h3-node-compat: ${e.message}\n`);
  process.exit(1);
});
server.listen(Number(portArg), '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ listening: server.address().port, pid: process.pid })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
