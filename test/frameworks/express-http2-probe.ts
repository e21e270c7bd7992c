// Runs the Express app on node:http2's createSecureServer (argument
// "node", the default) or on h3-node's createSecureServer, whose TCP side
// is node:http2's (argument "h3"), and sends one GET /hello over HTTP/2 on
// TCP; prints what happened as JSON. A child process of the framework
// tests, because what happens is that the server process dies of an
// uncaught exception (expressjs/express#3388, #6580).
import http2 from 'node:http2';
import { createSecureServer, ListenableServer } from '../../src/index';
import { identity } from './apps/common';
import { expressApp } from './apps/express';

const onH3 = process.argv[2] === 'h3';

const out: { status: number | null; body: string; uncaught: string[] } = { status: null, body: '', uncaught: [] };
// Without this handler the process would die at the first one.
process.on('uncaughtException', (e) => {
  out.uncaught.push(String(e.stack ?? e).split('\n').slice(0, 2).join(' '));
  setTimeout(() => {
    console.log(JSON.stringify(out));
    process.exit(0);
  }, 300);
});
// The cast is the finding: Express's types say it takes node:http's objects only.
// What both servers have (serve()'s type for it): a union of their listen() overloads takes no call.
const server: ListenableServer = onH3
  ? createSecureServer({ ...identity(), warnDemoIdentity: false }, expressApp() as never)
  : http2.createSecureServer(identity(), expressApp() as unknown as (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void);
server.listen(0, '127.0.0.1', () => {
  const port = (server.address() as { port: number }).port;
  const client = http2.connect(`https://127.0.0.1:${port}`, { rejectUnauthorized: false });
  client.on('error', () => undefined);
  const req = client.request({ ':path': '/hello' });
  req.on('response', (h) => (out.status = Number(h[':status'])));
  req.on('data', (d) => (out.body += d));
  req.on('error', () => undefined);
  req.on('close', () => {
    setTimeout(() => {
      console.log(JSON.stringify(out));
      process.exit(0);
    }, 300);
  });
  req.end();
});
