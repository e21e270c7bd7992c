// The native core's lifecycle, with every request stream handed to one
// callback as a RequestStream. createServer (the demo exchange),
// createSecureServer (node:http2 compatibility) and serve (fetch) each hold
// one. It decodes the core's event batches, keeps the open streams and
// connections, and sends what streams ask for back as command batches (one
// submit per batch handled, or per microtask for asynchronous answers).
import { addon, NativeCounters, NativeGroupStats, NativeIdentity, NativeServer, NativeTls } from '../native/binding';
import { claimWorkerPlace, WorkerPool, workerCount, workerEntryPath } from './workers';
import { AbortReason, CommandWriter, ConnClosedInfo, decodeBatch, EventSink, LogLevel, RequestFlag } from '../native/protocol';
import { Connection } from './connection';
import type { KeyMaterial } from './identity';
import type { DevHooks } from './dev-hooks';
import type { Logger } from './log';
import { NativeRequestStream, StreamOwner } from './native-stream';
import type { ConnectionHandle, RequestStream, StreamAbortReason } from './request-stream';
import { addonTransportOptions, wantsEbpfSteering } from './transport-options';
import type { TransportOptions } from './transport-options';
import { StreamTable } from './stream-table';
import { SessionRequestHandler, WebTransportRegistry } from './webtransport/registry';

/** What the core is told of identities beyond the default one (identities.rs). */
export type TlsChoices = Omit<NativeTls, 'certChain' | 'privateKey'>;

export interface CoreOptions extends TransportOptions, Partial<KeyMaterial> {
  /** Names with their own identities, SNICallback, client certificates. */
  tls?: TlsChoices;
  /**
   * false: the core buffers each request body up to `bodyWindow` (else it
   * answers 413 itself) and hands it over whole. true: bodies stream,
   * read at most `bodyCredit` bytes ahead of what the consumer took.
   */
  streamedBodies: boolean;
  bodyWindow?: number;
  bodyCredit?: number;
  idleTimeoutMs?: number;
  handshakeTimeoutMs?: number;
  maxConnections?: number;
  maxStreamsPerConnection?: number;
  maxFieldSectionSize?: number;
  webtransport?: boolean;
  /**
   * WebTransport sessions go to `onSessionRequest` (with `webtransport`),
   * not to the echo; a function is asked when listen() binds.
   */
  webtransportApp?: boolean | (() => boolean);
  /** Sessions open at once, server-wide (429 beyond). */
  webtransportMaxSessions?: number;
  /** Client-opened session streams open at once, server-wide (refused beyond). */
  webtransportMaxStreams?: number;
  /** Streams one session may have open, per side (the client's are refused beyond; this side's creation rejects). */
  webtransportMaxStreamsPerSession?: number;
  keylogPath?: string;
  qlogDir?: string;
  hooks?: DevHooks;
}

/** WebTransport reports, passed through as the core gives them (Profile B counts them). */
export type WebTransportEvents = Pick<EventSink, 'onWtSessionOpen' | 'onWtSessionClosed' | 'onWtStream' | 'onWtDatagrams'> &
  Partial<Pick<EventSink, 'onWtDatagram'>>;

export interface StreamServerEvents {
  /** A request's header section arrived. */
  onStream(stream: RequestStream): void;
  onConnection?(conn: ConnectionHandle): void;
  onConnectionClose?(conn: ConnectionHandle, info: ConnClosedInfo): void;
  webtransport?: WebTransportEvents;
  /** With `webtransportApp`: a client asks for a WebTransport session; the handler accepts or rejects it. */
  onSessionRequest?: SessionRequestHandler;
  /** The core stopped; nothing follows. */
  onClose(): void;
  /**
   * A handshake names a server the identity table does not know (with
   * `tls.askApplication`): call `answer` once with the identity to
   * present, or null to fail that handshake with a TLS alert.
   */
  onIdentityWanted?(serverName: string, answer: (identity: NativeIdentity | null) => void): void;
}

export interface AddressInfo {
  address: string;
  family: string;
  port: number;
}

