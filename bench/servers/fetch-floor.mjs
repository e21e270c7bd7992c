// The least any fetch adapter on createSecureServer can cost, given the
// platform's own Request and Response: per request, one real Request
// (method, URL and the field list, a signal to follow, the upload as a web
// stream when there is one), serve's fetch handler (fetch-app.mjs) making
// its Response, and that Response's body read through its web stream. No
// error handling, no abort wiring, no HEAD or status rules: the floor under
// serve's row, not a server to use. On Node 24 and 26 undici takes only a
// Request its constructor made (src/lib/lazy-request.ts), so serve cannot
// go below this row there without leaving the platform's classes.
// Usage: node bench/servers/fetch-floor.mjs <port> <cert> <key>
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { Readable } from 'node:stream';
import { app } from './fetch-app.mjs';

const require = createRequire(import.meta.url);
const { createSecureServer } = require('../../dist/index.js');

async function listener(req, res) {
  const h = req.headers;
  const fields = [];
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) if (raw[i].charCodeAt(0) !== 0x3a) fields.push([raw[i], raw[i + 1]]);
  const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
  const request = new Request(`${h[':scheme']}://${h[':authority']}${h[':path']}`, {
    method: req.method,
    headers: fields,
    body: hasBody ? Readable.toWeb(req) : undefined,
    signal: new AbortController().signal,
    duplex: 'half',
  });
  const response = await app(request);
  const out = {};
  response.headers.forEach((v, k) => (out[k] = v));
  if (!response.body) {
    res.writeHead(response.status, out);
    res.end();
    return;
  }
  const reader = response.body.getReader();
  const chunks = [];
  for (;;) {
    const r = await reader.read();
    if (r.done) break;
    chunks.push(r.value);
  }
  res.writeHead(response.status, out);
  res.end(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks));
}

const [portArg = '4433', cert, key] = process.argv.slice(2);
const server = createSecureServer({ cert: fs.readFileSync(cert), key: fs.readFileSync(key) }, listener);
server.on('error', (e) => {
  process.stderr.write(`fetch-floor: ${e.message}\n`);
  process.exit(1);
});
server.listen(Number(portArg), '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ listening: server.address().port, pid: process.pid })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
