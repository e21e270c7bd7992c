// Benchmark launcher for W9: WebTransport echo through the application API
// (createSecureServer's 'session' event, W3C-shaped sessions): every
// bidirectional stream is piped back to itself, every datagram written back.
// With `duplex` the same echo goes through the Node-stream shapes instead
// of the web streams: each stream's toDuplex() piped to itself, the
// session's datagramDuplex() written back from its 'data' events.
// Usage: node bench/servers/h3-node-wt-app.mjs <port> <cert> <key> [duplex]
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { pipeline } from 'node:stream';

const require = createRequire(import.meta.url);
const { createSecureServer } = require('../../dist/index.js');

const [portArg = '4433', cert, key, shape = 'web'] = process.argv.slice(2);
const server = createSecureServer({ cert: fs.readFileSync(cert), key: fs.readFileSync(key), tcp: false, webtransport: true });
server.on('session', (request) => {
  const session = request.accept();
  if (shape === 'duplex') {
    void (async () => {
      for await (const stream of session.incomingBidirectionalStreams) {
        const d = stream.toDuplex();
        pipeline(d, d, () => {});
      }
    })().catch(() => {});
    const datagrams = session.datagramDuplex();
    datagrams.on('data', (d) => datagrams.write(d));
    datagrams.on('error', () => {});
    return;
  }
  void (async () => {
    for await (const stream of session.incomingBidirectionalStreams) stream.readable.pipeTo(stream.writable).catch(() => {});
  })().catch(() => {});
  void (async () => {
    const writer = session.datagrams.writable.getWriter();
    for await (const datagram of session.datagrams.readable) writer.write(datagram).catch(() => {});
  })().catch(() => {});
});
server.on('error', (e) => {
  process.stderr.write(`h3-node-wt-app: ${e.message}\n`);
  process.exit(1);
});
server.listen(Number(portArg), '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ listening: server.address().port, pid: process.pid })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
