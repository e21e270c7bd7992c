// The embedding API: an HTTP/3 server in the shape of Node's http/http2
// servers (createServer, listen, a 'request' handler, close), on the native
// quiche core.
import { EventEmitter } from 'node:events';
import { addon, NativeCounters, NativeServer } from './native/binding';
import {
  AbortReason,
  CloseHow,
  CommandWriter,
  ConnClosedInfo,
  decodeBatch,
  EventSink,
  LogLevel,
  RequestFlag,
  WtStreamEvent,
} from './native/protocol';
import { H3Request } from './request';
import { H3Response } from './response';
import { Identity, loadIdentity } from './identity';
import { Logger, stderrLogger } from './log';
import { Deadlined, REQUEST_TIMEOUT_STATUS, RequestDeadlines } from './request-timeout';

export type RequestHandler = (req: H3Request, res: H3Response) => void | Promise<void>;

/**
 * Receives a streamed request body chunk by chunk, in order; the last call
 * has `final` true. Ending `res` here (for example with 413) stops the body:
 * no further chunks arrive and the request handler is not run.
 */
export type BodyHandler = (req: H3Request, chunk: Buffer, final: boolean, res: H3Response) => void;

export interface ServerOptions {
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
   * Serve WebTransport: extended CONNECT with :protocol webtransport opens a
   * session (up to the build-time cap, then 429), client bidirectional
   * streams are echoed, unidirectional streams answered on a server stream,
   * datagrams echoed. Session events are emitted on the server.
   */
  webtransport?: boolean;
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

/** An open request; its deadline links (requestTimeoutMs) leave when it ends. */
interface Exchange extends Deadlined {
  req: H3Request;
  res: H3Response;
}

const EMPTY = Buffer.alloc(0);
const INITIATOR = {
  [CloseHow.Peer]: 'peer',
  [CloseHow.Local]: 'local',
  [CloseHow.IdleTimeout]: 'idle-timeout',
  [CloseHow.Other]: 'other',
} as Record<number, ConnectionCloseInfo['initiator']>;

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

export class Http3Server extends EventEmitter implements EventSink {
  readonly identity: Identity;
  private readonly options: ServerOptions;
  private readonly logger: Logger;
  private native: NativeServer | undefined;
  private readonly exchanges = new Map<number, Map<number, Exchange>>();
  private readonly deadlines: RequestDeadlines<Exchange>;
  /** Open WebTransport sessions' paths, for their close events; bounded by the native session cap. */
  private readonly sessionPaths = new Map<string, string>();
  private readonly commands = new CommandWriter();
  private inBatch = false;
  private flushScheduled = false;
  private lastSeq = 0;
  private closing: Promise<void> | undefined;
  private resolveClosed: (() => void) | undefined;

  constructor(options: ServerOptions = {}, handler?: RequestHandler) {
    super();
    this.options = options;
    this.logger = options.logger ?? stderrLogger;
    this.identity = loadIdentity(options.cert, options.key);
    this.deadlines = new RequestDeadlines<Exchange>(options.requestTimeoutMs, (ex) => this.timeOut(ex));
    if (handler) this.on('request', handler);
  }

  /** Binds the UDP port and starts serving. Rejects with a one-line Error (port in use, bad identity). */
  listen(port = this.options.port ?? 4433, host = this.options.host ?? '::'): Promise<AddressInfo> {
    if (this.native) return Promise.reject(new Error('server is already listening'));
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      return Promise.reject(new RangeError(`port must be an integer from 0 to 65535, got ${port}`));
    }
    try {
      this.native = addon().listen(
        {
          host,
          port,
          certPath: this.identity.certPath,
          keyPath: this.identity.keyPath,
          streamedBodies: this.options.onBody !== undefined,
          bodyWindow: this.options.bodyWindow,
          bodyCredit: this.options.bodyCredit,
          idleTimeoutMs: this.options.idleTimeoutMs,
          handshakeTimeoutMs: this.options.handshakeTimeoutMs,
          maxConnections: this.options.maxConnections,
          maxStreamsPerConnection: this.options.maxStreamsPerConnection,
          maxFieldSectionSize: this.options.maxFieldSectionSize,
          // Fault injection for the test suite only: a request for this path
          // panics inside the native core.
          panicOnPath: process.env.H3_NODE_FAULT_PANIC_PATH,
          webtransport: this.options.webtransport ?? false,
          keylogPath: keyLogPath(this.options.keyLogFile),
          qlogDir: this.options.qlogDir,
          // Benchmark only (bench/README.md): Rust answers Profile A or C
          // itself, the ceiling for the boundary's cost.
          benchNativeHandler: process.env.H3_BENCH_NATIVE_HANDLER,
        },
        (batch) => this.onBatch(batch),
      );
    } catch (e) {
      return Promise.reject(new Error((e as Error).message));
    }
    const addr = this.native.address();
    this.emit('listening', addr);
    return Promise.resolve(addr);
  }

