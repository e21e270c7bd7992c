// A WHATWG fetch handler (Request in, Response out) as a Node request
// listener, the way Bun, Deno and Cloudflare Workers serve: `app.fetch` of
// Hono and its kin runs unchanged. It takes the req/res shapes of
// node:http2's compatibility API (and so of this library's HTTP/3
// compatibility server) and of node:http, because the TCP sibling hands the
// same listener HTTP/1.1 requests too.
//
// Bodies stream both ways with backpressure: the request body is a web
// ReadableStream that pulls one chunk from the Node stream per read (a
// handler that does not read leaves the data in the transport, and flow
// control slows the client), and the response body is written chunk by
// chunk, waiting for 'drain' whenever write() says the buffer is full.
import type { EventEmitter } from 'node:events';
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import type { ReadableStreamReadResult } from 'node:stream/web';
import { ExchangeFate } from './exchange-fate';
import { lazyRequest, STAND_IN_ACCEPTED } from './lazy-request';

/** The request side: node:http2's Http2ServerRequest, node:http's IncomingMessage, or the HTTP/3 compat request. */
export interface NodeRequestLike extends Readable {
  readonly method?: string;
  readonly url?: string;
  readonly headers: IncomingHttpHeaders;
  /** Field lines in arrival order, name, value, ...; pseudo-headers included on HTTP/2 and HTTP/3. */
  readonly rawHeaders?: string[];
  readonly socket?: unknown;
}

/** The response side: Http2ServerResponse, ServerResponse, or the HTTP/3 compat response. */
export interface NodeResponseLike extends EventEmitter {
  readonly headersSent: boolean;
  writeHead(status: number, headers?: OutgoingHttpHeaders): unknown;
  write(chunk: Uint8Array): boolean;
  end(): unknown;
  end(chunk: Uint8Array): unknown;
  destroy(err?: Error): unknown;
  flushHeaders?(): void;
}

/** The second argument of the fetch handler: the Node objects underneath, as @hono/node-server passes them (`c.env.incoming`). */
export interface FetchEnv {
  incoming: NodeRequestLike;
  outgoing: NodeResponseLike;
}

export type FetchHandler = (request: Request, env: FetchEnv) => Response | Promise<Response>;

export interface FetchAdapterOptions {
  /**
   * The handler threw or rejected, or its response body errored. The client
   * got a 500 (nothing sent yet) or a reset stream (already streaming). The
   * default writes one line with console.error.
   */
  onError?: (err: unknown, request: Request | undefined) => void;
  /** Origin used when a request names no authority (an HTTP/1.0 request without Host), e.g. "https://example.com". */
  baseUrl?: string;
}

// Connection-specific fields have no place in HTTP/2 and HTTP/3 responses
// (node:http2 throws on them); the Node layer underneath frames the body itself.
const CONNECTION_FIELDS = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade']);

/** A Node request listener that serves each request with `fetch`. */
export function toRequestListener(
  fetch: FetchHandler,
  options: FetchAdapterOptions = {},
): (req: NodeRequestLike, res: NodeResponseLike) => void {
  const onError =
    options.onError ??
    ((err: unknown, request: Request | undefined) =>
      console.error(`h3-node: fetch handler failed${request ? ` for ${request.method} ${request.url}` : ''}: ${describe(err)}`));
  const fallbackOrigin = options.baseUrl ? new URL(options.baseUrl).origin : undefined;
  return (req, res) => {
    // Nothing thrown here may become an unhandled rejection (onError itself
    // throwing, a write to a stream the client already reset): one line, and
    // the stream is reset so the client is not left waiting.
    serveOne(fetch, req, res, onError, fallbackOrigin).catch((e: unknown) => {
      console.error(`h3-node: fetch adapter: ${describe(e)}`);
      res.destroy(e instanceof Error ? e : undefined);
    });
  };
}

