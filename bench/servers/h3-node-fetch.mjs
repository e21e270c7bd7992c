// Benchmark launcher for this project's fetch-handler API: serve({ fetch })
// from dist/index.js running bench/servers/fetch-app.mjs (W1's and W3's
// routes as a fetch handler), so the W6 rows measure `serve` beside
// createServer, createSecureServer and Bun's HTTP/3 in the same run.
// Usage: node bench/servers/h3-node-fetch.mjs <port> <cert> <key>
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { app } from './fetch-app.mjs';

const require = createRequire(import.meta.url);
const { serve } = require('../../dist/index.js');

const [portArg = '4433', cert, key] = process.argv.slice(2);
const server = serve({ fetch: app, port: Number(portArg), hostname: '127.0.0.1', cert: fs.readFileSync(cert), key: fs.readFileSync(key) }, (info) => {
  process.stdout.write(`${JSON.stringify({ listening: info.port, pid: process.pid })}\n`);
});
server.on('error', (e) => {
  process.stderr.write(`h3-node-fetch: ${e.message}\n`);
  process.exit(1);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
