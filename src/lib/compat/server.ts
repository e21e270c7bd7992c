// createSecureServer: node:http2's server shape (with its compatibility
// API) over HTTP/3, so that code written for
// `http2.createSecureServer({ cert, key, allowHTTP1: true }, app)` runs by
// changing the import. One StreamServer (the native core) underneath; each
// request stream becomes an Exchange (request + response) handed to the
// 'request' listeners.
import dns from 'node:dns';
import { EventEmitter } from 'node:events';
import net from 'node:net';
import type { TlsOptions } from 'node:tls';
import { StreamServer } from '../stream-server';
import type { NativeCounters, NativeIdentity } from '../../native/binding';
import type { AddressInfo, CoreOptions, StreamServerEvents } from '../stream-server';
import { pickTransportOptions } from '../transport-options';
import type { TransportOptions } from '../transport-options';
import type { ConnectionHandle, RequestStream } from '../request-stream';
import { Logger, stderrLogger } from '../log';
import { DEMO_IDENTITY_WARNING } from '../identity';
import { devHooksOf, StreamServerFactory } from '../dev-hooks';
import { defaultTcpSide } from './tcp-side';
import { isPrimary } from '../workers';

/**
 * Request body bytes read ahead of what each request's consumer took: a
 * window per stream, so a slow consumer slows its client through QUIC flow
 * control while a fast one is not held back by the boundary.
 */
const DEFAULT_BODY_CREDIT = 256 * 1024;
import { Exchange, ExchangeContext } from './exchange';
import type { Http3ServerRequest } from './request';
import { firstLineValue } from '../request-stream';
import { Http3ServerResponse, responseInternals } from './response';
import { Http3ConnectionSocket, Http3StreamSocket } from './socket';
import { pinCompatMembers, swapsHttp1Prototypes } from './express-shadow';
import { normalizeListenArgs, ListenOptions } from './listen-args';
import { TlsInput, TlsMaterial } from './tls-material';
import type { WebTransportSessionRequest } from '../webtransport/session-request';
import { offerSessionRequest } from '../webtransport/offer';
import type { WebTransportRegistry } from '../webtransport/registry';
import { webtransportCoreOptions } from '../webtransport/limits';
import type { WebTransportLimits } from '../webtransport/limits';

export type { ListenOptions } from './listen-args';
export type { PemInput } from './tls-material';

/** What it returns is ignored, except that a promise's rejection answers 500 (or resets), as a throw does. */
export type Http3RequestListener = (req: Http3ServerRequest, res: Http3ServerResponse) => unknown;

/**
 * HOOK for the TCP side (HTTP/1.1 and HTTP/2 over TLS on the same port,
 * advertising HTTP/3 with Alt-Svc), which is not part of this module: a
 * factory given as `options.tcp` is called once; its side is started after
 * the UDP port is bound (with the bound port) and closed with the server.
 * It emits requests on the server itself ('request' with node:http2's
 * objects), so listeners serve both.
 */
export interface TcpSide {
  listen(port: number, host: string | undefined): Promise<void>;
  close(graceful: boolean): Promise<void>;
  /** New TLS options for new handshakes (setSecureContext). */
  setSecureContext?(options: TlsOptions): void;
}
export type TcpSideFactory = (server: Http3SecureServer) => TcpSide;

