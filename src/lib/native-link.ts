// The server's end of the native core's event stream: it decodes each event
// batch, keeps the open exchanges (request, response, deadline), runs the
// handlers, emits the server's events and sends the answers back as command
// batches. Not public API: Http3Server holds it in a private field, so the
// boundary's callbacks (onRequest, ...) are not methods of the server.
// decodeBatch calls these methods directly: one call per event, no
// intermediate objects.
import type { NativeServer } from '../native/binding';
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
} from '../native/protocol';
import { H3Request } from './request';
import { H3Response } from './response';
import type { Logger } from './log';
import { Deadlined, REQUEST_TIMEOUT_STATUS, RequestDeadlines } from './request-timeout';
import type {
  ConnectionCloseInfo,
  ConnectionInfo,
  Http3Server,
  RequestHandler,
  ServerOptions,
  WebTransportSessionInfo,
  WebTransportStreamInfo,
} from './server';

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

export class NativeLink implements EventSink {
  private native: NativeServer | undefined;
  private readonly exchanges = new Map<number, Map<number, Exchange>>();
  private readonly deadlines: RequestDeadlines<Exchange>;
  /** Open WebTransport sessions' paths, for their close events; bounded by the native session cap. */
  private readonly sessionPaths = new Map<string, string>();
  private readonly commands = new CommandWriter();
  private inBatch = false;
  private flushScheduled = false;
  private lastSeq = 0;

  /** `onClosed` runs once the native core has stopped and its thread is joined. */
  constructor(
    private readonly server: Http3Server,
    private readonly options: ServerOptions,
    private readonly logger: Logger,
    private readonly onClosed: () => void,
  ) {
    this.deadlines = new RequestDeadlines<Exchange>(options.requestTimeoutMs, (ex) => this.timeOut(ex));
  }

  /** The native server whose batches this link receives from now on. */
  start(native: NativeServer): void {
    this.native = native;
  }

  /** Requests handed to handlers and not yet answered or aborted. */
  get pendingRequests(): number {
    let n = 0;
    for (const streams of this.exchanges.values()) n += streams.size;
    return n;
  }

  onBatch(batch: Buffer): void {
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

  /** The normal answer step: the server's 'request' listeners. */
  private answer(ex: Exchange): void {
    const listeners = this.server.listeners('request') as RequestHandler[];
    if (listeners.length === 0) {
      ex.res.text(404, 'not found\n');
      return;
    }
    for (const listener of listeners) {
      try {
        const result = listener.call(this.server, ex.req, ex.res);
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
    this.server.emit('requestTimeout', ex.req);
    const res = new H3Response((r, fields, b) => this.send(ex.req.connectionId, ex.req.streamId, r.status, fields, b));
    (ex as { res: H3Response }).res = res;
    res.text(REQUEST_TIMEOUT_STATUS, 'request timed out\n');
  }

  private send(conn: number, stream: number, status: number, fields: string[], body: Buffer): void {
    const streams = this.exchanges.get(conn);
    const ex = streams?.get(stream);
    if (!ex || !streams!.delete(stream)) return; // aborted by the client, timed out, or the connection is gone
    this.deadlines.remove(ex);
    this.server.emit('response', ex.req, status);
    this.logger.debug?.(`response ${status} to ${ex.req.method} ${ex.req.path} (connection ${conn})`);
    this.commands.respond(conn, stream, status, fields, body);
    this.scheduleFlush();
  }

  onStreamAborted(conn: number, stream: number, reason: number, code: number): void {
    const streams = this.exchanges.get(conn);
    const ex = streams?.get(stream);
    if (!ex) return;
    this.deadlines.remove(ex);
    streams!.delete(stream);
    if (reason === AbortReason.PeerReset || reason === AbortReason.ProtocolError) {
      this.server.emit('requestAborted', ex.req, code);
    }
  }

  onConnOpen(conn: number, peer: string, cid: string): void {
    this.logger.debug?.(`connection open: cid=${cid} peer=${peer}`);
    this.server.emit('connection', { id: conn, peer, cid } satisfies ConnectionInfo);
  }

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
    this.server.emit('connectionClose', info);
  }

  onLog(level: number, message: string): void {
    if (level === LogLevel.Error) this.logger.error(message);
    else if (level === LogLevel.Warn) this.logger.warn(message);
    else if (level === LogLevel.Debug) this.logger.debug?.(message);
    else this.logger.info(message);
  }

  onWtSessionOpen(conn: number, session: number, path: string): void {
    this.sessionPaths.set(`${conn}:${session}`, path);
    this.server.emit('webtransportSession', { connection: conn, sessionId: session, path } satisfies WebTransportSessionInfo);
  }

  onWtSessionClosed(conn: number, session: number, code: number): void {
    const key = `${conn}:${session}`;
    const path = this.sessionPaths.get(key) ?? '';
    this.sessionPaths.delete(key);
    this.server.emit('webtransportSessionClose', { connection: conn, sessionId: session, path, code });
  }

  onWtStream(conn: number, session: number, stream: number, what: number, bidi: boolean): void {
    const info: WebTransportStreamInfo = { connection: conn, sessionId: session, streamId: stream, bidirectional: bidi };
    const event =
      what === WtStreamEvent.Opened ? 'webtransportStream' : what === WtStreamEvent.Rejected ? 'webtransportStreamRejected' : 'webtransportStreamClose';
    this.server.emit(event, info);
  }

  onWtDatagrams(conn: number, count: number): void {
    this.server.emit('webtransportDatagrams', count, conn);
  }

  onServerClosed(): void {
    const native = this.native;
    this.native = undefined;
    this.deadlines.clear();
    this.exchanges.clear();
    native?.join();
    this.onClosed();
  }
}
