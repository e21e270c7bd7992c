// One request stream's exchange: the request and response objects, the
// stream callbacks routed to them, the request's socket view and its idle
// timeout. The server makes one per stream; the unit tests make them
// directly with a fake stream.
import type { Logger } from '../log';
import type { RequestStream, StreamAbort } from '../request-stream';
import { streamResetError } from './errors';
import { IdleTimer } from './idle-timer';
import { Http3ServerRequest, requestInternals } from './request';
import { Http3ServerResponse, responseInternals } from './response';
import { Http3StreamSocket, SocketOwner } from './socket';

/** What an exchange needs from its server. */
export interface ExchangeContext {
  readonly logger: Logger;
  /** The server's per-request idle timeout in ms (server.setTimeout); 0 for none. */
  readonly timeout: number;
  /** Emits the server's 'timeout' for an idle request; true when someone listened. */
  emitTimeout(socket: Http3StreamSocket): boolean;
}

/** @internal What the request and response objects call on their exchange. */
export interface ExchangeLink {
  readonly socket: Http3StreamSocket;
  readonly logger: Logger;
  /** Re-arms the shared idle timeout (req.setTimeout / res.setTimeout). */
  setTimeout(ms: number): void;
  /** Bytes moved: the idle timeout starts over. */
  touch(): void;
  /** The response emitted 'close'. */
  closed(hadError: boolean): void;
}

export class Exchange implements ExchangeLink, SocketOwner {
  readonly stream: RequestStream;
  readonly req: Http3ServerRequest;
  readonly res: Http3ServerResponse;
  readonly #context: ExchangeContext;
  #socket: Http3StreamSocket | undefined;
  #timer: IdleTimer | undefined;

  constructor(stream: RequestStream, context: ExchangeContext) {
    this.stream = stream;
    this.#context = context;
    const req = (this.req = new Http3ServerRequest(stream, this));
    const res = (this.res = new Http3ServerResponse(stream, this, req));
    if (!stream.complete) {
      // A request that ended with its header section (most GETs) gets no
      // body, trailers or end from the core.
      stream.onData = (chunk) => requestInternals.data(req, chunk);
      stream.onTrailers = (lines) => requestInternals.trailers(req, lines);
      stream.onEnd = () => requestInternals.end(req);
    }
    stream.onDrain = () => responseInternals.drain(res);
    stream.onAbort = (abort) => this.#abort(abort);
    if (context.timeout > 0) this.setTimeout(context.timeout);
  }

  get logger(): Logger {
    return this.#context.logger;
  }

  /** Made on first use: most handlers never look at the socket. */
  get socket(): Http3StreamSocket {
    return (this.#socket ??= new Http3StreamSocket(this.stream.connection, this));
  }

  setTimeout(ms: number): void {
    (this.#timer ??= new IdleTimer(() => this.#idle())).set(ms);
  }

  touch(): void {
    this.#timer?.touch();
  }

  closed(hadError: boolean): void {
    this.#timer?.stop();
    this.#socket?.markClosed(hadError);
    if (!hadError) requestInternals.responseFinished(this.req);
  }

  // SocketOwner: what req.socket.destroy()/end() do.
  destroy(error?: Error): void {
    this.res.destroy(error);
  }
  end(): void {
    this.res.end();
  }

  #abort(abort: StreamAbort): void {
    const error = streamResetError(abort);
    const { req, res } = this;
    if (abort.reason === 'headers-too-large') {
      // An application error with no exception to carry it: say it loudly.
      this.#context.logger.error(`${error.message} (response to ${req.method} ${req.url})`);
    }
    this.#timer?.stop();
    if (!(res.writableFinished && req.complete)) requestInternals.abort(req, error);
    responseInternals.abort(res, error);
  }

  /** Nothing moved for the timeout: 'timeout' on request, response, socket and server; with no listener anywhere, reset the stream (as node:http destroys the socket). */
  #idle(): void {
    const { req, res } = this;
    if (res.writableFinished || res.destroyed) return;
    const a = req.emit('timeout');
    const b = res.emit('timeout');
    const c = this.#socket?.emit('timeout') ?? false;
    const d = this.#context.emitTimeout(this.socket);
    if (!a && !b && !c && !d) res.destroy();
  }
}
