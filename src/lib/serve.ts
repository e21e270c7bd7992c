// serve({ fetch }): runs a WHATWG fetch handler (Hono's app.fetch, or any
// (Request) => Response) over HTTP/3, and over TCP beside it, with the call
// shape of @hono/node-server's serve(options, listeningListener), which is
// what Hono users already write. The server underneath is the
// node:http2-compatible createSecureServer (compat/); the fetch handler
// becomes its request listener through fetch-adapter.ts.
import type { AddressInfo } from 'node:net';
import type { SecureServerOptions } from './compat/server';
import { FetchAdapterOptions, FetchHandler, NodeRequestLike, NodeResponseLike, toRequestListener } from './fetch-adapter';

/** What serve() needs of a server: node:net's listen/close/address trio. */
export interface ListenableServer {
  listen(port: number, hostname: string | undefined, listeningListener: () => void): unknown;
  close(callback?: (err?: Error) => void): unknown;
  address(): AddressInfo | string | null;
}

/**
 * Makes the server: compat's createSecureServer by default; node:http2's
 * createSecureServer has the same signature (the tests use it, and so can
 * an app that wants TCP only).
 */
export type SecureServerFactory<S extends ListenableServer = ListenableServer> = (
  options: Record<string, unknown>,
  listener: (req: any, res: any) => void,
) => S;

/** The rest of the options are createSecureServer's (the default factory's), passed on. */
export interface ServeOptions<S extends ListenableServer = ListenableServer>
  extends Omit<SecureServerOptions, 'cert' | 'key' | 'tcp' | 'allowHTTP1'>,
    FetchAdapterOptions {
  fetch: FetchHandler;
  /** UDP port (and the TCP sibling's); default 4433. 0 picks a free one. */
  port?: number;
  /** Local address; the server's default ("::", dual-stack) when omitted. */
  hostname?: string;
  /** PEM certificate chain; the server's default (the demo identity, with its warning) when omitted. */
  cert?: string | Buffer;
  /** PEM private key. */
  key?: string | Buffer;
  /** Also serve HTTP/2 and HTTP/1.1 on TCP with Alt-Svc (README "The TCP sibling and Alt-Svc"); default on. */
  tcp?: boolean;
  /** The server factory (@hono/node-server's option name); compat's createSecureServer by default. */
  createServer?: SecureServerFactory<S>;
  /** More options for the factory, passed as they are (also @hono/node-server's name). */
  serverOptions?: Record<string, unknown>;
}

/**
 * Starts serving `fetch` and returns the server at once;
 * `listeningListener` gets the bound address (as in @hono/node-server).
 * Errors while listening (a port in use) are the server's 'error' event.
 */
export function serve<S extends ListenableServer = ListenableServer>(
  options: ServeOptions<S>,
  listeningListener?: (info: AddressInfo) => void,
): S {
  const {
    fetch,
    port = 4433,
    hostname,
    createServer,
    serverOptions,
    onError,
    baseUrl,
    tcp,
    cert,
    key,
    ...coreOptions
  } = options;
  const factory = createServer ?? (defaultFactory() as SecureServerFactory<S>);
  const listener = toRequestListener(fetch, { onError, baseUrl });
  const server = factory(
    {
      ...coreOptions,
      // The adapter serves node:http's objects as well as node:http2's, so
      // the TCP side may take HTTP/1.1 clients (curl, health checks) too.
      allowHTTP1: true,
      ...(tcp === undefined ? {} : { tcp }),
      ...(cert === undefined ? {} : { cert }),
      ...(key === undefined ? {} : { key }),
      ...serverOptions,
    },
    listener as (req: NodeRequestLike, res: NodeResponseLike) => void,
  );
  const listening = server.listen(port, hostname, () => {
    listeningListener?.(server.address() as AddressInfo);
  });
  // A listen() that reports failure by a rejected promise rather than an
  // 'error' event gets the event anyway, so both kinds fail the same way.
  if (isThenable(listening)) {
    listening.then(undefined, (e: unknown) => {
      const emitter = server as unknown as { emit?: (event: string, err: unknown) => boolean };
      if (typeof emitter.emit === 'function') emitter.emit('error', e);
      else throw e;
    });
  }
  return server;
}

/** compat's createSecureServer, loaded when first needed (it pulls in the native addon). */
function defaultFactory(): SecureServerFactory {
  let mod: { createSecureServer?: SecureServerFactory };
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    mod = require('./compat/server');
  } catch (e) {
    throw new Error(`serve(): the HTTP/3 compatibility server is not available (${(e as Error).message.split('\n')[0]}); pass createServer`);
  }
  if (typeof mod.createSecureServer !== 'function') throw new Error('serve(): ./compat/server has no createSecureServer');
  return mod.createSecureServer;
}

function isThenable(v: unknown): v is PromiseLike<unknown> {
  return typeof (v as { then?: unknown } | null)?.then === 'function';
}