async function serveOne(
  fetch: FetchHandler,
  req: NodeRequestLike,
  res: NodeResponseLike,
  onError: (err: unknown, request: Request | undefined) => void,
  fallbackOrigin: string | undefined,
): Promise<void> {
  // The exchange's fate, from the Node side: finished normally, or the
  // client went away first (then the handler's signal aborts and the
  // response body is cancelled).
  let finished = false;
  const gone = new ExchangeFate();
  res.once('finish', () => (finished = true));
  res.once('close', () => {
    if (!finished) gone.abort(new Error('the client went away before the response was complete'));
  });
  req.once('aborted', () => gone.abort(new Error('the client aborted the request')));
  req.on('error', (e: Error) => gone.abort(e));

  let request: Request;
  let body: RequestBody | undefined;
  let hasBody = false;
  // What the handler did not read is dropped once it is done with the request.
  // (No RequestBody means the real Request was never built: nothing but the Node stream holds the body.)
  const discardBody = () => (body ? body.discard() : hasBody && req.resume());
  try {
    const method = requestMethod(req.method ?? 'GET');
    hasBody = method !== 'GET' && method !== 'HEAD';
    const init = (headers: Headers | Array<[string, string]>) => {
      body = hasBody ? new RequestBody(req) : undefined;
      return {
        method,
        headers,
        body: body?.stream,
        signal: gone.signal,
        // A streamed body is sent as it is read; undici requires saying so.
        duplex: 'half',
      } as RequestInit;
    };
    if (STAND_IN_ACCEPTED) {
      // Parsed as the Request constructor parses it, so `url` reads the same
      // whether or not the real Request is ever built.
      const url = new URL(requestUrl(req, fallbackOrigin)).href;
      // The real Request, with the body stream and the signal, only when the
      // handler asks for more than method, URL and headers (lazy-request.ts).
      request = lazyRequest(method, url, new Headers(requestFields(req)), (headers) => new Request(url, init(headers)));
    } else {
      // This undici takes only a Request its constructor made: built now,
      // and left to parse the URL and fill its own Headers from the field
      // list, which a Headers made here first would have it copy.
      request = new Request(requestUrl(req, fallbackOrigin), init(requestFields(req)));
    }
  } catch (e) {
    // A URL, method or field the fetch API cannot represent: the client's fault.
    if (!res.headersSent) res.writeHead(400, { 'content-type': 'text/plain; charset=utf-8' });
    res.end(Buffer.from(`bad request: ${describe(e)}\n`));
    // (A body stream made before the constructor refused would hold the data back: it drops it instead.)
    discardBody();
    return;
  }
  let response: Response;
  try {
    response = await fetch(request, { incoming: req, outgoing: res });
    if (!isResponse(response)) throw new TypeError(`the fetch handler returned ${describe(response)}, not a Response`);
  } catch (e) {
    if (!gone.aborted) {
      // (If the client left, it failed for that reason, and no one is there to answer.)
      onError(e, request);
      fail(res, e);
    }
    discardBody();
    return;
  }
  try {
    await writeResponse(response, req.method === 'HEAD', res, gone);
  } catch (e) {
    if (gone.aborted) return;
    onError(e, request);
    fail(res, e);
  } finally {
    // A body the handler left unread is drained once the response is
    // written, so the HTTP/2 (or HTTP/3) stream can complete (node:http2
    // emits neither 'finish' nor 'close' while the request half is open)
    // and an HTTP/1.1 connection stays usable, as node:http does itself.
    discardBody();
  }
}

/** 500 if nothing was sent yet, else the stream is reset: a truncated body must not look complete. */
function fail(res: NodeResponseLike, err: unknown): void {
  if (!res.headersSent) {
    res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
    res.end(Buffer.from('internal server error\n'));
  } else {
    res.destroy(err instanceof Error ? err : new Error(describe(err)));
  }
}

/**
 * The request URL: scheme, authority and path from the pseudo-headers on
 * HTTP/2 and HTTP/3, from the Host field, the socket and req.url on HTTP/1.1.
 */
