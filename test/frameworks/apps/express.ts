// The framework test app on Express 5, started on any server factory with
// node:http2's createSecureServer signature.
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import express from 'express';
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
  parseCookieHeader,
  streamChunks,
  thrownOnPurpose,
} from './common';

export function expressApp(): express.Express {
  const app = express();
  // finalhandler writes each error's stack to stderr unless env is "test";
  // the 500 it sends is the same.
  app.set('env', 'test');
  app.use(express.json());
  app.get('/hello', (_req, res) => {
    res.type('text/plain').send('hello from express');
  });
  app.post('/json', (req, res) => {
    res.json({ received: req.body, framework: 'express' });
  });
  app.get('/cookie', (_req, res) => {
    res.cookie('a', COOKIES.a.value, { path: '/', httpOnly: true });
    // encode: String keeps the value as it is (the default percent-encodes '+', '/' and '=').
    res.cookie('token', COOKIES.token.value, { path: '/', encode: String });
    res.type('text/plain').send('cookies set');
  });
  app.get('/whoami', (req, res) => {
    res.json({ framework: 'express', raw: req.headers.cookie ?? null, cookies: parseCookieHeader(req.headers.cookie) });
  });
  app.use('/static', express.static(PUBLIC_DIR));
  app.get('/throw', () => {
    throw thrownOnPurpose();
  });
  app.get('/stream', async (_req, res) => {
    res.type('text/plain');
    await pipeline(Readable.from(streamChunks()), res);
  });
  app.post('/upload', async (req, res) => {
    res.json(await digestStream(req));
  });
  return app;
}

export async function startExpress(factory: SecureServerFactory, options: StartOptions = {}): Promise<RunningApp> {
  const server = factory(identity(), expressApp());
  const port = await listen(server, options);
  return { framework: 'express', port, close: () => closeServer(server) };
}
