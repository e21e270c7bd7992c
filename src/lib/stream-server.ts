// The native core's lifecycle, with every request stream handed to one
// callback as a RequestStream. createServer (the demo exchange),
// createSecureServer (node:http2 compatibility) and serve (fetch) each hold
// one. It decodes the core's event batches, keeps the open streams and
// connections, and sends what streams ask for back as command batches (one
// submit per batch handled, or per microtask for asynchronous answers).
import { addon, NativeCounters, NativeServer } from '../native/binding';
import { AbortReason, CommandWriter, ConnClosedInfo, decodeBatch, EventSink, LogLevel, RequestFlag } from '../native/protocol';
import { Connection } from './connection';
import type { DevHooks } from './dev-hooks';
import type { Logger } from './log';
import { NativeRequestStream, StreamOwner } from './native-stream';
import type { ConnectionHandle, RequestStream, StreamAbortReason } from './request-stream';

export interface CoreOptions {
  /** PEM certificate chain path. */
  certPath: string;
  /** PEM private key path. */
  keyPath: string;
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
  /** 32 bytes, or 64 hex digits (ServerOptions.statelessResetKey). */
  statelessResetKey?: Buffer | string;
  /** ServerOptions.congestionControl. */
  congestionControl?: CongestionControl;
  /** ServerOptions.pacing. */
  pacing?: boolean;
  /** ServerOptions.quicLb. */
  quicLb?: QuicLbOptions;
  /** ServerOptions.retry, retryThreshold, retryTokenKey. */
  retry?: RetryMode;
  retryThreshold?: number;
  retryTokenKey?: Buffer | string;
  /** ServerOptions.ticketKey. */
  ticketKey?: Buffer | string;
  /** ServerOptions.earlyData. */
  earlyData?: EarlyDataMode;
  maxConnections?: number;
  maxStreamsPerConnection?: number;
  maxFieldSectionSize?: number;
  webtransport?: boolean;
  keylogPath?: string;
  qlogDir?: string;
  hooks?: DevHooks;
}

/** WebTransport reports, passed through as the core gives them (Profile B counts them). */
export type WebTransportEvents = Pick<EventSink, 'onWtSessionOpen' | 'onWtSessionClosed' | 'onWtStream' | 'onWtDatagrams'>;

export interface StreamServerEvents {
  /** A request's header section arrived. */
  onStream(stream: RequestStream): void;
  onConnection?(conn: ConnectionHandle): void;
  onConnectionClose?(conn: ConnectionHandle, info: ConnClosedInfo): void;
  webtransport?: WebTransportEvents;
  /** The core stopped; nothing follows. */
  onClose(): void;
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
  private readonly streams = new Map<number, Map<number, NativeRequestStream>>();
  private inBatch = false;
  private flushScheduled = false;
  private lastSeq = 0;
  private closing: Promise<void> | undefined;
  private resolveClosed: (() => void) | undefined;

  constructor(
    private readonly options: CoreOptions,
    private readonly events: StreamServerEvents,
    private readonly logger: Logger,
  ) {}

  /** Binds and starts; throws a one-line Error (port in use, bad identity). */
  listen(port: number, host: string): AddressInfo {
    if (this.native) throw new Error('server is already listening');
    const o = this.options;
    const hooks = o.hooks;
    try {
      this.native = addon(hooks?.addonPath).listen(
        {
          host,
          port,
          certPath: o.certPath,
          keyPath: o.keyPath,
          streamedBodies: o.streamedBodies,
          bodyWindow: o.bodyWindow,
          bodyCredit: o.bodyCredit,
          idleTimeoutMs: o.idleTimeoutMs,
          handshakeTimeoutMs: o.handshakeTimeoutMs,
          statelessResetKey: keyOf('statelessResetKey', o.statelessResetKey),
          congestionControl: congestionControlOf(o.congestionControl),
          pacing: pacingOf(o.pacing),
          ...quicLbOf(o.quicLb),
          retry: retryModeOf(o.retry),
          retryThreshold: o.retryThreshold,
          retryTokenKey: keyOf('retryTokenKey', o.retryTokenKey),
          ticketKey: keyOf('ticketKey', o.ticketKey, 48),
          earlyData: earlyDataOf(o.earlyData),
          maxConnections: o.maxConnections,
          maxStreamsPerConnection: o.maxStreamsPerConnection,
          maxFieldSectionSize: o.maxFieldSectionSize,
          panicOnPath: hooks?.panicOnPath,
          webtransport: o.webtransport ?? false,
          keylogPath: o.keylogPath,
          qlogDir: o.qlogDir,
          benchNativeHandler: hooks?.benchNativeHandler,
        },
        (batch) => this.onBatch(batch),
      );
    } catch (e) {
      throw new Error((e as Error).message);
    }
    this.local = this.native.address();
    return this.local;
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
    native.shutdown(graceful);
    return this.closing;
  }

