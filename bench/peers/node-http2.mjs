// Peer: Node's own `http2` over TLS implementing Profile A's routes and
// Profile C's streamed count, loaded with h2load (HTTP/2 is the fastest
// multiplexed protocol Node serves natively).
// Usage: node bench/peers/node-http2.mjs <a|c> <port> <cert> <key>
import fs from 'node:fs';
import http2 from 'node:http2';

const [profile = 'a', portArg = '8443', cert, key] = process.argv.slice(2);
const BEARER = 'Bearer h3-demo-token-2f9c';
const COOKIE = 'session=h3-demo-7b41e0';
const CAP = 4096;

function text(stream, status, body, extra = {}) {
  stream.respond({ ':status': status, 'content-type': 'text/plain', ...extra });
  stream.end(body);
}

function profileA(stream, headers) {
  const path = headers[':path'].split('?')[0];
  switch (path) {
    case '/redirect':
      stream.respond({ ':status': 302, location: '/target' }, { endStream: true });
      return;
    case '/login':
      text(stream, 200, 'login succeeded\n', { 'set-cookie': COOKIE });
      return;
    case '/secret':
      if (headers.authorization === BEARER || headers.cookie === COOKIE) text(stream, 200, 'secret: the owl flies at midnight\n');
      else text(stream, 401, 'unauthorized\n');
      return;
    default:
      text(stream, 404, 'not found\n');
  }
}

function profileC(stream) {
  let total = 0;
  let cut = false;
  stream.on('data', (chunk) => {
    if (cut) return;
    total += chunk.length;
    if (total > CAP) {
      cut = true;
      stream.respond({ ':status': 413 }, { endStream: true });
      stream.close(http2.constants.NGHTTP2_NO_ERROR);
    }
  });
  stream.on('end', () => {
    if (!cut) text(stream, 200, `${total}\n`);
  });
}

const server = http2.createSecureServer({
  cert: fs.readFileSync(cert),
  key: fs.readFileSync(key),
  settings: { maxConcurrentStreams: 128 },
});
server.on('stream', profile === 'c' ? profileC : profileA);
server.on('error', () => {});
server.listen(Number(portArg), '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ listening: Number(portArg), pid: process.pid })}\n`));
process.on('SIGTERM', () => process.exit(0));
