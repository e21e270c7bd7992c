// Bun's HTTP/3 server (Bun.serve with `http3: true`; its QUIC is lsquic)
// running the same fetch handler as serve({ fetch }): the JavaScript peer of
// W1's and W3's fetch rows. Bun serves HTTP/3 on the UDP port with the TCP
// port's number. `h3: true` is accepted silently and serves nothing over
// QUIC in 1.4.4, hence `http3`; the bench waits for a real HTTP/3 answer
// before it measures.
// Usage: bun bench/peers/bun-fetch.mjs <port> <cert> <key>
import fs from 'node:fs';
import { app } from '../servers/fetch-app.mjs';

const [portArg, cert, key] = process.argv.slice(2);
// eslint-disable-next-line no-undef -- Bun's own global: this file runs on Bun, not Node
const server = Bun.serve({
  port: Number(portArg),
  hostname: '127.0.0.1',
  tls: { cert: fs.readFileSync(cert, 'utf8'), key: fs.readFileSync(key, 'utf8') },
  http3: true,
  fetch: app,
});
process.stdout.write(`${JSON.stringify({ listening: server.port, pid: process.pid })}\n`);
process.on('SIGTERM', () => {
  server.stop(true);
  process.exit(0);
});