const ABORT_REASONS: Record<number, StreamAbortReason> = {
  [AbortReason.PeerReset]: 'reset',
  [AbortReason.PeerStopSending]: 'stop-sending',
  [AbortReason.ProtocolError]: 'protocol',
  [AbortReason.FieldSectionTooLarge]: 'headers-too-large',
};

/** The code a stream aborted by its connection's end reports (H3_REQUEST_CANCELLED has no better fit). */
const CONNECTION_GONE_CODE = 0x10c;

export class StreamServer implements EventSink, StreamOwner {
  readonly commands = new CommandWriter();
  private native: NativeServer | undefined;
  private local: AddressInfo | undefined;
  private readonly connections = new Map<number, Connection>();
  /** Open streams by connection, then stream ID. */
  private readonly streams = new Map<number, StreamTable>();
  private inBatch = false;
  private flushScheduled = false;
  private flushSoon = false;
  private lastSeq = 0;
  /** The flush callbacks, made once: the schedulers run for every batch. */
  private readonly flushNow = () => this.flush();
  private readonly flushOnNextTick = () => process.nextTick(this.flushNow);
  /** The latest batch sequence number submitted to the core. */
  private ackedSeq = 0;
  private closing: Promise<void> | undefined;
  private resolveClosed: (() => void) | undefined;
  /** The application's WebTransport sessions (webtransportApp), else undefined; made by listen(). */
  sessions: WebTransportRegistry | undefined;
  /** With workers: the other workers (in the primary only). */
  private pool: WorkerPool | undefined;
  /** With workers: the native group this server is one worker of. */
  workerGroup: number | undefined;

  constructor(
    private readonly options: CoreOptions,
    private readonly events: StreamServerEvents,
    private readonly logger: Logger,
  ) {}

