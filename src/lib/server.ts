// The embedding API: an HTTP/3 server in the shape of Node's http/http2
// servers (createServer, listen, a 'request' handler, close), on the native
// quiche core.
import { EventEmitter } from 'node:events';
import { addon } from '../native/binding';
import type { NativeCounters } from '../native/binding';
import type { H3Request } from './request';
import type { H3Response } from './response';
import { DEMO_IDENTITY_WARNING, Identity, readIdentity } from './identity';
import { Logger, stderrLogger } from './log';
import { Exchanges } from './exchanges';
import { StreamServer } from './stream-server';
import { pickTransportOptions } from './transport-options';
import type { TransportOptions } from './transport-options';
import { devHooksOf } from './dev-hooks';
import { webtransportCoreOptions } from './webtransport/limits';
import type { WebTransportLimits } from './webtransport/limits';
import type { WebTransportSessionRequest } from './webtransport/session-request';

export type RequestHandler = (req: H3Request, res: H3Response) => void | Promise<void>;

/**
 * Receives a streamed request body chunk by chunk, in order; the last call
 * has `final` true. Ending `res` here (for example with 413) stops the body:
 * no further chunks arrive and the request handler is not run.
 */
export type BodyHandler = (req: H3Request, chunk: Buffer, final: boolean, res: H3Response) => void;

export interface ServerOptions extends TransportOptions {
  /** Default port for listen(); 4433 when omitted. 0 picks a free port. */
  port?: number;
  /**
   * Default host for listen(); "::" when omitted, which takes IPv4 and IPv6
   * clients on one socket (IPV6_V6ONLY off), or binds "0.0.0.0" where the
   * host has no IPv6 (the resolved address says which).
   */
  host?: string;
  /** PEM certificate chain path; the demo certificate when omitted. */
  cert?: string;
  /** PEM private key path; the demo key when omitted. */
  key?: string;
  /** Streams request bodies to this callback instead of buffering them. */
  onBody?: BodyHandler;
  /** Without onBody: the largest body buffered for the handler (default 16 KiB); larger bodies get 413. */
  bodyWindow?: number;
  /** With onBody: bytes read ahead of the callback per request (default 32 KiB). */
  bodyCredit?: number;
  /** QUIC idle timeout (default 30 s): a silent connection is freed after it. */
  idleTimeoutMs?: number;
  /** A connection whose handshake has not completed this long after its first packet is dropped (default 10 s). */
  handshakeTimeoutMs?: number;
  /**
   * A request not answered this long after its header section arrived is
   * answered 503 by the server and its stream freed (default 30 s; 0 turns it
   * off). A later end() from the handler is ignored. See docs/reliability.md.
   */
  requestTimeoutMs?: number;
  /** Concurrent connections (default 10,000); Initials beyond it are dropped. */
  maxConnections?: number;
  /** Client-initiated bidirectional streams per connection, a QUIC transport parameter (default 128). */
  maxStreamsPerConnection?: number;
  /** Largest request field section, advertised in SETTINGS (default 16 KiB); larger is 431. */
  maxFieldSectionSize?: number;
  /** Where diagnostics go; stderr lines by default. */
  logger?: Logger;
  /**
   * Without `cert` and `key` the server uses the public demo identity, and
   * listen() logs a warning saying so (the CLI's own words). `false` leaves
   * the warning to the caller: the CLI prints it after its startup lines.
   */
  warnDemoIdentity?: boolean;
  /**
   * Serve WebTransport (extended CONNECT with :protocol webtransport; over
   * the session limit, 429). With a 'session' listener on the server when
   * listen() is called, each session request goes to it (accept or reject,
   * then the session's streams and datagrams are the application's, as
   * with createSecureServer). Without one, the demo's echo (Profile B):
   * client bidirectional streams are echoed, unidirectional streams
   * answered on a server stream, datagrams echoed, and session events
   * emitted on the server. `true` for the default limits, or the limits.
   */
  webtransport?: boolean | WebTransportLimits;
  /**
   * Append TLS secrets in NSS key-log format to this file, so Wireshark or
   * tshark can decrypt captures. Defaults to the SSLKEYLOGFILE environment
   * variable (the convention curl, Chromium and quic-go follow); `false`
   * turns it off whatever the environment says.
   */
  keyLogFile?: string | false;
  /** Write one qlog (JSON-SEQ, `<server CID>.sqlog`) file per connection into this directory. */
  qlogDir?: string;
}