  /** Requests handed to handlers and not yet answered or aborted. */
  get pendingRequests(): number {
    let n = 0;
    for (const streams of this.exchanges.values()) n += streams.size;
    return n;
  }

  /** Native counters (bytes and datagrams received, body bytes read, connections); zeros before listen(). */
  counters(): NativeCounters {
    return (
      this.native?.counters() ?? {
        udpBytesReceived: 0,
        udpDatagramsReceived: 0,
        udpDatagramsSent: 0,
        udpGsoSends: 0,
        bodyBytesRead: 0,
        connectionsAccepted: 0,
        connectionsOpen: 0,
        handshakeFailures: 0,
        udpBytesSent: 0,
        requestStreamsOpen: 0,
        handshakeTimeouts: 0,
        wtDatagramsReceived: 0,
        quicDatagramsReceived: 0,
        nativeResponses200: 0,
        nativeResponses413: 0,
        nativeResponses429: 0,
        nativeResponses431: 0,
        nativeResponses501: 0,
      }
    );
  }

  address(): AddressInfo | null {
    return this.native && !this.closing ? this.native.address() : null;
  }

  /**
   * Graceful close: GOAWAY to every client, in-flight requests finish (up
   * to 3 s), connections close, then the promise resolves.
   */
  close(): Promise<void> {
    return this.shutdown(true);
  }

  /** Closes every connection at once without waiting for in-flight requests. */
  closeNow(): Promise<void> {
    return this.shutdown(false);
  }

  private shutdown(graceful: boolean): Promise<void> {
    const native = this.native;
    if (!native) return Promise.resolve();
    if (!this.closing) {
      this.closing = new Promise<void>((resolve) => (this.resolveClosed = resolve));
    }
    native.shutdown(graceful);
    return this.closing;
  }

  // ---- event batches from the native core ----

  private onBatch(batch: Buffer): void {
    this.inBatch = true;
    try {
      this.lastSeq = decodeBatch(batch, this);
    } catch (e) {
      this.logger.error(`internal error while handling native events: ${(e as Error).stack ?? e}`);
    } finally {
      this.inBatch = false;
      this.flush();
    }
  }

  private flush(): void {
    this.flushScheduled = false;
    this.native?.submit(this.commands.take(), this.lastSeq);
  }

  private scheduleFlush(): void {
    if (this.inBatch || this.flushScheduled) return;
    this.flushScheduled = true;
    queueMicrotask(() => this.flush());
  }

  /** @internal */
  onRequest(conn: number, stream: number, flags: number, lines: string[], body: Buffer): void {
    const req = new H3Request(conn, stream, lines, flags & RequestFlag.HasBody ? body : undefined);
    const res = new H3Response((r, fields, b) => this.send(conn, stream, r.status, fields, b));
    let streams = this.exchanges.get(conn);
    if (!streams) {
      streams = new Map();
      this.exchanges.set(conn, streams);
    }
    const ex: Exchange = { req, res };
    streams.set(stream, ex);
    this.deadlines.add(ex);
    if (this.options.onBody) {
      if (flags & RequestFlag.Complete) this.deliverChunk(ex, EMPTY, true);
    } else {
      this.answer(ex);
    }
  }

  /** @internal */
  onBody(conn: number, stream: number, chunk: Buffer, fin: boolean): void {
    const ex = this.exchanges.get(conn)?.get(stream);
    if (ex) this.deliverChunk(ex, chunk, fin);
  }

  private deliverChunk(ex: Exchange, chunk: Buffer, final: boolean): void {
    if (ex.res.sent) return;
    try {
      this.options.onBody!(ex.req, chunk, final, ex.res);
    } catch (e) {
      this.fail(ex, e);
      return;
    }
    if (final && !ex.res.sent) this.answer(ex);
  }

  /** The normal answer step: the 'request' listeners. */
  private answer(ex: Exchange): void {
    const listeners = this.listeners('request') as RequestHandler[];
    if (listeners.length === 0) {
      ex.res.text(404, 'not found\n');
      return;
    }
    for (const listener of listeners) {
      try {
        const result = listener.call(this, ex.req, ex.res);
        if (result && typeof (result as Promise<void>).then === 'function') {
          (result as Promise<void>).then(undefined, (e) => this.fail(ex, e));
        }
      } catch (e) {
        this.fail(ex, e);
      }
    }
  }

  /** A handler threw: answer 500 if nothing was sent yet, log, keep serving. */
  private fail(ex: Exchange, e: unknown): void {
    this.logger.error(
      `handler error on ${ex.req.method} ${ex.req.path}: ${e instanceof Error ? e.stack ?? e.message : String(e)}`,
    );
    if (!ex.res.sent) {
      const res = new H3Response((r, fields, b) => this.send(ex.req.connectionId, ex.req.streamId, r.status, fields, b));
      (ex as { res: H3Response }).res = res;
      res.text(500, 'internal server error\n');
    }
  }

