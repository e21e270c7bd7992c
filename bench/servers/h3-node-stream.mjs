// W8 on the layer under createSecureServer: the RequestStream interface of
// the native core (src/lib/request-stream.ts), with no Node stream objects
// in between. Not an API for applications; its W8 row is the floor the
// node:http2-compatible layer adds its cost to, and it runs W8 on builds
// that do not have createSecureServer yet.
//   POST /upload  counts the body, giving credit back as each chunk arrives
//   GET /file     sends the file, pausing the read above sendHighWater until onDrain
// Usage: node bench/servers/h3-node-stream.mjs <port> <cert> <key> [<file for GET /file>]
import fs from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { StreamServer } = require('../../dist/lib/stream-server.js');
const { stderrLogger } = require('../../dist/index.js');

const [portArg = '4433', cert, key, file] = process.argv.slice(2);
const TEXT = ['content-type', 'text/plain'];

function pathOf(lines) {
  for (let i = 0; i < lines.length; i += 2) if (lines[i] === ':path') return lines[i + 1];
  return '/';
}

function upload(s) {
  let total = 0;
  const answer = () => s.respond(200, TEXT, Buffer.from(`${total}\n`));
  if (s.complete) return answer();
  s.onData = (chunk) => {
    total += chunk.length;
    s.consume(chunk.length);
  };
  s.onEnd = answer;
}

function sendFile(s) {
  s.sendHeaders(200, ['content-type', 'application/octet-stream', 'content-length', String(fs.statSync(file).size)], false);
  const rs = fs.createReadStream(file);
  // One chunk is held back so that the FIN rides on the last bytes: with
  // addons built before 6e3c6d6 a FIN sent alone (sendData of an empty
  // buffer) after the body was acknowledged could be dropped by quiche 0.30
  // (5 of 80 64 MiB downloads stalled here with every byte delivered).
  let held = null;
  rs.on('data', (chunk) => {
    if (held) s.sendData(held, false);
    held = chunk;
    if (s.sendPending > s.sendHighWater) rs.pause();
  });
  rs.on('end', () => s.sendData(held ?? Buffer.alloc(0), true));
  rs.on('error', () => s.reset(0x102));
  s.onDrain = () => rs.resume();
  s.onAbort = () => rs.destroy();
}

const core = new StreamServer(
  { certPath: cert, keyPath: key, streamedBodies: true },
  {
    onStream(s) {
      const path = pathOf(s.lines);
      if (path === '/upload') upload(s);
      else if (path === '/file' && file) sendFile(s);
      else s.respond(404, TEXT, Buffer.from('not found\n'));
    },
    onClose() {},
  },
  stderrLogger,
);
const addr = core.listen(Number(portArg), '127.0.0.1');
process.stdout.write(`${JSON.stringify({ listening: addr.port, pid: process.pid })}\n`);
process.on('SIGTERM', () => core.close(true).then(() => process.exit(0)));
