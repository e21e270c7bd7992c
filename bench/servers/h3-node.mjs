// Benchmark launcher for this project: the same createServer + profile the
// CLI (src/demo/cli.ts) starts, plus a stdin line protocol so the harness can
// read the native counters of the running server without sharing its process:
//   "counters\n" -> one JSON line on stdout.
// --native a|c makes the Rust bench handler answer instead of TypeScript
// (native/src/bench_handler.rs; benchmark only); --addon loads that addon
// file instead of dist/native's (a variant build). Both reach the server as
// dev hooks (src/lib/dev-hooks.ts), never through the environment.
// --workers N serves on N workers (W11); the added ones run this file again
// in worker threads, where only the server is made ("workers\n" on stdin
// -> the workers' stats as one JSON line).
// --date adds a `date` field to every answer (res.addField, so lowercased
// as the spec's exchange has it): W1's createServer row with the field
// createSecureServer must send (RFC 9110, section 6.6.1), whose ~21 bytes
// per answer take a round of 20 answers past one 1452-byte packet
// (docs/design.md, "W1's two fields and the packet they overflow").
// Usage: node bench/servers/h3-node.mjs <profile a|b|c> <port> [--native a|c] [--addon <path>] [--workers N] [--date]
import readline from 'node:readline';
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';

const require = createRequire(import.meta.url);
const { createServer, stderrLogger, isPrimary } = require('../../dist/index.js');
const { PROFILES } = require('../../dist/demo/index.js');
const { withDevHooks } = require('../../dist/lib/dev-hooks.js');

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { native: { type: 'string' }, addon: { type: 'string' }, workers: { type: 'string' }, date: { type: 'boolean' } },
});
const [profileName = 'a', portArg = '4433'] = positionals;
if (values.native !== undefined && values.native !== 'a' && values.native !== 'c') {
  throw new Error(`--native takes a or c, got ${values.native}`);
}
const profile = PROFILES[profileName];
const { options, handler, attach } = profile.create(stderrLogger);
const hooks = { benchNativeHandler: values.native, addonPath: values.addon };
const workers = Number(values.workers ?? 1);
const server = createServer(withDevHooks({ ...options, logger: stderrLogger, workers }, hooks), values.date ? withDate(handler) : handler);
attach?.(server);
const addr = await server.listen(Number(portArg), '127.0.0.1');
if (!isPrimary) await new Promise(() => {}); // an added worker: it serves, the primary talks
process.stdout.write(`${JSON.stringify({ listening: addr.port, pid: process.pid })}\n`);

/** The handler with `date` added first; its value made once a second, as createSecureServer makes it. */
function withDate(inner) {
  let value;
  return (req, res) => {
    if (value === undefined) {
      const now = new Date();
      value = now.toUTCString();
      setTimeout(() => (value = undefined), 1000 - now.getMilliseconds()).unref();
    }
    res.addField('date', value);
    return inner(req, res);
  };
}

readline.createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.trim() === 'counters') process.stdout.write(`${JSON.stringify(server.counters())}\n`);
  if (line.trim() === 'workers') process.stdout.write(`${JSON.stringify(server.workerStats() ?? null)}\n`);
});
process.on('SIGTERM', () => server.close().then(() => process.exit(0)));
