// W8 with no JavaScript in the transfer: createSecureServer's core options
// (body credit, windows, sendHighWater), but POST /upload and GET /file are
// answered inside the I/O thread (native/addon/src/bench_transfer.rs, in the
// addon variant built with the cargo feature bench-handler). Its W8 row is
// the most any JavaScript API on this core could reach, the floor the
// createSecureServer row is read against; not a target, not an API.
// Usage: node bench/servers/h3-node-w8-native.mjs <port> <cert> <key> <file> --addon <bench addon>
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';
import { createApp } from './compat-app.mjs';

const require = createRequire(import.meta.url);
const { createSecureServer } = require('../../dist/index.js');
const { withDevHooks } = require('../../dist/lib/dev-hooks.js');

const { values, positionals } = parseArgs({ allowPositionals: true, options: { addon: { type: 'string' } } });
const [portArg = '4433', cert, key, file] = positionals;
if (!file || !values.addon) {
  process.stderr.write('usage: h3-node-w8-native.mjs <port> <cert> <key> <file> --addon <addon built with bench-handler>\n');
  process.exit(2);
}
const hooks = { benchNativeHandler: `w8:${file}`, addonPath: values.addon };
const server = createSecureServer(withDevHooks({ cert: fs.readFileSync(cert), key: fs.readFileSync(key) }, hooks), createApp(file));
server.on('error', (e) => {
  process.stderr.write(`h3-node-w8-native: ${e.message}\n`);
  process.exit(1);
});
server.listen(Number(portArg), '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ listening: server.address().port, pid: process.pid })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