  // StreamOwner

  scheduleFlush(): void {
    if (this.inBatch || this.flushScheduled) return;
    this.flushScheduled = true;
    queueMicrotask(() => this.flush());
  }

  forget(stream: NativeRequestStream): void {
    const streams = this.streams.get(stream.connection.id);
    if (streams?.get(stream.id) === stream) streams.delete(stream.id);
  }

  private flush(): void {
    this.flushScheduled = false;
    this.native?.submit(this.commands.take(), this.lastSeq);
  }

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

  private stream(conn: number, stream: number): NativeRequestStream | undefined {
    return this.streams.get(conn)?.get(stream);
  }

  // EventSink: one call per event of a batch.

  onRequest(conn: number, stream: number, flags: number, lines: string[], body: Buffer): void {
    const connection = this.connections.get(conn) ?? this.unknownConnection(conn);
    const s = new NativeRequestStream(this, connection, stream, lines, (flags & RequestFlag.Complete) !== 0, body, (flags & RequestFlag.EarlyData) !== 0);
    let streams = this.streams.get(conn);
    if (!streams) {
      streams = new Map();
      this.streams.set(conn, streams);
    }
    streams.set(stream, s);
    try {
      this.events.onStream(s);
    } catch (e) {
      this.logger.error(`internal error in a request stream handler: ${(e as Error).stack ?? e}`);
      s.reset(0x102);
    }
  }

  onBody(conn: number, stream: number, chunk: Buffer, fin: boolean): void {
    this.stream(conn, stream)?.deliverData(chunk, fin);
  }

  onTrailers(conn: number, stream: number, lines: string[]): void {
    this.stream(conn, stream)?.deliverTrailers(lines);
  }

  onSent(conn: number, stream: number, total: number): void {
    this.stream(conn, stream)?.deliverSent(total);
  }

  onPeerFieldLimit(conn: number, limit: number): void {
    const c = this.connections.get(conn);
    if (c) c.peerMaxFieldSectionSize = limit;
  }

  onStreamAborted(conn: number, stream: number, reason: number, code: number): void {
    const streams = this.streams.get(conn);
    const s = streams?.get(stream);
    if (!s) return;
    streams!.delete(stream);
    s.deliverAbort({ reason: ABORT_REASONS[reason] ?? 'protocol', code });
  }

  onConnOpen(conn: number, peer: string, cid: string): void {
    const c = new Connection(conn, peer, cid, this.local?.address ?? '', this.local?.port ?? 0);
    this.connections.set(conn, c);
    this.events.onConnection?.(c);
  }