export interface SecureServerOptions extends TlsInput, TransportOptions {
  /**
   * Certificate chain: PEM text (string or Buffer, as node:http2 takes it)
   * or a file path. With `key` omitted too, the public demo identity serves
   * (and listen() warns).
   */
  cert?: TlsInput['cert'];
  /** Private key: PEM text (string or Buffer) or a file path; `passphrase` decrypts an encrypted one. */
  key?: TlsInput['key'];
  /** With the TCP side: also serve HTTP/1.1 there, as node:http2's option does (default false, as there). */
  allowHTTP1?: boolean;
  /**
   * The same app on TCP (default true): node:http2's secure server on the
   * same port number serves the same 'request' listeners and adds
   * `alt-svc: h3=":<port>"; ma=86400` to every response, so clients without
   * UDP are served and browsers learn of HTTP/3. `false`: HTTP/3 only. A
   * function supplies another TCP side.
   */
  tcp?: boolean | TcpSideFactory;
  /** Request body bytes the core reads ahead of what the request's consumer took, per stream (the core's default when omitted). */
  bodyCredit?: number;
  /** QUIC idle timeout (default 30 s). */
  idleTimeoutMs?: number;
  handshakeTimeoutMs?: number;
  maxConnections?: number;
  maxStreamsPerConnection?: number;
  /** Largest request field section, advertised in SETTINGS. Responses are bounded only by the client's own setting. */
  maxFieldSectionSize?: number;
  /** NSS key-log file; SSLKEYLOGFILE by default, `false` turns it off. */
  keyLogFile?: string | false;
  qlogDir?: string;
  /** Where diagnostics go (listener errors, writes after end...); stderr lines by default. */
  logger?: Logger;
  /** `false`: listen() does not warn about the demo identity. */
  warnDemoIdentity?: boolean;
  /**
   * WebTransport: extended CONNECTs with :protocol webtransport are offered
   * to 'session' listeners, which accept or reject each
   * (WebTransportSessionRequest); with no listener they are answered 404.
   * `true` for the default limits, or the limits themselves.
   */
  webtransport?: boolean | WebTransportLimits;
}


export interface Http3SecureServer {
  on(event: 'request', listener: Http3RequestListener): this;
  on(event: 'checkContinue' | 'checkExpectation' | 'connect', listener: Http3RequestListener): this;
  on(event: 'connection', listener: (socket: Http3ConnectionSocket) => void): this;
  on(event: 'timeout', listener: (socket: Http3StreamSocket) => void): this;
  on(event: 'listening' | 'close', listener: () => void): this;
  on(event: 'error', listener: (error: Error & { code?: string }) => void): this;
  /** A client asks for a WebTransport session (option `webtransport`): call accept() or reject() on it. */
  on(event: 'session', listener: (request: WebTransportSessionRequest) => void | Promise<void>): this;
  on(event: string | symbol, listener: (...args: any[]) => void): this;
  once(event: 'request', listener: Http3RequestListener): this;
  once(event: 'listening' | 'close', listener: () => void): this;
  once(event: 'error', listener: (error: Error & { code?: string }) => void): this;
  once(event: string | symbol, listener: (...args: any[]) => void): this;
}

export class Http3SecureServer extends EventEmitter {
  /** Per-request idle timeout in ms (setTimeout); 0 for none, as node:http2. */
  timeout = 0;
  readonly #options: SecureServerOptions;
  #tls: TlsMaterial;
  readonly #logger: Logger;
  readonly #createCore: StreamServerFactory;
  readonly #context: ExchangeContext;
  readonly #tcp: TcpSide | undefined;
  #core: ReturnType<StreamServerFactory> | undefined;
  #address: AddressInfo | null = null;
  #listening = false;
  #closing = false;
  /** listen() with a host name is looking it up. */
  #resolving = false;
  /** Which core the events belong to: a core given up for another port must not close the server. */
  #generation = 0;
  readonly #connections = new Map<number, Http3ConnectionSocket>();
  /** 'request' listeners as last read (rawListeners, so `once` works); undefined after any change. */
  #requestListeners: Http3RequestListener[] | undefined;
  /** Some listener swaps in node:http prototypes (Express): pin our members on each req/res. */
  #pinMembers = false;
  /** The core options the `webtransport` option asks for (checked when the server is made). */
  readonly #webtransport: Partial<CoreOptions>;

