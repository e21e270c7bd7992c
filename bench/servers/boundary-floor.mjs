// Benchmark launcher for the least JavaScript the Rust/TypeScript boundary
// allows per request: the real core, event batches and command batches,
// and a callback that decodes each batch and answers every request with
// one fixed answer through the command writer (profile a: Profile A's
// /login answer, W1; profile c: the body's length as Profile C's /count
// answers, W3, the body streamed as Profile C's is: BODY events, each
// chunk's credit given back with a CONSUMED command), with no request or response objects, no routing, no timers. Whatever any API built on this
// boundary does per request, it does at least this; its CPU per request
// beside the native handler's (no JavaScript at all) is the part of W6's
// "TypeScript path vs native handler" that belongs to the boundary itself
// (the I/O thread handing batches over, the wake of the JavaScript thread,
// decoding, the command batch back), not to a library above it.
// Not an API and not a server anyone should run: it answers every request
// alike.
// Usage: node bench/servers/boundary-floor.mjs <a|c> <port> <cert path> <key path>
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { addon } = require('../../dist/native/binding.js');
const { CommandWriter, decodeBatch } = require('../../dist/native/protocol.js');
const { readIdentity } = require('../../dist/lib/identity.js');
/** The core takes the chain and key as bytes (README, "Where key material lives"). */
const keyMaterial = (cert, key) => readIdentity(cert, key).material;

const [profile, portArg, certPath, keyPath] = process.argv.slice(2);
if ((profile !== 'a' && profile !== 'c') || !keyPath) {
  process.stderr.write('usage: boundary-floor.mjs <a|c> <port> <cert path> <key path>\n');
  process.exit(2);
}
const LOGIN_FIELDS = ['set-cookie', 'session=h3-demo-7b41e0', 'content-type', 'text/plain'];
const LOGIN_BODY = Buffer.from('login succeeded\n');
/** RequestFlag.Complete (src/native/boundary.generated.ts). */
const COMPLETE = 1;
const COUNT_FIELDS = ['content-type', 'text/plain'];
const commands = new CommandWriter();
/** W3: body bytes so far per stream (streams of one connection; the key is unique while the stream is open). */
const totals = new Map();
const key = (conn, stream) => conn * 2 ** 32 + stream;
const ignore = () => {};
const sink = {
  onRequest:
    profile === 'a'
      ? (conn, stream) => commands.respond(conn, stream, 200, LOGIN_FIELDS, LOGIN_BODY)
      : (conn, stream, flags, _lines, body) => {
          // A request complete with its header section carries its whole body and needs no credit back.
          if (flags & COMPLETE) return commands.respond(conn, stream, 200, COUNT_FIELDS, Buffer.from(`${body.length}\n`));
          if (body.length > 0) commands.consumed(conn, stream, body.length);
          totals.set(key(conn, stream), body.length);
        },
  onBody(conn, stream, chunk, fin) {
    const k = key(conn, stream);
    const total = (totals.get(k) ?? 0) + chunk.length;
    if (chunk.length > 0) commands.consumed(conn, stream, chunk.length);
    if (!fin) return void totals.set(k, total);
    totals.delete(k);
    commands.respond(conn, stream, 200, COUNT_FIELDS, Buffer.from(`${total}\n`));
  },
  onStreamAborted: ignore,
  onConnOpen: ignore,
  onPeerMoved: ignore,
  onConnClosed: ignore,
  onLog: ignore,
  onServerClosed: () => process.exit(0),
  onWtSessionOpen: ignore,
  onWtSessionClosed: ignore,
  onWtStream: ignore,
  onWtDatagrams: ignore,
  onTrailers: ignore,
  onSent: ignore,
  onPeerFieldLimit: ignore,
  onWtDatagram: ignore,
  onIdentityWanted: ignore,
  onClientCertificate: ignore,
};
const server = addon().listen(
  { host: '127.0.0.1', port: Number(portArg), tls: keyMaterial(certPath, keyPath), streamedBodies: profile === 'c' },
  (batch) => {
    const seq = decodeBatch(batch, sink);
    server.submit(commands.take(), seq);
  },
);
process.stdout.write(`${JSON.stringify({ listening: server.address().port, pid: process.pid })}\n`);
process.on('SIGTERM', () => server.shutdown(false));