function requestUrl(req: NodeRequestLike, fallbackOrigin: string | undefined): string {
  const h = req.headers;
  const scheme = one(h[':scheme']) ?? ((req.socket as { encrypted?: boolean } | null | undefined)?.encrypted ? 'https' : 'http');
  const authority = one(h[':authority']) ?? one(h.host);
  const path = one(h[':path']) ?? req.url ?? '/';
  if (/^https?:\/\//i.test(path)) return path; // HTTP/1.1 absolute-form (a request via a proxy)
  let origin: string;
  if (authority) {
    // Concatenated, not resolved with new URL(path, base): a path like
    // //other.example would otherwise replace the host. The authority
    // itself must not carry a path, query, userinfo or fragment.
    if (/[/?#@\\\s]/.test(authority)) throw new TypeError(`invalid authority ${JSON.stringify(authority)}`);
    origin = `${scheme}://${authority}`;
  } else if (fallbackOrigin) {
    origin = fallbackOrigin;
  } else {
    throw new TypeError('the request names no authority (no :authority or Host)');
  }
  return path.startsWith('/') ? origin + path : `${origin}/${path === '*' ? '*' : path}`;
}

/** Request fields without pseudo-headers, repeated lines kept; cookie lines joined with "; " (RFC 9113 8.2.3). */
function requestFields(req: NodeRequestLike): Array<[string, string]> {
  const fields: Array<[string, string]> = [];
  const cookies: string[] = [];
  let hasHost = false;
  const add = (name: string, value: string) => {
    if (name.charCodeAt(0) === 0x3a /* ':' */) return;
    const lower = name.toLowerCase();
    if (lower === 'cookie') cookies.push(value);
    else {
      if (lower === 'host') hasHost = true;
      fields.push([lower, value]);
    }
  };
  const raw = req.rawHeaders;
  if (raw) {
    for (let i = 0; i + 1 < raw.length; i += 2) add(raw[i], raw[i + 1]);
  } else {
    for (const [name, value] of Object.entries(req.headers)) {
      if (Array.isArray(value)) for (const v of value) add(name, v);
      else if (value !== undefined) add(name, value);
    }
  }
  if (cookies.length > 0) fields.push(['cookie', cookies.join('; ')]);
  // HTTP/2 and HTTP/3 carry the host in :authority only; handlers written for
  // fetch servers read the Host field (Deno and Bun supply it too).
  const authority = one(req.headers[':authority']);
  if (authority && !hasHost) fields.push(['host', authority]);
  return fields;
}

// The methods the Request constructor refuses, and those it writes in upper case (fetch standard, "normalize").
const FORBIDDEN_METHODS = new Set(['CONNECT', 'TRACE', 'TRACK']);
const NORMALIZED_METHODS = new Set(['DELETE', 'GET', 'HEAD', 'OPTIONS', 'POST', 'PUT']);
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** The method as `new Request` would take it: a token, not forbidden, the six standard ones upper-cased; else a TypeError. */
function requestMethod(method: string): string {
  if (!TOKEN.test(method)) throw new TypeError(`'${method}' is not a valid HTTP method.`);
  const upper = method.toUpperCase();
  if (FORBIDDEN_METHODS.has(upper)) throw new TypeError(`'${method}' HTTP method is unsupported.`);
  return NORMALIZED_METHODS.has(upper) ? upper : method;
}

function one(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/**
 * The request body as a web ReadableStream that pulls: each read takes one
 * chunk from the Node stream, which stays paused in between, so unread
 * bytes stay in the Node stream's buffer (bounded by its highWaterMark) and
 * then in the transport, where flow control stops the client.
 */
class RequestBody {
  readonly stream: ReadableStream<Uint8Array>;
  #waiting: ((chunk: Buffer | null, err?: Error) => void) | undefined;
  #ended = false;
  #failed: Error | undefined;
  #discarding = false;

  constructor(private readonly req: NodeRequestLike) {
    // Built when the handler first asks for the body, which may be after the
    // client went away: then it fails at once instead of waiting for data.
    if ((req as { aborted?: boolean }).aborted || (req.destroyed && !req.readableEnded)) {
      this.#failed = new Error('the request body ended early: the client went away');
    } else if (req.readableEnded) {
      // Asked for after the response, when the adapter had drained it: what is left is nothing.
      this.#ended = true;
    }
    req.pause();
    req.on('data', (chunk: Buffer) => {
      if (this.#discarding) return;
      // One chunk per pull: stop the flow until the reader asks again.
      req.pause();
      const waiting = this.#waiting;
      this.#waiting = undefined;
      if (waiting) waiting(chunk);
      else req.unshift(chunk); // arrived without a pull (someone else resumed): keep it for the next one
    });
    // node:http2's compatibility request ends normally when the client
    // resets the stream, after 'aborted': that end must not pass for a
    // complete body.
    const aborted = () => this.#fail(new Error('the request body ended early: the client aborted the request'));
    req.once('aborted', aborted);
    req.once('end', () => {
      if ((req as { aborted?: boolean }).aborted) return aborted();
      this.#ended = true;
      this.#settle(null);
    });
    req.on('error', (e: Error) => this.#fail(e));
    req.once('close', () => {
      if (!this.#ended) this.#fail(new Error('the request body ended early: the client went away'));
    });
    this.stream = new ReadableStream<Uint8Array>(
      {
        pull: (controller) =>
          new Promise<void>((resolve) => {
            const deliver = (chunk: Buffer | null, err?: Error) => {
              if (err) controller.error(err);
              else if (chunk === null) controller.close();
              // A plain Uint8Array view: handlers may compare constructors.
              else controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
              resolve();
            };
            if (this.#failed) return deliver(null, this.#failed);
            if (this.#ended) return deliver(null);
            this.#waiting = deliver;
            req.resume();
          }),
        cancel: () => this.discard(),
      },
      // No read-ahead in the web stream: the Node stream's own buffer is the only one.
      { highWaterMark: 0 },
    );
  }

  /** Reads and drops whatever the handler did not take. */
  discard(): void {
    if (this.#discarding || this.#ended || this.#failed) return;
    this.#discarding = true;
    this.#settle(null);
    this.req.resume();
  }

  #fail(e: Error): void {
    if (this.#ended || this.#failed) return;
    this.#failed = e;
    const waiting = this.#waiting;
    this.#waiting = undefined;
    waiting?.(null, e);
  }

  #settle(chunk: null): void {
    const waiting = this.#waiting;
    this.#waiting = undefined;
    waiting?.(chunk);
  }
}

/**
 * A Response by its shape, not by instanceof: @hono/node-server replaces the
 * global Response with its own class, and an app may use undici's package.
 */
function isResponse(v: unknown): v is Response {
  const r = v as Partial<Response> | null | undefined;
  return typeof r?.status === 'number' && typeof r.headers?.forEach === 'function' && r.body !== undefined;
}

/** Response headers for writeHead: the fields, set-cookie lines kept apart, connection-specific ones dropped. */
function responseHeaders(response: Response): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  response.headers.forEach((value, name) => {
    if (name !== 'set-cookie' && !CONNECTION_FIELDS.has(name)) out[name] = value;
  });
  // getSetCookie() keeps the lines apart; a Headers without it (an older
  // polyfill) joined them with ", ", and that one value is all there is.
  const cookies =
    typeof response.headers.getSetCookie === 'function'
      ? response.headers.getSetCookie()
      : [response.headers.get('set-cookie') ?? ''].filter(Boolean);
  if (cookies.length > 0) out['set-cookie'] = cookies;
  return out;
}

const PENDING = Symbol('pending');
type ReadResult = ReadableStreamReadResult<Uint8Array>;

/** Resolves to PENDING once this turn of the event loop is over (one immediate, however many reads race it). */
function endOfTurn(): Promise<typeof PENDING> {
  return new Promise((resolve) => setImmediate(resolve, PENDING));
}

/** How much a body may be collected before the headers go, to send a content-length with an in-memory body. */
const COLLECT_LIMIT = 64 * 1024;

async function writeResponse(response: Response, isHead: boolean, res: NodeResponseLike, gone: ExchangeFate): Promise<void> {
  const headers = responseHeaders(response);
  const status = response.status;
  const body = response.body;
  if (!body || isHead || status === 204 || status === 304) {
    if (body) body.cancel().catch(() => {});
    res.writeHead(status, headers);
    res.end();
    return;
  }
  const reader = body.getReader();
  const cancel = () => reader.cancel(gone.reason).catch(() => {});
  if (gone.aborted) return void cancel();
  const unsubscribe = gone.onAbort(cancel);
  try {
    // A body that is already in memory (a string, JSON, a buffer) is sent
    // whole with a content-length; anything slower streams from its first
    // chunk, headers first, so a server-sent event stream starts at once.
    const collected: Uint8Array[] = [];
    let size = 0;
    let next: Promise<ReadResult> = reader.read();
    const turnOver = endOfTurn();
    for (;;) {
      const r = await Promise.race([next, turnOver]);
      if (r === PENDING) break;
      if (gone.aborted) return;
      if (r.done) {
        if (headers['content-length'] === undefined) headers['content-length'] = size;
        res.writeHead(status, headers);
        res.end(collected.length === 1 ? collected[0] : Buffer.concat(collected));
        return;
      }
      collected.push(bytes(r.value));
      size += r.value.byteLength;
      next = reader.read();
      if (size >= COLLECT_LIMIT) break;
    }
    res.writeHead(status, headers);
    res.flushHeaders?.();
    for (const chunk of collected) if (!res.write(chunk)) await drained(res, gone);
    for (;;) {
      const r = await next;
      if (r.done) break;
      if (gone.aborted) return;
      if (!res.write(bytes(r.value))) await drained(res, gone);
      next = reader.read();
    }
    if (!gone.aborted) res.end();
  } finally {
    unsubscribe();
  }
}

/** A response body chunk, checked: the fetch standard allows only bytes (undici's own consumers throw the same way). */
function bytes(chunk: unknown): Uint8Array {
  if (chunk instanceof Uint8Array) return chunk;
  throw new TypeError(`the response body produced ${describe(chunk)}, not a Uint8Array`);
}

/** Resolves on 'drain', or when the client has gone (the caller checks the signal): never waits on a closed response. */
function drained(res: NodeResponseLike, gone: ExchangeFate): Promise<void> {
  if (gone.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      unsubscribe();
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
    const unsubscribe = gone.onAbort(done);
  });
}

function describe(v: unknown): string {
  if (v instanceof Error) return v.message;
  if (v === null || typeof v !== 'object') return String(v);
  return Object.prototype.toString.call(v);
}
