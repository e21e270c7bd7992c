// Benchmark launcher for this project: the same createServer + profile the
// CLI (src/demo/cli.ts) starts, plus a stdin line protocol so the harness can read
// the native counters of the running server without sharing its process:
//   "counters\n" -> one JSON line on stdout.
// With H3_BENCH_NATIVE_HANDLER=a|c the Rust bench handler answers instead of
// TypeScript (native/src/bench_handler.rs; benchmark only).
// Usage: node bench/servers/h3-node.mjs <profile a|b|c> <port>
import readline from 'node:readline';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { createServer, stderrLogger } = require('../../dist/index.js');
const { PROFILES } = require('../../dist/demo/index.js');

const [profileName = 'a', portArg = '4433'] = process.argv.slice(2);
const profile = PROFILES[profileName];
const { options, handler, attach } = profile.create(stderrLogger);
const server = createServer({ ...options, logger: stderrLogger }, handler);
attach?.(server);
const addr = await server.listen(Number(portArg), '127.0.0.1');
process.stdout.write(`${JSON.stringify({ listening: addr.port, pid: process.pid })}\n`);

readline.createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.trim() === 'counters') process.stdout.write(`${JSON.stringify(server.counters())}\n`);
});
process.on('SIGTERM', () => server.close().then(() => process.exit(0)));
