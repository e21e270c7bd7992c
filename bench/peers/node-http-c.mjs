// Peer for W3: a plain Node `http` server doing Profile C's count (what a
// Node developer puts behind Caddy to offer HTTP/3). Counts the body chunk
// by chunk; over 4096 bytes it answers 413 at once and stops reading.
// Usage: node bench/peers/node-http-c.mjs <port>
import http from 'node:http';

const CAP = 4096;
const port = Number(process.argv[2] ?? 8080);
const server = http.createServer((req, res) => {
  let total = 0;
  let cut = false;
  req.on('data', (chunk) => {
    if (cut) return;
    total += chunk.length;
    if (total > CAP) {
      cut = true;
      res.writeHead(413, { connection: 'close' }).end();
      req.destroy();
    }
  });
  req.on('end', () => {
    if (cut) return;
    res.writeHead(200, { 'content-type': 'text/plain' }).end(`${total}\n`);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(port, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ listening: port, pid: process.pid })}\n`));
process.on('SIGTERM', () => process.exit(0));
