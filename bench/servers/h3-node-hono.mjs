// W1's routes as a Hono app (`new Hono()`, three routes, one middleware)
// through this project's serve({ fetch: app.fetch }): what a Hono user pays
// per request, beside the hand-written fetch handler's row. Hono's c.text()
// adds `; charset=UTF-8` to the content type, a few bytes more than the
// other rows send.
// Usage: node bench/servers/h3-node-hono.mjs <port> <cert> <key>
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { Hono } from 'hono';

const require = createRequire(import.meta.url);
const { serve } = require('../../dist/index.js');

const BEARER = 'Bearer h3-demo-token-2f9c';
const COOKIE = 'session=h3-demo-7b41e0';

const app = new Hono();
// The kind of middleware most apps have: something kept on the context for
// the handlers, work after the handler has answered.
let served = 0;
app.use(async (c, next) => {
  c.set('started', performance.now());
  await next();
  served++;
});
app.get('/redirect', (c) => c.redirect('/target', 302));
app.get('/login', (c) => {
  c.header('set-cookie', COOKIE);
  return c.text('login succeeded\n');
});
app.get('/secret', (c) => {
  const ok = c.req.header('authorization') === BEARER || c.req.header('cookie') === COOKIE;
  return ok ? c.text('secret: the owl flies at midnight\n') : c.text('unauthorized\n', 401);
});
app.notFound((c) => c.text('not found\n', 404));

const [portArg = '4433', cert, key] = process.argv.slice(2);
const server = serve({ fetch: app.fetch, port: Number(portArg), hostname: '127.0.0.1', cert: fs.readFileSync(cert), key: fs.readFileSync(key) }, (info) => {
  process.stdout.write(`${JSON.stringify({ listening: info.port, pid: process.pid })}\n`);
});
server.on('error', (e) => {
  process.stderr.write(`h3-node-hono: ${e.message}\n`);
  process.exit(1);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
process.on('exit', () => process.stderr.write(`h3-node-hono: ${served} requests through the middleware\n`));