  constructor(options: SecureServerOptions = {}, listener?: Http3RequestListener) {
    super();
    this.#options = options;
    this.#webtransport = { ...webtransportCoreOptions(options.webtransport), webtransportApp: true };
    this.#tls = new TlsMaterial(options);
    this.#logger = options.logger ?? stderrLogger;
    this.#createCore = devHooksOf(options)?.streamServer ?? ((o, e) => new StreamServer(o, e, this.#logger));
    const timeout = () => this.timeout;
    this.#context = {
      logger: this.#logger,
      get timeout() {
        return timeout();
      },
      emitTimeout: (socket) => this.emit('timeout', socket),
    };
    const invalidate = (event: string | symbol) => {
      if (event === 'request') this.#requestListeners = undefined;
    };
    this.on('newListener', invalidate);
    this.on('removeListener', invalidate);
    if (listener) this.on('request', listener);
    const tcp = options.tcp ?? true;
    this.#tcp =
      typeof tcp === 'function' ? tcp(this) : tcp ? defaultTcpSide(this, () => this.#tls.tcpOptions(), options.allowHTTP1 ?? false, this.#logger) : undefined;
  }

  /**
   * Binds the UDP port and starts serving. Forms: (port, host, backlog, cb),
   * (port, cb), ({ port, host }, cb), (cb); port 0 or omitted picks a free
   * port; host defaults to "::" (IPv4 and IPv6). 'listening' follows
   * asynchronously; a bind failure is an 'error' event (code EADDRINUSE,
   * EACCES...), not an exception.
   */
  listen(port?: number | string, host?: string, backlog?: number, callback?: () => void): this;
  listen(port: number | string, host: string, callback?: () => void): this;
  listen(port: number | string, callback?: () => void): this;
  listen(options: ListenOptions, callback?: () => void): this;
  listen(callback?: () => void): this;
  listen(...args: unknown[]): this {
    const { port, host, callback } = normalizeListenArgs(args);
    if (this.#core || this.#resolving) {
      throw Object.assign(new Error('Listen method has been called more than once without closing.'), {
        code: 'ERR_SERVER_ALREADY_LISTEN',
      });
    }
    if (callback) this.once('listening', callback);
    if (host !== undefined && net.isIP(host) === 0) {
      // A host name (Fastify listens on "localhost" by default): resolved
      // first, as node:net does; the socket binds the address it names.
      this.#resolving = true;
      dns.lookup(host, (err, address) => {
        this.#resolving = false;
        if (err) {
          if (callback) this.removeListener('listening', callback);
          this.emit('error', Object.assign(new Error(`cannot listen on ${host}: ${err.message}`), { code: err.code, syscall: 'listen', address: host, port }));
          return;
        }
        this.#bind(port, address, callback);
      });
      return this;
    }
    this.#bind(port, host, callback);
    return this;
  }