  onConnClosed(info: ConnClosedInfo): void {
    const c = this.connections.get(info.conn) ?? this.unknownConnection(info.conn);
    this.connections.delete(info.conn);
    c.open = false;
    const streams = this.streams.get(info.conn);
    this.streams.delete(info.conn);
    if (streams) for (const s of streams.values()) s.deliverAbort({ reason: 'connection', code: CONNECTION_GONE_CODE });
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

  onWtSessionClosed(conn: number, session: number, code: number): void {
    this.events.webtransport?.onWtSessionClosed(conn, session, code);
  }

  onWtStream(conn: number, session: number, stream: number, what: number, bidi: boolean): void {
    this.events.webtransport?.onWtStream(conn, session, stream, what, bidi);
  }

  onWtDatagrams(conn: number, count: number): void {
    this.events.webtransport?.onWtDatagrams(conn, count);
  }

  onServerClosed(): void {
    const native = this.native;
    this.native = undefined;
    for (const c of this.connections.values()) c.open = false;
    this.connections.clear();
    this.streams.clear();
    native?.join();
    this.resolveClosed?.();
    this.closing = undefined;
    this.events.onClose();
  }

  /** The core never reports a request before its connection; this keeps a mistake from crashing. */
  private unknownConnection(conn: number): Connection {
    const c = new Connection(conn, '0.0.0.0:0', '', this.local?.address ?? '', this.local?.port ?? 0);
    this.connections.set(conn, c);
    return c;
  }
}

/** Connection IDs a QUIC-LB load balancer can route (draft-ietf-quic-load-balancers, plaintext). */
export interface QuicLbOptions {
  /** The configuration rotation codepoint, 0 to 6. */
  configId: number;
  /** This server's ID: 1 to 15 bytes, as a Buffer or hex digits. */
  serverId: Buffer | string;
}

/** quicLb as the addon takes it; the addon checks the ranges and names them. */
function quicLbOf(lb: QuicLbOptions | undefined): { quicLbConfigId?: number; quicLbServerId?: Buffer } {
  if (lb === undefined) return {};
  const { configId, serverId } = lb;
  if (!Number.isInteger(configId)) throw new TypeError(`quicLb.configId must be an integer from 0 to 6, got ${JSON.stringify(configId)}`);
  const id = typeof serverId === 'string' && /^([0-9a-fA-F]{2})+$/.test(serverId) ? Buffer.from(serverId, 'hex') : serverId;
  if (!Buffer.isBuffer(id)) throw new TypeError('quicLb.serverId must be a Buffer or an even number of hex digits');
  return { quicLbConfigId: configId, quicLbServerId: id };
}

/** When first Initials get a Retry (address validation, RFC 9000 section 8.1.2). */
export const RETRY_MODES = ['off', 'on', 'auto'] as const;
export type RetryMode = (typeof RETRY_MODES)[number];

function retryModeOf(mode: unknown): RetryMode | undefined {
  if (mode === undefined) return undefined;
  if (!(RETRY_MODES as readonly unknown[]).includes(mode)) {
    throw new TypeError(`retry must be one of ${RETRY_MODES.join(', ')}, got ${JSON.stringify(mode)}`);
  }
  return mode as RetryMode;
}

/** 0-RTT: which requests may be answered before the handshake completes. */
export const EARLY_DATA_MODES = ['safe', 'all', 'off'] as const;
export type EarlyDataMode = (typeof EARLY_DATA_MODES)[number];

function earlyDataOf(mode: unknown): EarlyDataMode | undefined {
  if (mode === undefined) return undefined;
  if (!(EARLY_DATA_MODES as readonly unknown[]).includes(mode)) {
    throw new TypeError(`earlyData must be one of ${EARLY_DATA_MODES.join(', ')}, got ${JSON.stringify(mode)}`);
  }
  return mode as EarlyDataMode;
}

/** quiche's congestion controllers, by the names the option takes. */
export const CONGESTION_CONTROLS = ['cubic', 'reno', 'bbr2'] as const;
export type CongestionControl = (typeof CONGESTION_CONTROLS)[number];

/** congestionControl checked here, so a typo is a TypeError naming the choices. */
export function congestionControlOf(name: unknown): CongestionControl | undefined {
  if (name === undefined) return undefined;
  if (!(CONGESTION_CONTROLS as readonly unknown[]).includes(name)) {
    throw new TypeError(`congestionControl must be one of ${CONGESTION_CONTROLS.join(', ')}, got ${JSON.stringify(name)}`);
  }
  return name as CongestionControl;
}

function pacingOf(v: unknown): boolean | undefined {
  if (v === undefined || typeof v === 'boolean') return v;
  throw new TypeError(`pacing must be true or false, got ${JSON.stringify(v)}`);
}

/** A key option (statelessResetKey, retryTokenKey: 32 bytes; ticketKey: 48) as the addon takes it. */
export function keyOf(name: string, key: Buffer | string | undefined, size = 32): Buffer | undefined {
  if (key === undefined) return undefined;
  const hex = new RegExp(`^[0-9a-fA-F]{${2 * size}}$`);
  const bytes = typeof key === 'string' ? (hex.test(key) ? Buffer.from(key, 'hex') : undefined) : key;
  if (bytes === undefined || !Buffer.isBuffer(bytes) || bytes.length !== size) {
    throw new TypeError(`${name} must be ${size} bytes: a Buffer or ${2 * size} hex digits`);
  }
  return bytes;
}
