// The spec's demo exchange (H3Request in, H3Response out) on the general
// stream API: for each RequestStream it builds the exchange, runs the body
// callback and the 'request' handlers, answers 500 for a handler that
// throws and 503 for one that never answers, and emits the server's
// request-level events. Not public API: Http3Server holds it privately.
import { CloseHow, ConnClosedInfo, WtStreamEvent } from '../native/protocol';
import { H3Request } from './request';
import { H3Response } from './response';
import type { Logger } from './log';
import { Deadlined, REQUEST_TIMEOUT_STATUS, RequestDeadlines } from './request-timeout';
import type { ConnectionHandle, RequestStream, StreamAbort } from './request-stream';
import type { StreamServerEvents, WebTransportEvents } from './stream-server';
import { offerSessionRequest } from './webtransport/offer';
import type { WebTransportSessionRequest } from './webtransport/session-request';
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
  stream: RequestStream;
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

export class Exchanges implements StreamServerEvents, WebTransportEvents {
  private readonly deadlines: RequestDeadlines<Exchange>;
  /** Open WebTransport sessions' paths, for their close events; bounded by the native session cap. */
  private readonly sessionPaths = new Map<string, string>();
  private open = 0;
  readonly webtransport: WebTransportEvents = this;

  /** `onClosed` runs once the native core has stopped and its thread is joined. */
  constructor(
    private readonly server: Http3Server,
    private readonly options: ServerOptions,
    private readonly logger: Logger,
    private readonly onClosed: () => void,
  ) {
    this.deadlines = new RequestDeadlines<Exchange>(options.requestTimeoutMs, (ex) => this.timeOut(ex));
  }

  /** Requests handed to handlers and not yet answered or aborted. */
  get pendingRequests(): number {
    return this.open;
  }

  /** With a 'session' listener at listen(): a session request for the application. */
  onSessionRequest(request: WebTransportSessionRequest): void {
    offerSessionRequest(this.server, request, this.logger);
  }

  onStream(stream: RequestStream): void {
    // With onBody the body reaches the callback, never the request object.
    const body = !this.options.onBody && stream.bufferedBody.length > 0 ? stream.bufferedBody : undefined;
    const req = new H3Request(stream.connection.id, stream.id, stream.lines as string[], body, stream.earlyData);
    const ex = { stream, req } as Exchange;
    ex.res = new H3Response((r, fields, b) => this.send(ex, r, fields, b));
    this.open++;
    this.deadlines.add(ex);
    stream.onAbort = (abort) => this.onAbort(ex, abort);
    if (this.options.onBody) {
      if (stream.complete) {
        // A body that came whole with the request is its one and last chunk.
        this.deliverChunk(ex, stream.bufferedBody, true);
      } else {
        stream.onData = (chunk) => {
          this.deliverChunk(ex, chunk, false);
          // The callback has taken it: the core may read on.
          stream.consume(chunk.length);
        };
        stream.onEnd = () => this.deliverChunk(ex, EMPTY, true);
      }
    } else {
      this.answer(ex);
    }
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
    if (!ex.res.sent) this.replaceResponse(ex).text(500, 'internal server error\n');
  }

  /** requestTimeoutMs passed without an answer: 503, and the handler's own res is ignored from now on. */
  private timeOut(ex: Exchange): void {
    if (ex.res.sent || ex.stream.isClosed) return;
    this.server.emit('requestTimeout', ex.req);
    this.replaceResponse(ex).text(REQUEST_TIMEOUT_STATUS, 'request timed out\n');
  }

  /** The server answers in the handler's place; the handler's own res no longer reaches the stream. */
  private replaceResponse(ex: Exchange): H3Response {
    const res = new H3Response((r, fields, b) => this.send(ex, r, fields, b));
    ex.res = res;
    return res;
  }

  private send(ex: Exchange, res: H3Response, fields: string[], body: Buffer): void {
    // Aborted by the client, timed out, or the connection is gone.
    if (res !== ex.res || ex.stream.isClosed) return;
    this.finish(ex);
    const status = res.status;
    this.server.emit('response', ex.req, status);
    this.logger.debug?.(`response ${status} to ${ex.req.method} ${ex.req.path} (connection ${ex.req.connectionId})`);
    // Routing ignores the method (the spec), but a HEAD answer, a 204 and a
    // 304 carry no content (RFC 9110 sections 9.3.2, 15.3.5, 15.4.5).
    const noContent = ex.req.method === 'HEAD' || status === 204 || status === 304;
    ex.stream.respond(status, fields, noContent ? EMPTY : body);
  }

  private finish(ex: Exchange): void {
    this.deadlines.remove(ex);
    this.open--;
  }

  private onAbort(ex: Exchange, abort: StreamAbort): void {
    if (ex.res.sent) return;
    this.finish(ex);
    // The handler's res stays; its end() finds the stream closed (send) and does nothing.
    if (abort.reason === 'reset' || abort.reason === 'protocol') {
      this.server.emit('requestAborted', ex.req, abort.code);
    }
  }

  onConnection(c: ConnectionHandle): void {
    this.logger.debug?.(`connection open: cid=${c.cid} peer=${peerOf(c)}`);
    this.server.emit('connection', { id: c.id, peer: peerOf(c), cid: c.cid } satisfies ConnectionInfo);
  }

  onConnectionClose(c: ConnectionHandle, closed: ConnClosedInfo): void {
    const info: ConnectionCloseInfo = {
      id: c.id,
      cid: closed.cid,
      peer: closed.peer,
      initiator: INITIATOR[closed.how] ?? 'other',
      isApplication: closed.isApp,
      errorCode: closed.errorCode,
      reason: closed.reason,
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

  onClose(): void {
    this.deadlines.clear();
    this.open = 0;
    this.onClosed();
  }
}

/** The peer as the core prints it. */
function peerOf(c: ConnectionHandle): string {
  return c.remoteFamily === 'IPv6' ? `[${c.remoteAddress}]:${c.remotePort}` : `${c.remoteAddress}:${c.remotePort}`;
}