export interface WebTransportSessionInfo {
  /** Server-local connection number. */
  connection: number;
  /** The CONNECT stream ID, which is the session ID. */
  sessionId: number;
  path: string;
}

export interface WebTransportStreamInfo {
  connection: number;
  sessionId: number;
  streamId: number;
  bidirectional: boolean;
}

export interface AddressInfo {
  address: string;
  family: string;
  port: number;
}

export interface ConnectionInfo {
  /** Server-local connection number. */
  id: number;
  /** The server's connection ID, hex. */
  cid: string;
  peer: string;
}

export interface ConnectionCloseInfo extends ConnectionInfo {
  initiator: 'peer' | 'local' | 'idle-timeout' | 'other';
  isApplication: boolean;
  errorCode: number;
  reason: string;
}

export interface Http3Server {
  on(event: 'request', listener: RequestHandler): this;
  on(event: 'connection', listener: (info: ConnectionInfo) => void): this;
  on(event: 'connectionClose', listener: (info: ConnectionCloseInfo) => void): this;
  on(event: 'requestAborted', listener: (req: H3Request, code: number) => void): this;
  /** No answer within requestTimeoutMs: the server answered 503 for the handler. */
  on(event: 'requestTimeout', listener: (req: H3Request) => void): this;
  on(event: 'close', listener: () => void): this;
  /** A handler's response was handed to the native core (for metrics and logs). */
  on(event: 'response', listener: (req: H3Request, status: number) => void): this;
  /** With `webtransport`: a client asks for a session; present at listen(), sessions are the application's (accept() or reject() it). */
  on(event: 'session', listener: (request: WebTransportSessionRequest) => void | Promise<void>): this;
  on(event: 'webtransportSession', listener: (s: WebTransportSessionInfo) => void): this;
  on(event: 'webtransportSessionClose', listener: (s: WebTransportSessionInfo & { code: number }) => void): this;
  /** A client stream joined a session (it counts as open until 'webtransportStreamClose'). */
  on(event: 'webtransportStream', listener: (s: WebTransportStreamInfo) => void): this;
  /** A client stream was offered and refused because the stream capacity is full. */
  on(event: 'webtransportStreamRejected', listener: (s: WebTransportStreamInfo) => void): this;
  on(event: 'webtransportStreamClose', listener: (s: WebTransportStreamInfo) => void): this;
  /** `count` datagrams for open sessions arrived on a connection (batched per loop turn). */
  on(event: 'webtransportDatagrams', listener: (count: number, connection: number) => void): this;
  on(event: string, listener: (...args: any[]) => void): this;
}

export class Http3Server extends EventEmitter {
  readonly identity: Identity;
  // Private fields (#), not TypeScript's `private`: the core and the
  // exchange driver are no part of the server's API, in types or at run time.
  readonly #options: ServerOptions;
  readonly #exchanges: Exchanges;
  readonly #core: StreamServer;
  #closing: Promise<void> | undefined;

