// The framework test app on Fastify 5 (with @fastify/static), its server
// made by `serverFactory` from any factory with node:http2's
// createSecureServer signature.
import { Readable } from 'node:stream';
import fastifyStatic from '@fastify/static';
import Fastify, { FastifyInstance } from 'fastify';
import {
  COOKIES,
  PUBLIC_DIR,
  RunningApp,
  SecureServerFactory,
  StartOptions,
  digestStream,
  identity,
  parseCookieHeader,
  streamChunks,
  thrownOnPurpose,
} from './common';

export function fastifyApp(factory: SecureServerFactory): FastifyInstance {
  const app = Fastify({
    // Fastify calls serverFactory(handler, options) and then listen({ port, host }) on what it returns.
    serverFactory: ((handler: any) => factory(identity(), handler)) as any,
  }) as unknown as FastifyInstance;
  // The upload route takes its body as the raw stream: no buffering, no bodyLimit.
  app.addContentTypeParser('application/octet-stream', (_req, payload, done) => done(null, payload));
  app.register(fastifyStatic, { root: PUBLIC_DIR, prefix: '/static/' });
  app.get('/hello', async (_req, reply) => reply.type('text/plain').send('hello from fastify'));
  app.post('/json', async (req) => ({ received: req.body, framework: 'fastify' }));
  // No cookie plugin: Fastify sends an array value as one field line per element.
  app.get('/cookie', async (_req, reply) =>
    reply.header('set-cookie', [COOKIES.a.line, COOKIES.token.line]).type('text/plain').send('cookies set'),
  );
  app.get('/whoami', async (req) => ({
    framework: 'fastify',
    raw: req.headers.cookie ?? null,
    cookies: parseCookieHeader(req.headers.cookie),
  }));
  app.get('/throw', async () => {
    throw thrownOnPurpose();
  });
  app.get('/stream', async (_req, reply) => reply.type('text/plain').send(Readable.from(streamChunks())));
  app.post('/upload', async (req) => digestStream(req.body as Readable));
  return app;
}

export async function startFastify(factory: SecureServerFactory, { port = 0, host = '127.0.0.1' }: StartOptions = {}): Promise<RunningApp> {
  const app = fastifyApp(factory);
  await app.listen({ port, host });
  const addr = app.server.address();
  return { framework: 'fastify', port: typeof addr === 'object' && addr ? addr.port : port, close: () => app.close() };
}