  #makeSessionRegistry(): WebTransportRegistry | undefined {
    const o = this.options;
    const onSessionRequest = this.events.onSessionRequest;
    const wanted = typeof o.webtransportApp === 'function' ? o.webtransportApp() : o.webtransportApp;
    if (!o.webtransport || !wanted || !onSessionRequest) return undefined;
    const host = {
      commands: this.commands,
      scheduleFlush: () => this.scheduleFlushSoon(),
      release: (stream: RequestStream) => this.forget(stream as NativeRequestStream),
      logError: (message: string) => this.logger.error(message),
    };
    return new WebTransportRegistry(host, (request) => onSessionRequest.call(this.events, request), o.webtransportMaxStreamsPerSession);
  }

  /**
   * Binds and starts; throws a one-line Error (port in use, bad identity).
   * With `workers` > 1 this thread is worker 0 and starts the others
   * (`ready()` resolves once they listen); in a worker thread h3-node
   * started, the first server to listen takes that worker's place, on the
   * primary's port whatever `port` says.
   */
  listen(port: number, host: string): AddressInfo {
    if (this.native) throw new Error('server is already listening');
    const o = this.options;
    const hooks = o.hooks;
    const place = claimWorkerPlace();
    const count = place ? 1 : workerCount(o.workers);
    const entry = count > 1 ? workerEntryPath(o.workerEntry) : undefined;
    const ebpf = wantsEbpfSteering(o);
    this.sessions = this.#makeSessionRegistry();
    let worker: { workerGroup: number; workerIndex: number } | undefined;
    if (place) {
      worker = { workerGroup: place.group, workerIndex: place.index };
      port = place.port;
      host = place.host;
    } else if (count > 1) {
      worker = { workerGroup: addon(hooks?.addonPath).createWorkerGroup(count, ebpf), workerIndex: 0 };
    }
    try {
      this.native = addon(hooks?.addonPath).listen(
        {
          ...worker,
          host,
          port,
          tls: { certChain: o.certChain, privateKey: o.privateKey, ...o.tls },
          streamedBodies: o.streamedBodies,
          bodyWindow: o.bodyWindow,
          bodyCredit: o.bodyCredit,
          idleTimeoutMs: o.idleTimeoutMs,
          handshakeTimeoutMs: o.handshakeTimeoutMs,
          ...addonTransportOptions(o),
          maxConnections: o.maxConnections,
          maxStreamsPerConnection: o.maxStreamsPerConnection,
          maxFieldSectionSize: o.maxFieldSectionSize,
          panicOnPath: hooks?.panicOnPath,
          noGso: hooks?.noGso,
          webtransport: o.webtransport ?? false,
          webtransportApp: this.sessions !== undefined,
          webtransportMaxSessions: o.webtransportMaxSessions,
          webtransportMaxStreams: o.webtransportMaxStreams,
          webtransportMaxStreamsPerSession: o.webtransportMaxStreamsPerSession,
          keylogPath: o.keylogPath,
          qlogDir: o.qlogDir,
          benchNativeHandler: hooks?.benchNativeHandler,
        },
        (batch) => this.onBatch(batch),
      );
    } catch (e) {
      place?.failed(e);
      if (worker && !place) addon(hooks?.addonPath).releaseWorkerGroup(worker.workerGroup);
      throw new Error((e as Error).message);
    }
    this.local = this.native.address();
    if (place) {
      this.workerGroup = place.group;
      place.listening((graceful) => this.close(graceful));
    } else if (worker && entry) {
      this.workerGroup = worker.workerGroup;
      this.pool = new WorkerPool(worker.workerGroup, count, entry, this.local.port, host, this.logger);
      this.pool.start();
    }
    return this.local;
  }

  /** Resolves once every worker listens (at once without workers); rejects if one cannot. */
  ready(): Promise<void> {
    return this.pool?.ready ?? Promise.resolve();
  }

  /** With workers: how packets are steered, and each worker's connections and forwarded packets. */
  workerStats(): (NativeGroupStats & { restarts: number }) | undefined {
    if (this.workerGroup === undefined) return undefined;
    const stats = addon(this.options.hooks?.addonPath).workerGroupStats(this.workerGroup);
    return stats ? { ...stats, restarts: this.pool?.restarts ?? 0 } : undefined;
  }

  get listening(): boolean {
    return this.native !== undefined && this.closing === undefined;
  }

  address(): AddressInfo | null {
    return this.native && !this.closing ? this.native.address() : null;
  }

  counters(): NativeCounters | undefined {
    return this.native?.counters();
  }

  /** Closes every connection with nothing in flight (every worker's); the others go on. */
  closeIdleConnections(): void {
    this.native?.closeIdleConnections();
  }

  /** Responses the application started, by final status: the whole server's with workers. */
  responseStatuses(): Map<number, number> {
    return new Map((this.native?.responseStatuses() ?? []).map((s) => [s.status, s.count]));
  }

  /** Open request streams (handed over, not yet answered or aborted). */
  get openStreams(): number {
    let n = 0;
    for (const s of this.streams.values()) n += s.size;
    return n;
  }

  /**
   * Graceful: GOAWAY to every client, in-flight requests finish (up to 3 s),
   * connections close. Otherwise every connection closes now. Resolves once
   * the core has stopped.
   */
  close(graceful: boolean): Promise<void> {
    const native = this.native;
    if (!native) return Promise.resolve();
    this.closing ??= new Promise<void>((resolve) => (this.resolveClosed = resolve));
    // The other workers drain at the same time; onServerClosed waits for them.
    void this.pool?.close(graceful);
    native.shutdown(graceful);
    if (graceful) this.sessions?.drainAll();
    return this.closing;
  }

  // StreamOwner

  scheduleFlush(): void {
    if (this.inBatch || this.flushScheduled || this.flushSoon) return;
    this.flushScheduled = true;
    queueMicrotask(this.flushNow);
  }

  /**
   * WebTransport sessions' commands: flushed at setImmediate rather than at
   * the next microtask, so that a write and the close() that follows it
   * (`await w.write(x); await w.close()`) reach the core in one submit. The
   * FIN then leaves with the data; written alone in a later loop turn, it
   * was lost when the data's ACK was read first (quiche 0.30 collects a
   * stream whose data is acknowledged before its FIN is sent; an echoed
   * stream's FIN never came in 1 of 4 runs of test/webtransport-app beside
   * four other suites).
   */
  scheduleFlushSoon(): void {
    if (this.inBatch || this.flushScheduled || this.flushSoon) return;
    this.flushSoon = true;
    setImmediate(() => {
      this.flushSoon = false;
      this.flush();
    });
  }

  /**
   * A microtask queued now runs after those the batch queued; the tick it
   * queues runs once the microtask queue is empty (Node drains microtasks
   * before it looks at ticks again), still before the next batch or I/O
   * callback. Waiting for setImmediate instead merged more (W9's datagram
   * echo: 5.4 round trips per submit against 3.6) but delays the answers
   * of createServer's handlers by whatever else the loop turn holds.
   */
  private flushWhenMicrotasksDrain(): void {
    if (this.flushScheduled || this.flushSoon) return;
    this.flushScheduled = true;
    queueMicrotask(this.flushOnNextTick);
  }

  forget(stream: NativeRequestStream): void {
    const streams = this.streams.get(stream.connection.id);
    if (streams?.get(stream.id) === stream) streams.delete(stream.id);
  }

  private flush(): void {
    this.flushScheduled = false;
    const commands = this.commands.take();
    // Nothing to say and every batch acknowledged: waking the I/O thread would only cost it a turn.
    if (commands === null && this.ackedSeq === this.lastSeq) return;
    this.ackedSeq = this.lastSeq;
    this.native?.submit(commands, this.lastSeq);
  }

  private onBatch(batch: Buffer): void {
    this.inBatch = true;
    const before = this.commands.size;
    try {
      this.lastSeq = decodeBatch(batch, this);
    } catch (e) {
      this.logger.error(`internal error while handling native events: ${(e as Error).stack ?? e}`);
    } finally {
      this.inBatch = false;
      // Answers the batch's handlers wrote at once (a synchronous handler)
      // leave now. A batch that wrote none is acknowledged once the
      // microtask queue is empty, together with what its microtasks
      // answered (createServer's handlers, an async handler, a web
      // stream's read then write): one wake of the I/O thread instead of an
      // acknowledgement alone and then one per promise chain.
      if (this.commands.size > before) this.flush();
      else this.flushWhenMicrotasksDrain();
    }
  }

  private stream(conn: number, stream: number): NativeRequestStream | undefined {
    return this.streams.get(conn)?.get(stream);
  }

  // EventSink: one call per event of a batch.

  onRequest(conn: number, stream: number, flags: number, lines: string[], body: Buffer): void {
    const connection = this.connections.get(conn) ?? this.unknownConnection(conn);
    const s = new NativeRequestStream(this, connection, stream, lines, (flags & RequestFlag.Complete) !== 0, body, (flags & RequestFlag.EarlyData) !== 0);
    let streams = this.streams.get(conn);
    if (!streams) {
      streams = new StreamTable();
      this.streams.set(conn, streams);
    }
    streams.set(stream, s);
    if (flags & RequestFlag.WtSession && this.sessions) {
      this.sessions.onSessionRequest(s);
      return;
    }
    try {
      this.events.onStream(s);
    } catch (e) {
      this.logger.error(`internal error in a request stream handler: ${(e as Error).stack ?? e}`);
      s.reset(0x102);
    }
  }

  onBody(conn: number, stream: number, chunk: Buffer, fin: boolean): void {
    if (this.sessions?.onBody(conn, stream, chunk, fin)) return;
    this.stream(conn, stream)?.deliverData(chunk, fin);
  }

  onTrailers(conn: number, stream: number, lines: string[]): void {
    this.stream(conn, stream)?.deliverTrailers(lines);
  }

  onSent(conn: number, stream: number, total: number): void {
    if (this.sessions?.onSent(conn, stream, total)) return;
    this.stream(conn, stream)?.deliverSent(total);
  }

  onPeerFieldLimit(conn: number, limit: number): void {
    const c = this.connections.get(conn);
    if (c) c.peerMaxFieldSectionSize = limit;
  }

  onStreamAborted(conn: number, stream: number, reason: number, code: number): void {
    if (this.sessions?.onStreamAborted(conn, stream, reason, code)) return;
    const streams = this.streams.get(conn);
    const s = streams?.get(stream);
    if (!s) return;
    streams!.delete(stream);
    s.deliverAbort({ reason: ABORT_REASONS[reason] ?? 'protocol', code });
  }

  onIdentityWanted(_conn: number, request: number, serverName: string): void {
    const native = this.native;
    let answered = false;
    const answer = (identity: NativeIdentity | null) => {
      if (answered || native !== this.native || !native) return;
      answered = true;
      if (identity) native.answerIdentity(request, identity);
      else native.refuseIdentity(request);
    };
    if (!this.events.onIdentityWanted) {
      answer(null);
      return;
    }
    try {
      this.events.onIdentityWanted(serverName, answer);
    } catch (e) {
      this.logger.error(`h3-node: choosing the identity for ${JSON.stringify(serverName)} threw: ${(e as Error).message}`);
      answer(null);
    }
  }

  onClientCertificate(conn: number, verifyError: number, chain: Buffer[]): void {
    const c = this.connections.get(conn);
    if (c) c.clientCertificate = { verifyError, chain: chain.map((b) => Buffer.from(b)) };
  }

  /** New handshakes choose from these identities (every worker's); open connections keep theirs. Throws naming what does not parse. */
  setIdentities(tls: NativeTls): void {
    if (!this.native) throw new Error('server is not listening');
    this.native.setIdentities(tls);
  }

  onConnOpen(conn: number, peer: string, cid: string): void {
    const c = new Connection(conn, peer, cid, this.local?.address ?? '', this.local?.port ?? 0);
    this.connections.set(conn, c);
    this.events.onConnection?.(c);
  }

  onPeerMoved(conn: number, peer: string): void {
    this.connections.get(conn)?.moveTo(peer);
  }

  onConnClosed(info: ConnClosedInfo): void {
    const c = this.connections.get(info.conn) ?? this.unknownConnection(info.conn);
    this.connections.delete(info.conn);
    c.open = false;
    const streams = this.streams.get(info.conn);
    this.streams.delete(info.conn);
    if (streams) for (const s of streams.values()) s.deliverAbort({ reason: 'connection', code: CONNECTION_GONE_CODE });
    this.sessions?.onConnectionClosed(info.conn);
    this.events.onConnectionClose?.(c, info);
  }

  onLog(level: number, message: string): void {
    if (level === LogLevel.Error) this.logger.error(message);
    else if (level === LogLevel.Warn) this.logger.warn(message);
    else if (level === LogLevel.Debug) this.logger.debug?.(message);
    else this.logger.info(message);
  }

  onWtSessionOpen(conn: number, session: number, path: string): void {
    this.events.webtransport?.onWtSessionOpen(conn, session, path);
  }

  onWtSessionClosed(conn: number, session: number, code: number, reason: string): void {
    this.sessions?.onSessionClosed(conn, session, code, reason);
    this.events.webtransport?.onWtSessionClosed(conn, session, code, reason);
  }

  onWtStream(conn: number, session: number, stream: number, what: number, bidi: boolean): void {
    this.sessions?.onWtStream(conn, session, stream, what, bidi);
    this.events.webtransport?.onWtStream(conn, session, stream, what, bidi);
  }

  onWtDatagrams(conn: number, count: number): void {
    this.events.webtransport?.onWtDatagrams(conn, count);
  }

  onWtDatagram(conn: number, session: number, payload: Buffer): void {
    this.sessions?.onDatagram(conn, session, payload);
    this.events.webtransport?.onWtDatagram?.(conn, session, payload);
  }

  onServerClosed(): void {
    const native = this.native;
    this.native = undefined;
    for (const c of this.connections.values()) c.open = false;
    this.connections.clear();
    this.streams.clear();
    native?.join();
    const pool = this.pool;
    this.pool = undefined;
    this.workerGroup = undefined;
    const finish = () => {
      this.resolveClosed?.();
      this.closing = undefined;
      this.events.onClose();
    };
    if (pool) void pool.close(false).then(finish, finish);
    else finish();
  }

  /** The core never reports a request before its connection; this keeps a mistake from crashing. */
  private unknownConnection(conn: number): Connection {
    const c = new Connection(conn, '0.0.0.0:0', '', this.local?.address ?? '', this.local?.port ?? 0);
    this.connections.set(conn, c);
    return c;
  }
}

