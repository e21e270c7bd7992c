// Every framework test app, by name, on one server factory.
import { FetchServe, RunningApp, SecureServerFactory, StartOptions } from './common';
import { startExpress } from './express';
import { startFastify } from './fastify';
import { startHonoNodeServer, startHonoServe } from './hono';
import { startKoa } from './koa';

export * from './common';

export interface AppVariant {
  /** e.g. "express", "hono (serve)". */
  name: string;
  /** The framework the app's /hello names. */
  framework: string;
  start(options?: StartOptions): Promise<RunningApp>;
}

/** Every app on `factory`, and Hono also on `serve` when given. */
export function appVariants(factory: SecureServerFactory, serve?: FetchServe): AppVariant[] {
  const variants: AppVariant[] = [
    { name: 'express', framework: 'express', start: (o) => startExpress(factory, o) },
    { name: 'fastify (serverFactory)', framework: 'fastify', start: (o) => startFastify(factory, o) },
    { name: 'koa', framework: 'koa', start: (o) => startKoa(factory, o) },
    { name: 'hono (@hono/node-server createServer)', framework: 'hono', start: (o) => startHonoNodeServer(factory, o) },
  ];
  if (serve) variants.push({ name: 'hono (serve)', framework: 'hono', start: (o) => startHonoServe(serve, o) });
  return variants;
}
