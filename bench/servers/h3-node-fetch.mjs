// Benchmark launcher for this project's fetch-handler API: serve({ fetch })
// from dist/index.js with W1's and W3's routes written as a fetch handler
// (Request in, Response out), so issue 17's W6 rows measure `serve` beside
// createServer and createSecureServer in the same run.
//   Profile A (W1): /redirect, /login, /secret, 404 otherwise
//   Profile C (W3): POST /count, the body counted as it streams, 413 past 4096 bytes
// Usage: node bench/servers/h3-node-fetch.mjs <port> <cert> <key>
import fs from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { serve } = require('../../dist/index.js');

const BEARER = 'Bearer h3-demo-token-2f9c';
const COOKIE = 'session=h3-demo-7b41e0';
const CAP = 4096;
const TEXT = { 'content-type': 'text/plain' };

async function count(request) {
  let total = 0;
  // The body read as it arrives; a reader that stops early cancels the rest.
  for await (const chunk of request.body ?? []) {
    total += chunk.length;
    if (total > CAP) return new Response('too large\n', { status: 413, headers: TEXT });
  }
  return new Response(`${total}\n`, { headers: TEXT });
}

function app(request) {
  const url = request.url;
  // The path without scheme, authority and query, as the routes need it.
  const start = url.indexOf('/', url.indexOf('//') + 2);
  const q = url.indexOf('?', start);
  switch (q === -1 ? url.slice(start) : url.slice(start, q)) {
    case '/redirect':
      return new Response(null, { status: 302, headers: { location: '/target' } });
    case '/login':
      return new Response('login succeeded\n', { headers: { 'content-type': 'text/plain', 'set-cookie': COOKIE } });
    case '/secret': {
      const ok = request.headers.get('authorization') === BEARER || request.headers.get('cookie') === COOKIE;
      return ok ? new Response('secret: the owl flies at midnight\n', { headers: TEXT }) : new Response('unauthorized\n', { status: 401, headers: TEXT });
    }
    case '/count':
      return count(request);
  }
  return new Response('not found\n', { status: 404, headers: TEXT });
}

const [portArg = '4433', cert, key] = process.argv.slice(2);
const server = serve({ fetch: app, port: Number(portArg), hostname: '127.0.0.1', cert: fs.readFileSync(cert), key: fs.readFileSync(key) }, (info) => {
  process.stdout.write(`${JSON.stringify({ listening: info.port, pid: process.pid })}\n`);
});
server.on('error', (e) => {
  process.stderr.write(`h3-node-fetch: ${e.message}\n`);
  process.exit(1);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
