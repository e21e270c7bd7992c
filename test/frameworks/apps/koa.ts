// The framework test app on Koa (with @koa/router, @koa/bodyparser and
// koa-send), started on any server factory with node:http2's
// createSecureServer signature.
import { Readable } from 'node:stream';
import { bodyParser } from '@koa/bodyparser';
import Router from '@koa/router';
import Koa from 'koa';
import send from 'koa-send';
import {
  COOKIES,
  PUBLIC_DIR,
  RunningApp,
  SecureServerFactory,
  StartOptions,
  closeServer,
  digestStream,
  identity,
  listen,
  streamChunks,
  thrownOnPurpose,
} from './common';

export function koaApp(): Koa {
  const app = new Koa();
  // Koa logs every error it turns into a 500 unless silent; the 500 is the same.
  app.silent = true;
  const router = new Router();
  router.get('/hello', (ctx) => {
    ctx.type = 'text/plain';
    ctx.body = 'hello from koa';
  });
  router.post('/json', bodyParser(), (ctx) => {
    ctx.body = { received: ctx.request.body, framework: 'koa' };
  });
  router.get('/cookie', (ctx) => {
    ctx.cookies.set('a', COOKIES.a.value, { path: '/', httpOnly: true });
    ctx.cookies.set('token', COOKIES.token.value, { path: '/', httpOnly: false });
    ctx.type = 'text/plain';
    ctx.body = 'cookies set';
  });
  router.get('/whoami', (ctx) => {
    ctx.body = {
      framework: 'koa',
      raw: ctx.get('cookie') || null,
      cookies: { a: ctx.cookies.get('a'), token: ctx.cookies.get('token') },
    };
  });
  router.get('/static/:file', async (ctx) => {
    await send(ctx, ctx.params.file, { root: PUBLIC_DIR });
  });
  router.get('/throw', () => {
    throw thrownOnPurpose();
  });
  router.get('/stream', (ctx) => {
    ctx.type = 'text/plain';
    ctx.body = Readable.from(streamChunks());
  });
  router.post('/upload', async (ctx) => {
    ctx.body = await digestStream(ctx.req);
  });
  app.use(router.routes());
  app.use(router.allowedMethods());
  return app;
}

export async function startKoa(factory: SecureServerFactory, options: StartOptions = {}): Promise<RunningApp> {
  const server = factory(identity(), koaApp().callback());
  const port = await listen(server, options);
  return { framework: 'koa', port, close: () => closeServer(server) };
}