  #bind(port: number, host: string | undefined, callback: (() => void) | undefined, attempt = 1): void {
    const o = this.#options;
    let core: ReturnType<StreamServerFactory>;
    try {
      const coreOptions: CoreOptions = {
        ...this.#tls.core,
        tls: this.#tls.choices,
        streamedBodies: true,
        bodyCredit: o.bodyCredit ?? DEFAULT_BODY_CREDIT,
        idleTimeoutMs: o.idleTimeoutMs,
        handshakeTimeoutMs: o.handshakeTimeoutMs,
        ...pickTransportOptions(o),
        maxConnections: o.maxConnections,
        maxStreamsPerConnection: o.maxStreamsPerConnection,
        maxFieldSectionSize: o.maxFieldSectionSize,
        keylogPath: (o.keyLogFile === undefined ? process.env.SSLKEYLOGFILE : o.keyLogFile) || undefined,
        qlogDir: o.qlogDir,
        hooks: devHooksOf(o),
        ...this.#webtransport,
      };
      core = this.#createCore(coreOptions, this.#events(++this.#generation));
      this.#address = core.listen(port, host ?? '::');
    } catch (e) {
      if (callback) this.removeListener('listening', callback);
      process.nextTick(() => this.emit('error', listenError(e, port, host)));
      return;
    }
    this.#core = core;
    this.#closing = false;
    if (this.#tls.isDemo && o.warnDemoIdentity !== false) {
      this.#logger.warn(`h3-node: ${DEMO_IDENTITY_WARNING} Pass cert and key to createSecureServer for your own.`);
    }
    // The TCP side runs in the primary only: node:net cannot share a port
    // between threads, and it only serves the fallback and the Alt-Svc that
    // sends clients to UDP, where every worker serves.
    const tcp = isPrimary ? this.#tcp : undefined;
    const workersReady = (core as { ready?: () => Promise<void> }).ready?.() ?? Promise.resolve();
    Promise.all([tcp?.listen(this.#address.port, host), workersReady]).then(
      () => this.#markListening(),
      (e: NodeJS.ErrnoException) => {
        // A core given up for another port, or closed and replaced, has nothing to say.
        if (this.#core !== core) return;
        if (port === 0 && e.code === 'EADDRINUSE' && attempt < ANY_PORT_ATTEMPTS && !this.#closing) {
          // "Any port": the UDP port the system picked has its TCP number
          // taken (the ephemeral range is shared with outgoing TCP
          // connections). Another pick, as the caller asked for a port
          // that works, not for this one.
          this.#core = undefined;
          core.close(false).catch(() => {});
          this.#bind(0, host, callback, attempt + 1);
          return;
        }
        // Closed first: with no 'error' listener the emit throws.
        this.close();
        this.emit('error', e);
      },
    );
  }

  /** With `workers`: how packets are steered, and each worker's connections and forwarded packets; undefined otherwise. */
  workerStats() {
    return (this.#core as { workerStats?: StreamServer['workerStats'] } | undefined)?.workerStats?.();
  }

  #markListening(): void {
    if (!this.#core || this.#closing) return;
    this.#listening = true;
    this.emit('listening');
  }

  get listening(): boolean {
    return this.#listening;
  }

  /** The bound address: { address, family, port }; null when not listening. */
  /** The native core's counters (bytes and datagrams, body bytes read, connections, live streams); undefined before listen(). */
  counters(): NativeCounters | undefined {
    return (this.#core as { counters?: () => NativeCounters | undefined } | undefined)?.counters?.();
  }

  /** Application WebTransport sessions open now, and datagrams dropped because a session's reader fell 256 behind; undefined before listen(). */
  webtransportStats(): { sessions: number; datagramsDroppedUnread: number } | undefined {
    const sessions = (this.#core as { sessions?: WebTransportRegistry } | undefined)?.sessions;
    return sessions && { sessions: sessions.openSessions, datagramsDroppedUnread: sessions.datagramsDropped };
  }

  address(): AddressInfo | null {
    return this.#core && !this.#closing ? this.#address : null;
  }

  /**
   * Graceful close: no new connections, GOAWAY to every client, in-flight
   * requests finish (the core waits up to 3 s), then 'close' and the
   * callback. Not listening: the callback gets ERR_SERVER_NOT_RUNNING.
   */
  close(callback?: (error?: Error) => void): this {
    const core = this.#core;
    if (!core) {
      process.nextTick(() => {
        callback?.(Object.assign(new Error('Server is not running.'), { code: 'ERR_SERVER_NOT_RUNNING' }));
        this.emit('close');
      });
      return this;
    }
    if (callback) this.once('close', () => callback());
    if (this.#closing) return this;
    this.#closing = true;
    this.#listening = false;
    const tcp = this.#tcp?.close(true).catch((e) => this.#logger.error(`closing the TCP side: ${(e as Error).message}`));
    Promise.all([core.close(true), tcp]).then(
      () => this.#onCoreClosed(),
      (e) => {
        this.#logger.error(`closing the HTTP/3 server: ${(e as Error).message}`);
        this.#onCoreClosed();
      },
    );
    return this;
  }

  /** Closes every connection now, without waiting for in-flight requests. */
  closeAllConnections(): void {
    const core = this.#core;
    if (!core) return;
    if (!this.#closing) {
      this.close();
    }
    core.close(false).catch(() => {});
  }

  /**
   * Closes every HTTP/3 connection with nothing in flight (no request, no
   * response still unacknowledged, no WebTransport session) with
   * H3_NO_ERROR, on every worker, as node:http's does for idle keep-alive
   * sockets (Fastify calls it when it closes); connections with requests
   * in flight go on. The TCP side is node:http2's, which has no such call.
   */
  closeIdleConnections(): void {
    (this.#core as { closeIdleConnections?: () => void } | undefined)?.closeIdleConnections?.();
  }

  /** Per-request idle timeout: 'timeout' on the request, response and server after `ms` with no bytes moving; with no listener the stream is reset. */
  setTimeout(ms: number, callback?: (socket: Http3StreamSocket) => void): this {
    this.timeout = ms;
    if (callback) this.on('timeout', callback);
    return this;
  }

  /** Open QUIC connections (net.Server's API). */
  getConnections(callback: (error: Error | null, count: number) => void): this {
    process.nextTick(callback, null, this.#connections.size);
    return this;
  }

  /** No-ops kept for code written for net.Server. */
  ref(): this {
    return this;
  }
  unref(): this {
    return this;
  }

  #events(generation: number): StreamServerEvents {
    return {
      onStream: (stream) => this.#onStream(stream),
      onConnection: (conn) => this.#onConnection(conn),
      onConnectionClose: (conn) => this.#onConnectionClose(conn),
      onSessionRequest: (request) => this.#onSessionRequest(request),
      onIdentityWanted: (serverName, answer) => this.#chooseIdentity(serverName, answer),
      onClose: () => {
        if (generation === this.#generation) this.#onCoreClosed();
      },
    };
  }

  /** SNICallback for a name `identities` does not know; its failures fail that handshake only, with one log line. */
  #chooseIdentity(serverName: string, answer: (identity: NativeIdentity | null) => void): void {
    const material = this.#tls;
    const refuse = (why: string) => {
      this.#logger.warn(`h3-node: SNICallback for ${JSON.stringify(serverName)} ${why}; that handshake fails`);
      answer(null);
    };
    try {
      material.input.SNICallback!(serverName, (err, context) => {
        if (err) return refuse(`answered an error: ${err.message}`);
        let identity: NativeIdentity | null;
        try {
          identity = material.nativeIdentity(context);
        } catch (e) {
          return refuse(`answered an identity that does not parse: ${(e as Error).message}`);
        }
        if (!identity) return refuse('answered no identity and there is no default one (`cert`, `key`)');
        answer(identity);
      });
    } catch (e) {
      refuse(`threw: ${(e as Error).message}`);
    }
  }

  /**
   * Replaces the default identity (node:tls's `setSecureContext`): `cert`,
   * `key`, `passphrase`, and `ca` for client certificates. New handshakes
   * on HTTP/3 (every worker's) and on the TCP side get it; connections
   * already open keep theirs. Throws naming the option at fault, and then
   * nothing changes.
   */
  setSecureContext(options: Pick<TlsInput, 'cert' | 'key' | 'passphrase' | 'ca'>): void {
    if (typeof options !== 'object' || options === null) throw new TypeError('setSecureContext: options must be an object');
    const next = new TlsMaterial({ ...this.#tls.input, ...options }, 'setSecureContext');
    this.#core?.setIdentities?.({ ...next.core, ...next.choices });
    this.#tls = next;
    this.#tcp?.setSecureContext?.(next.tcpOptions());
  }

  #onSessionRequest(request: WebTransportSessionRequest): void {
    offerSessionRequest(this, request, this.#logger);
  }

  #onConnection(conn: ConnectionHandle): void {
    const socket = new Http3ConnectionSocket(conn);
    this.#connections.set(conn.id, socket);
    this.emit('connection', socket);
  }

  #onConnectionClose(conn: ConnectionHandle): void {
    const socket = this.#connections.get(conn.id);
    if (!socket) return;
    this.#connections.delete(conn.id);
    socket.markClosed();
  }

  #onCoreClosed(): void {
    if (!this.#core) return;
    this.#core = undefined;
    this.#address = null;
    this.#listening = false;
    this.#closing = false;
    for (const socket of this.#connections.values()) socket.markClosed();
    this.#connections.clear();
    this.emit('close');
  }

  #onStream(stream: RequestStream): void {
    const { req, res } = new Exchange(stream, this.#context);
    const listeners = this.#requestListeners ?? this.#readListeners();
    if (this.#pinMembers) pinCompatMembers(req, res);
    // node:http2's compatibility rules for CONNECT and Expect.
    if (req.method === 'CONNECT') {
      if (!this.#dispatch('connect', req, res)) responseInternals.respondPlain(res, 405, 'method not allowed\n');
      return;
    }
    // Read from the lines: most requests have no Expect, and the headers
    // object is built only if the application asks for it.
    if (firstLineValue(stream.lines, 'expect') !== undefined) {
      const expect = req.headers.expect;
      if (typeof expect === 'string' && expect.toLowerCase() === '100-continue') {
        if (this.#dispatch('checkContinue', req, res)) return;
        res.writeContinue();
      } else {
        if (!this.#dispatch('checkExpectation', req, res)) {
          responseInternals.respondPlain(res, 417, 'expectation failed\n');
        }
        return;
      }
    }
    if (listeners.length === 0) {
      responseInternals.respondPlain(res, 404, 'not found\n');
      return;
    }
    this.#run(listeners, req, res);
  }

  #readListeners(): Http3RequestListener[] {
    const raw = this.rawListeners('request') as Http3RequestListener[];
    this.#pinMembers = this.listeners('request').some(swapsHttp1Prototypes);
    this.#requestListeners = raw;
    return raw;
  }

  /** Runs an event's listeners as request handlers; false when it has none. */
  #dispatch(event: string, req: Http3ServerRequest, res: Http3ServerResponse): boolean {
    // on() takes Http3RequestListeners for the events dispatched here (@types/node says Function[]).
    const listeners = this.rawListeners(event) as Http3RequestListener[];
    if (listeners.length === 0) return false;
    this.#run(listeners, req, res);
    return true;
  }

  /** Each listener guarded: a throw or a rejected promise answers 500 (or resets) and the server keeps serving. */
  #run(listeners: Http3RequestListener[], req: Http3ServerRequest, res: Http3ServerResponse): void {
    for (const listener of listeners) {
      try {
        const result = listener.call(this, req, res);
        if (result !== null && typeof result === 'object' && typeof (result as { then?: unknown }).then === 'function') {
          (result as PromiseLike<unknown>).then(undefined, (e: unknown) => this.#listenerFailed(req, res, e));
        }
      } catch (e) {
        this.#listenerFailed(req, res, e);
      }
    }
  }

  #listenerFailed(req: Http3ServerRequest, res: Http3ServerResponse, error: unknown): void {
    const outcome = responseInternals.fail(res, error);
    const what = outcome === 'answered' ? 'answered 500' : outcome === 'reset' ? 'stream reset (H3_INTERNAL_ERROR)' : 'response already complete';
    const detail = error instanceof Error ? (error.stack ?? error.message) : String(error);
    this.#logger.error(`request listener failed on ${req.method} ${req.url} (${what}): ${detail}`);
  }
}

/** Creates an HTTP/3 server with node:http2's compatibility API; call listen() to start it. */
// The (options, listener) form last, as in node:http2's types, so that
// Parameters<typeof createSecureServer> names it.
export function createSecureServer(listener?: Http3RequestListener): Http3SecureServer;
export function createSecureServer(options?: SecureServerOptions, listener?: Http3RequestListener): Http3SecureServer;
export function createSecureServer(
  a?: SecureServerOptions | Http3RequestListener,
  b?: Http3RequestListener,
): Http3SecureServer {
  return typeof a === 'function' ? new Http3SecureServer({}, a) : new Http3SecureServer(a, b);
}

/** listen(0): how many UDP ports to try for one whose TCP number is free too. */
const ANY_PORT_ATTEMPTS = 8;

/** The core's one-line bind error as a net-style error: code (EADDRINUSE...), syscall, address, port. */
function listenError(e: unknown, port: number, host: string | undefined): Error {
  const message = e instanceof Error ? e.message : String(e);
  const code = /in use|EADDRINUSE/i.test(message)
    ? 'EADDRINUSE'
    : /permission|EACCES/i.test(message)
      ? 'EACCES'
      : /EADDRNOTAVAIL|cannot assign|not available/i.test(message)
        ? 'EADDRNOTAVAIL'
        : 'ERR_HTTP3_LISTEN';
  return Object.assign(new Error(message), { code, syscall: 'listen', address: host ?? '::', port });
}
