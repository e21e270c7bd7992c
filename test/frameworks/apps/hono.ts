// The framework test app on Hono, served two ways: through
// @hono/node-server's serve() with a `createServer` of node:http2's
// createSecureServer signature, and through a `serve({ fetch, port, cert,
// key })` function (h3-node's serve) taking app.fetch directly.
import http2 from 'node:http2';
import { serve as nodeServe } from '@hono/node-server';
import { serveStatic } from '@hono/node-server/serve-static';
import { Hono } from 'hono';
import { getCookie, setCookie } from 'hono/cookie';
import { stream } from 'hono/streaming';
import {
  COOKIES,
  FetchServe,
  PUBLIC_DIR,
  RunningApp,
  STREAM_CHUNKS,
  STREAM_DELAY_MS,
  SecureServerFactory,
  StartOptions,
  closeServer,
  digestWebStream,
  identity,
  streamChunk,
  thrownOnPurpose,
  whenListening,
} from './common';

export function honoApp(): Hono {
  const app = new Hono();
  app.get('/hello', (c) => c.text('hello from hono'));
  app.post('/json', async (c) => c.json({ received: await c.req.json(), framework: 'hono' }));
  app.get('/cookie', (c) => {
    setCookie(c, 'a', COOKIES.a.value, { path: '/', httpOnly: true });
    // setCookie percent-encodes values ('+', '/', '=' would change): this one goes out as written.
    c.header('Set-Cookie', COOKIES.token.line, { append: true });
    return c.text('cookies set');
  });
  app.get('/whoami', (c) => {
    const cookies = getCookie(c);
    return c.json({ framework: 'hono', raw: c.req.header('cookie') ?? null, cookies: { a: cookies.a, token: cookies.token } });
  });
  app.use('/static/*', serveStatic({ root: PUBLIC_DIR, rewriteRequestPath: (p) => p.replace(/^\/static/, '') }));
  app.get('/throw', () => {
    throw thrownOnPurpose();
  });
  app.get('/stream', (c) => {
    c.header('Content-Type', 'text/plain');
    return stream(c, async (s) => {
      for (let i = 0; i < STREAM_CHUNKS; i++) {
        if (i > 0) await s.sleep(STREAM_DELAY_MS);
        await s.write(streamChunk(i));
      }
    });
  });
  app.post('/upload', async (c) => c.json(await digestWebStream(c.req.raw.body)));
  return app;
}

/** Hono through @hono/node-server's serve(), its server made by `factory` (createServer option). */
export async function startHonoNodeServer(factory: SecureServerFactory, { port = 0, host = '127.0.0.1' }: StartOptions = {}): Promise<RunningApp> {
  const server = nodeServe({
    fetch: honoApp().fetch,
    createServer: factory as any,
    serverOptions: identity(),
    port,
    hostname: host,
  });
  const bound = await whenListening(server as any);
  return { framework: 'hono', port: bound, close: () => closeServer(server as any) };
}

/** Hono's app.fetch handed to a serve({ fetch, port, cert, key }) function. */
export async function startHonoServe(serve: FetchServe, { port = 0, host = '127.0.0.1' }: StartOptions = {}): Promise<RunningApp> {
  const { cert, key } = identity();
  const server = await serve({ fetch: honoApp().fetch, port, hostname: host, cert, key });
  const bound = await whenListening(server);
  return { framework: 'hono', port: bound, close: () => closeServer(server) };
}

/**
 * A serve({ fetch, port, hostname, cert, key }) on node:http2 (through
 * @hono/node-server), the shape h3-node's serve() has: the TCP tests run
 * the serve variant of the Hono app on it.
 */
export const nodeHttp2Serve: FetchServe = ({ fetch, port, hostname, cert, key }) =>
  nodeServe({
    fetch: (request) => fetch(request),
    createServer: http2.createSecureServer,
    serverOptions: { cert, key, allowHTTP1: true },
    port,
    hostname,
  }) as unknown as ReturnType<FetchServe>;
