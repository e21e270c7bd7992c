// Peer for W8's upload: a plain Node `http` server behind Caddy's
// reverse_proxy (bench/peers/Caddyfile-w8), counting the body as it streams
// through and answering the count; nothing is kept.
// Usage: node bench/peers/node-http-upload.mjs <port>
import http from 'node:http';

const port = Number(process.argv[2] ?? 8080);
const server = http.createServer(async (req, res) => {
  let total = 0;
  for await (const chunk of req) total += chunk.length;
  res.writeHead(200, { 'content-type': 'text/plain' }).end(`${total}\n`);
});
server.keepAliveTimeout = 60_000;
// A 1 GiB upload over a slow proxy must not hit Node's 300 s request timeout.
server.requestTimeout = 0;
server.listen(port, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ listening: port, pid: process.pid })}\n`));
process.on('SIGTERM', () => process.exit(0));
