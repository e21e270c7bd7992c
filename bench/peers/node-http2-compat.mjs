// Peer: node:http2's createSecureServer over TLS (TCP) with its
// compatibility API, running the same listener as this project's
// createSecureServer (bench/servers/compat-app.mjs): W1's routes (loaded with
// h2load) and W8's upload and download (the Go client over HTTP/2).
// Usage: node bench/peers/node-http2-compat.mjs <port> <cert> <key> [<file for GET /file>]
import fs from 'node:fs';
import http2 from 'node:http2';
import { createApp } from '../servers/compat-app.mjs';

const [portArg = '8443', cert, key, file] = process.argv.slice(2);
const server = http2.createSecureServer(
  { cert: fs.readFileSync(cert), key: fs.readFileSync(key), settings: { maxConcurrentStreams: 128 } },
  createApp(file),
);
server.on('error', () => {});
server.listen(Number(portArg), '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ listening: Number(portArg), pid: process.pid })}\n`));
process.on('SIGTERM', () => process.exit(0));
