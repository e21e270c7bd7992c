// What the framework test apps (express.ts, fastify.ts, koa.ts, hono.ts)
// share: the server-factory shapes they start on, the routes' fixed data,
// and the helpers for the streamed response and the streamed upload.
//
// Every app serves the same routes (checked by ../cases.ts):
//   GET  /hello              200 text "hello from <framework>"
//   POST /json               200 JSON { received: <body>, framework }
//   GET  /cookie             two Set-Cookie lines (COOKIES)
//   GET  /whoami             JSON { framework, raw: <cookie header>, cookies: { a, token } }
//   GET  /static/hello.txt   public/hello.txt through the framework's static middleware
//   GET  /throw              the handler throws; the framework's default 500
//   GET  /stream             STREAM_CHUNKS chunks of CHUNK_SIZE bytes, ~STREAM_DELAY_MS apart
//   POST /upload             body consumed as a stream: JSON { bytes, sha256 }
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export const PUBLIC_DIR = path.join(__dirname, '..', 'public');
export const STATIC_FILE = 'hello.txt';
export const STATIC_TEXT = fs.readFileSync(path.join(PUBLIC_DIR, STATIC_FILE), 'utf8');

export const CERT_PATH = path.join(__dirname, '..', '..', '..', 'certs', 'demo-cert.pem');
export const KEY_PATH = path.join(__dirname, '..', '..', '..', 'certs', 'demo-key.pem');

/** The two cookies /cookie sets; the second's value has upper case, '+', '/' and '=' that must arrive unchanged. */
export const COOKIES = {
  a: { value: '1', line: 'a=1; Path=/; HttpOnly' },
  token: { value: 'QUJDZGVm+/==', line: 'token=QUJDZGVm+/==; Path=/' },
} as const;

export const STREAM_CHUNKS = 10;
export const CHUNK_SIZE = 1024;
export const STREAM_DELAY_MS = 20;
export const STREAM_TOTAL = STREAM_CHUNKS * CHUNK_SIZE;

/** Chunk i of /stream: `chunk <i>` padded with dots to CHUNK_SIZE - 1, then a newline. */
export function streamChunk(i: number): string {
  return `chunk ${i}`.padEnd(CHUNK_SIZE - 1, '.') + '\n';
}

export const STREAM_BODY = Array.from({ length: STREAM_CHUNKS }, (_, i) => streamChunk(i)).join('');

/** The /stream body as an async generator: one chunk, then a pause, STREAM_CHUNKS times. */
export async function* streamChunks(): AsyncGenerator<string> {
  for (let i = 0; i < STREAM_CHUNKS; i++) {
    if (i > 0) await sleep(STREAM_DELAY_MS);
    yield streamChunk(i);
  }
}

export interface UploadDigest {
  bytes: number;
  sha256: string;
}

/** Reads a Node stream (or any async iterable of bytes) to its end, counting and hashing; never holds more than one chunk. */
export async function digestStream(body: AsyncIterable<Uint8Array | string>): Promise<UploadDigest> {
  const hash = crypto.createHash('sha256');
  let bytes = 0;
  for await (const chunk of body) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    bytes += buf.byteLength;
    hash.update(buf);
  }
  return { bytes, sha256: hash.digest('hex') };
}

/** The same for a WHATWG ReadableStream, read with a reader. */
export async function digestWebStream(body: ReadableStream<Uint8Array> | null): Promise<UploadDigest> {
  const hash = crypto.createHash('sha256');
  let bytes = 0;
  if (body) {
    const reader = body.getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      bytes += value.byteLength;
      hash.update(value);
    }
  }
  return { bytes, sha256: hash.digest('hex') };
}

/** A cookie header parsed the plain way (for frameworks without a cookie parser of their own). */
export function parseCookieHeader(header: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (header ?? '').split(/;\s*/)) {
    const eq = part.indexOf('=');
    if (eq > 0) out[part.slice(0, eq).trim()] = part.slice(eq + 1).trim();
  }
  return out;
}

/**
 * An error whose stack is one line, so the frameworks' default error
 * logging (Hono logs every error it turns into a 500) stays one line in
 * test output.
 */