  constructor(options: ServerOptions = {}, handler?: RequestHandler) {
    super();
    this.#options = options;
    const { identity, material } = readIdentity(options.cert, options.key);
    this.identity = identity;
    const logger = options.logger ?? stderrLogger;
    this.#exchanges = new Exchanges(this, options, logger, () => this.#onClosed());
    this.#core = new StreamServer(
      {
        ...material,
        streamedBodies: options.onBody !== undefined,
        bodyWindow: options.bodyWindow,
        bodyCredit: options.bodyCredit,
        idleTimeoutMs: options.idleTimeoutMs,
        handshakeTimeoutMs: options.handshakeTimeoutMs,
        ...pickTransportOptions(options),
        maxConnections: options.maxConnections,
        maxStreamsPerConnection: options.maxStreamsPerConnection,
        maxFieldSectionSize: options.maxFieldSectionSize,
        ...webtransportCoreOptions(options.webtransport),
        webtransportApp: () => this.listenerCount('session') > 0,
        keylogPath: keyLogPath(options.keyLogFile),
        qlogDir: options.qlogDir,
        hooks: devHooksOf(options),
      },
      this.#exchanges,
      logger,
    );
    if (handler) this.on('request', handler);
  }

  /** Binds the UDP port and starts serving. Rejects with a one-line Error (port in use, bad identity). */
  listen(port = this.#options.port ?? 4433, host = this.#options.host ?? '::'): Promise<AddressInfo> {
    if (this.#core.listening) return Promise.reject(new Error('server is already listening'));
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      return Promise.reject(new RangeError(`port must be an integer from 0 to 65535, got ${port}`));
    }
    let addr: AddressInfo;
    try {
      addr = this.#core.listen(port, host);
    } catch (e) {
      return Promise.reject(e as Error);
    }
    if (this.identity.isDemo && this.#options.warnDemoIdentity !== false) {
      (this.#options.logger ?? stderrLogger).warn(`h3-node: ${DEMO_IDENTITY_WARNING} Pass cert and key to createServer for your own.`);
    }
    if (this.#core.workerGroup === undefined) {
      this.emit('listening', addr);
      return Promise.resolve(addr);
    }
    // With workers: listening once every worker is.
    return this.#core.ready().then(
      () => {
        this.emit('listening', addr);
        return addr;
      },
      async (e: Error) => {
        await this.#core.close(false);
        throw e;
      },
    );
  }

  /** Responses handlers started, by final status, as the native core counted them (every worker's). */
  responseStatuses(): Map<number, number> {
    return this.#core.responseStatuses();
  }

  /** With `workers`: how packets are steered, and each worker's connections and forwarded packets; undefined otherwise. */
  workerStats() {
    return this.#core.workerStats();
  }

  /** Requests handed to handlers and not yet answered or aborted. */
  get pendingRequests(): number {
    return this.#exchanges.pendingRequests;
  }

  /** Native counters (bytes and datagrams received, body bytes read, connections); zeros before listen(). */
  counters(): NativeCounters {
    return this.#core.counters() ?? addon(devHooksOf(this.#options)?.addonPath).zeroCounters();
  }

  address(): AddressInfo | null {
    return this.#closing ? null : this.#core.address();
  }

  /**
   * Graceful close: GOAWAY to every client, in-flight requests finish (up
   * to 3 s), connections close, then the promise resolves.
   */
  close(): Promise<void> {
    return this.#shutdown(true);
  }

  /** Closes every connection at once without waiting for in-flight requests. */
  closeNow(): Promise<void> {
    return this.#shutdown(false);
  }

  #shutdown(graceful: boolean): Promise<void> {
    if (!this.#core.listening && !this.#closing) return Promise.resolve();
    this.#closing = this.#core.close(graceful);
    return this.#closing;
  }

  /** The native core has stopped and its thread is joined. */
  #onClosed(): void {
    this.#closing = undefined;
    this.emit('close');
  }
}

/** Creates an HTTP/3 server; call listen() to start it. */
export function createServer(options?: ServerOptions, handler?: RequestHandler): Http3Server;
export function createServer(handler?: RequestHandler): Http3Server;
export function createServer(a?: ServerOptions | RequestHandler, b?: RequestHandler): Http3Server {
  return typeof a === 'function' ? new Http3Server({}, a) : new Http3Server(a, b);
}

/** The key-log path: the option, else SSLKEYLOGFILE; empty or `false` is off. */
function keyLogPath(option: string | false | undefined): string | undefined {
  const p = option === undefined ? process.env.SSLKEYLOGFILE : option;
  return p ? p : undefined;
}
