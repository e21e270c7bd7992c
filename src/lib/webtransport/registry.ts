// The application's WebTransport sessions on one server: turns the core's
// reports (session requests, streams joining and leaving, stream bytes,
// datagrams, closes) into calls on WebTransportSession and WtStreamChannel
// objects, and hands out server stream IDs. StreamServer owns one when
// sessions go to the application (`webtransportApp`).
import { AbortReason, WtStreamEvent } from '../../native/protocol';
import type { NativeRequestStream } from '../native-stream';
import type { RequestStream } from '../request-stream';
import { SessionLink, WebTransportSession } from './session';
import { SessionRequestOwner, WebTransportSessionRequest } from './session-request';
import { WtLink, WtStreamChannel } from './stream';
import { MAX_STREAMS_PER_SESSION } from './limits';

/** What the registry needs from the server. */
export interface RegistryHost extends WtLink {
  /** The request stream is now a session's CONNECT stream: the server no longer tracks it. */
  release(stream: RequestStream): void;
  /** Something in the application's handler threw: say so. */
  logError(message: string): void;
}

export type SessionRequestHandler = (request: WebTransportSessionRequest) => void;

interface Tracked {
  channel: WtStreamChannel;
  session: WebTransportSession;
}

/** First server-initiated stream IDs: bidirectional 1; unidirectional 7 (3 is the control stream). */
const FIRST_SERVER_BIDI = 1;
const FIRST_SERVER_UNI = 7;

export class WebTransportRegistry implements SessionLink, SessionRequestOwner {
  readonly #sessions = new Map<number, Map<number, WebTransportSession>>();
  readonly #streams = new Map<number, Map<number, Tracked>>();
  readonly #nextIds = new Map<number, { bidi: number; uni: number }>();
  /** Datagrams dropped because a session's reader fell behind. */
  datagramsDropped = 0;

  constructor(
    private readonly host: RegistryHost,
    private readonly onRequest: SessionRequestHandler,
    readonly maxStreamsPerSession = MAX_STREAMS_PER_SESSION,
  ) {}

  get commands() {
    return this.host.commands;
  }

  scheduleFlush(): void {
    this.host.scheduleFlush();
  }

  /** Sessions open now, server-wide. */
  get openSessions(): number {
    let n = 0;
    for (const m of this.#sessions.values()) n += m.size;
    return n;
  }

  // SessionLink

  nextStreamId(conn: number, bidi: boolean): number {
    let next = this.#nextIds.get(conn);
    if (!next) {
      next = { bidi: FIRST_SERVER_BIDI, uni: FIRST_SERVER_UNI };
      this.#nextIds.set(conn, next);
    }
    const id = bidi ? next.bidi : next.uni;
    if (bidi) next.bidi += 4;
    else next.uni += 4;
    return id;
  }

  track(conn: number, channel: WtStreamChannel, session: WebTransportSession): void {
    perConnection(this.#streams, conn).set(channel.id, { channel, session });
  }

  datagramDropped(): void {
    this.datagramsDropped++;
  }

  // SessionRequestOwner

  accepted(request: WebTransportSessionRequest, stream: RequestStream): WebTransportSession {
    this.host.release(stream);
    const session = new WebTransportSession(this, stream.id, stream.connection, request.path);
    perConnection(this.#sessions, stream.connection.id).set(stream.id, session);
    return session;
  }

  // From StreamServer.

  /** An extended CONNECT: the application decides. A handler that throws refuses it with 500. */
  onSessionRequest(stream: NativeRequestStream): void {
    const request = new WebTransportSessionRequest(this, stream);
    try {
      this.onRequest(request);
    } catch (e) {
      this.host.logError(`WebTransport session handler failed on ${request.path}: ${(e as Error).stack ?? e}`);
      if (!request.decided) request.reject(500);
    }
  }

  onWtStream(conn: number, sessionId: number, stream: number, what: number, bidi: boolean): void {
    if (what === WtStreamEvent.Opened) {
      const session = this.#sessions.get(conn)?.get(sessionId);
      if (!session) return;
      const channel = new WtStreamChannel(this, conn, stream, { read: true, write: bidi });
      session.deliverIncoming(channel, bidi);
    } else if (what === WtStreamEvent.Closed) {
      const m = this.#streams.get(conn);
      const t = m?.get(stream);
      if (!t) return;
      m!.delete(stream);
      t.session.deliverStreamGone(t.channel);
    }
  }

  /** Stream bytes: true when `stream` is a session stream (handled here). */
  onBody(conn: number, stream: number, chunk: Buffer, fin: boolean): boolean {
    const t = this.#streams.get(conn)?.get(stream);
    if (!t) return false;
    t.channel.deliverData(chunk, fin);
    return true;
  }

  onSent(conn: number, stream: number, total: number): boolean {
    const t = this.#streams.get(conn)?.get(stream);
    if (!t) return false;
    t.channel.deliverSent(total);
    return true;
  }

  onStreamAborted(conn: number, stream: number, reason: number, code: number): boolean {
    const t = this.#streams.get(conn)?.get(stream);
    if (!t) return false;
    if (reason === AbortReason.PeerReset) t.channel.deliverReset(code);
    else if (reason === AbortReason.PeerStopSending) t.channel.deliverStopSending(code);
    else t.channel.deliverGone('the stream could not be opened');
    return true;
  }

  onSessionClosed(conn: number, sessionId: number, code: number, reason: string): void {
    const m = this.#sessions.get(conn);
    const session = m?.get(sessionId);
    if (!session) return;
    m!.delete(sessionId);
    this.#forgetStreamsOf(conn, session);
    session.deliverClosed(code, reason, true);
  }

  onDatagram(conn: number, sessionId: number, payload: Buffer): void {
    this.#sessions.get(conn)?.get(sessionId)?.deliverDatagram(payload);
  }

  /** A graceful shutdown began: every session hears `draining`. */
  drainAll(): void {
    for (const m of this.#sessions.values()) for (const session of m.values()) session.deliverDraining();
  }

  /** The connection is gone: its sessions were lost. */
  onConnectionClosed(conn: number): void {
    const m = this.#sessions.get(conn);
    this.#sessions.delete(conn);
    this.#streams.delete(conn);
    this.#nextIds.delete(conn);
    if (m) for (const session of m.values()) session.deliverClosed(0, '', false);
  }

  #forgetStreamsOf(conn: number, session: WebTransportSession): void {
    const m = this.#streams.get(conn);
    if (!m) return;
    for (const [id, t] of m) if (t.session === session) m.delete(id);
  }
}

/** The inner map of one connection, made on first use. */
function perConnection<T>(outer: Map<number, Map<number, T>>, conn: number): Map<number, T> {
  let inner = outer.get(conn);
  if (!inner) {
    inner = new Map();
    outer.set(conn, inner);
  }
  return inner;
}
