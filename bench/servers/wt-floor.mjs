// Benchmark launcher for the least JavaScript a WebTransport echo through
// the boundary allows: createSecureServer's sessions, but each incoming
// datagram and stream chunk is written straight back through the command
// writer, a chunk's credit returned once QUIC has taken its echo (the
// core's SENT report), with no web streams, no promises, no copies in
// JavaScript. Whatever the W3C-shaped application
// API does per datagram or per chunk, it does at least this; W9's
// "application API vs the native echo" beside this floor's says how much
// of the gap is the boundary (the crossing, decoding, the command batch
// back) and how much the web streams above it.
// Not an API: it reaches into the session's internals.
// Usage: node bench/servers/wt-floor.mjs <port> <cert> <key>
import fs from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { createSecureServer } = require('../../dist/index.js');

const [portArg = '4433', cert, key] = process.argv.slice(2);
const server = createSecureServer({ cert: fs.readFileSync(cert), key: fs.readFileSync(key), tcp: false, webtransport: true });
server.on('session', (request) => {
  const session = request.accept();
  const link = session.link;
  const conn = session.conn;
  session.deliverDatagram = (payload) => {
    link.commands.datagram(conn, session.id, payload);
    link.scheduleFlush();
  };
  session.deliverIncoming = (channel) => {
    link.track(conn, channel, session);
    let returned = 0;
    channel.deliverData = (chunk, fin) => {
      link.commands.data(conn, channel.id, chunk, fin);
      link.scheduleFlush();
    };
    channel.deliverSent = (total) => {
      if (total <= returned) return;
      link.commands.consumed(conn, channel.id, total - returned);
      returned = total;
      link.scheduleFlush();
    };
  };
});
server.on('error', (e) => {
  process.stderr.write(`wt-floor: ${e.message}\n`);
  process.exit(1);
});
server.listen(Number(portArg), '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ listening: server.address().port, pid: process.pid })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