export function thrownOnPurpose(): Error {
  const e = new Error('thrown on purpose by GET /throw');
  e.stack = `Error: ${e.message}`;
  return e;
}

// ------------------------------------------------------------ server shapes

/** What the apps need of a server: node:net's listen/address/close, as node:http2's and h3-node's servers have. */
export interface ServerLike {
  listen(...args: any[]): unknown;
  address(): { port: number } | string | null;
  close(callback?: (err?: Error) => void): unknown;
  once?(event: string, listener: (...args: any[]) => void): unknown;
  on?(event: string, listener: (...args: any[]) => void): unknown;
}

export type Listener = (req: any, res: any) => void;

/** TLS options as node:http2's createSecureServer takes them: PEM contents, not paths. */
export interface SecureOptions {
  cert: Buffer | string;
  key: Buffer | string;
  allowHTTP1?: boolean;
}

/** `http2.createSecureServer(options, listener)`, or h3-node's createSecureServer with the same signature. */
export type SecureServerFactory = (options: SecureOptions, listener: Listener) => ServerLike;

/** A `serve({ fetch, port, hostname, cert, key })` function for WHATWG fetch handlers (h3-node's serve). */
export type FetchServe = (options: {
  fetch: (request: Request) => Response | Promise<Response>;
  port: number;
  hostname?: string;
  cert: Buffer | string;
  key: Buffer | string;
}) => ServerLike | Promise<ServerLike>;

export interface StartOptions {
  /** Defaults to 0 (any free port). */
  port?: number;
  /** Defaults to 127.0.0.1. */
  host?: string;
}

export interface RunningApp {
  framework: string;
  port: number;
  close(): Promise<void>;
}

export function identity(): SecureOptions {
  return { cert: fs.readFileSync(CERT_PATH), key: fs.readFileSync(KEY_PATH), allowHTTP1: true };
}

/** The bound port of a server, or undefined while it is not listening. */
export function portOf(server: ServerLike): number | undefined {
  const a = server.address();
  return a && typeof a === 'object' && a.port ? a.port : undefined;
}

/**
 * Waits until a server listens: at once if address() already has a port,
 * else for its 'listening' event (or 'error'). Works for servers whose
 * listen() was called by someone else (Fastify, @hono/node-server, serve()).
 */
export function whenListening(server: ServerLike, timeoutMs = 10000): Promise<number> {
  // A server that says it is not listening yet may still change its port
  // (createSecureServer's listen(0) picks again when the TCP number is
  // taken): its address counts once 'listening' comes.
  const notYet = (server as { listening?: unknown }).listening === false;
  const now = portOf(server);
  if (now !== undefined && !notYet) return Promise.resolve(now);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('server did not start listening')), timeoutMs);
    const poll = setInterval(() => {
      const p = portOf(server);
      if (p !== undefined && (server as { listening?: unknown }).listening !== false) done(undefined, p);
    }, 20);
    const done = (err: Error | undefined, port?: number) => {
      clearTimeout(timer);
      clearInterval(poll);
      if (err) reject(err);
      else resolve(port ?? portOf(server)!);
    };
    server.once?.('listening', () => done(undefined));
    server.once?.('error', (e: Error) => done(e));
  });
}

/** listen(port, host) the node:net way, resolving with the bound port. */
export async function listen(server: ServerLike, { port = 0, host = '127.0.0.1' }: StartOptions): Promise<number> {
  const ret = server.listen(port, host);
  // h3-node's demo createServer returns a promise from listen(); node's servers return the server.
  if (ret && typeof (ret as Promise<unknown>).then === 'function') await ret;
  return whenListening(server);
}

/** close() the node:net way (callback), or a close() that returns a promise. */
export function closeServer(server: ServerLike): Promise<void> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const finish = (err?: Error) => {
      if (settled) return;
      settled = true;
      // ERR_SERVER_NOT_RUNNING: closed already (e.g. by the framework).
      if (err && (err as NodeJS.ErrnoException).code !== 'ERR_SERVER_NOT_RUNNING') reject(err);
      else resolve();
    };
    const ret = server.close(finish);
    if (ret && typeof (ret as Promise<void>).then === 'function') (ret as Promise<void>).then(() => finish(), finish);
  });
}