  /** requestTimeoutMs passed without an answer: 503, and the handler's own res is ignored from now on. */
  private timeOut(ex: Exchange): void {
    if (this.exchanges.get(ex.req.connectionId)?.get(ex.req.streamId) !== ex || ex.res.sent) return;
    this.emit('requestTimeout', ex.req);
    const res = new H3Response((r, fields, b) => this.send(ex.req.connectionId, ex.req.streamId, r.status, fields, b));
    (ex as { res: H3Response }).res = res;
    res.text(REQUEST_TIMEOUT_STATUS, 'request timed out\n');
  }

  private send(conn: number, stream: number, status: number, fields: string[], body: Buffer): void {
    const streams = this.exchanges.get(conn);
    const ex = streams?.get(stream);
    if (!ex || !streams!.delete(stream)) return; // aborted by the client, timed out, or the connection is gone
    this.deadlines.remove(ex);
    this.emit('response', ex.req, status);
    this.logger.debug?.(`response ${status} to ${ex.req.method} ${ex.req.path} (connection ${conn})`);
    this.commands.respond(conn, stream, status, fields, body);
    this.scheduleFlush();
  }

  /** @internal */
  onStreamAborted(conn: number, stream: number, reason: number, code: number): void {
    const streams = this.exchanges.get(conn);
    const ex = streams?.get(stream);
    if (!ex) return;
    this.deadlines.remove(ex);
    streams!.delete(stream);
    if (reason === AbortReason.PeerReset || reason === AbortReason.ProtocolError) {
      this.emit('requestAborted', ex.req, code);
    }
  }

  /** @internal */
  onConnOpen(conn: number, peer: string, cid: string): void {
    this.logger.debug?.(`connection open: cid=${cid} peer=${peer}`);
    this.emit('connection', { id: conn, peer, cid } satisfies ConnectionInfo);
  }

  /** @internal */
  onConnClosed(c: ConnClosedInfo): void {
    const streams = this.exchanges.get(c.conn);
    if (streams) for (const ex of streams.values()) this.deadlines.remove(ex);
    this.exchanges.delete(c.conn);
    const info: ConnectionCloseInfo = {
      id: c.conn,
      cid: c.cid,
      peer: c.peer,
      initiator: INITIATOR[c.how] ?? 'other',
      isApplication: c.isApp,
      errorCode: c.errorCode,
      reason: c.reason,
    };
    if (info.initiator === 'peer') {
      this.logger.info(
        `connection closed by peer (CONNECTION_CLOSE): cid=${info.cid} peer=${info.peer} ` +
          `error_code=0x${info.errorCode.toString(16)} (${info.isApplication ? 'application' : 'transport'}) ` +
          `reason=${JSON.stringify(info.reason)}`,
      );
    } else {
      this.logger.debug?.(
        `connection closed (${info.initiator}): cid=${info.cid} peer=${info.peer} error_code=0x${info.errorCode.toString(16)}`,
      );
    }
    this.emit('connectionClose', info);
  }

  /** @internal */
  onLog(level: number, message: string): void {
    if (level === LogLevel.Error) this.logger.error(message);
    else if (level === LogLevel.Warn) this.logger.warn(message);
    else if (level === LogLevel.Debug) this.logger.debug?.(message);
    else this.logger.info(message);
  }

  /** @internal */
  onWtSessionOpen(conn: number, session: number, path: string): void {
    this.sessionPaths.set(`${conn}:${session}`, path);
    this.emit('webtransportSession', { connection: conn, sessionId: session, path } satisfies WebTransportSessionInfo);
  }

  /** @internal */
  onWtSessionClosed(conn: number, session: number, code: number): void {
    const key = `${conn}:${session}`;
    const path = this.sessionPaths.get(key) ?? '';
    this.sessionPaths.delete(key);
    this.emit('webtransportSessionClose', { connection: conn, sessionId: session, path, code });
  }

  /** @internal */
  onWtStream(conn: number, session: number, stream: number, what: number, bidi: boolean): void {
    const info: WebTransportStreamInfo = { connection: conn, sessionId: session, streamId: stream, bidirectional: bidi };
    const event =
      what === WtStreamEvent.Opened ? 'webtransportStream' : what === WtStreamEvent.Rejected ? 'webtransportStreamRejected' : 'webtransportStreamClose';
    this.emit(event, info);
  }

  /** @internal */
  onWtDatagrams(conn: number, count: number): void {
    this.emit('webtransportDatagrams', count, conn);
  }

  /** @internal */
  onServerClosed(): void {
    const native = this.native;
    this.native = undefined;
    this.deadlines.clear();
    this.exchanges.clear();
    native?.join();
    this.resolveClosed?.();
    this.closing = undefined;
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
