// The request side of the node:http2-compatible API: a Readable of the
// body, with the header facts Node's Http2ServerRequest has.
//
// Backpressure: the native core reads at most `bodyCredit` body bytes ahead
// of what this side has given back with stream.consume(). Credit goes back
// for a chunk when the Readable's buffer took it below its highWaterMark
// (push() returned true, or the chunk went straight to a 'data' listener);
// for chunks pushed past highWaterMark it waits until _read(), which the
// Readable calls only once the consumer has drained its buffer below
// highWaterMark again. So JavaScript holds at most highWaterMark +
// bodyCredit (+ one chunk) of a request a slow consumer is not reading, and
// the client is slowed through QUIC flow control. (Counting bytes taken out
// of the buffer exactly is not possible with setEncoding(): the buffer then
// counts characters.)
//
// The Readable's machinery is built on first use (DormantReadable): a
// request whose body nobody reads (most GETs) never pays for it.
import { DormantReadable } from './dormant-readable';
import { firstLineValue } from '../request-stream';
import type { RequestStream } from '../request-stream';
import { foldFieldLines, IncomingHeaders } from './header-rules';
import type { ExchangeLink } from './exchange';
import type { Http3StreamSocket } from './socket';

/**
 * @internal What the exchange (exchange.ts) calls on a request. Private
 * methods reached through these functions rather than prototype methods:
 * Express replaces the request's prototype, and these must keep working
 * whatever the prototype is.
 */
export const requestInternals = {} as {
  data(req: Http3ServerRequest, chunk: Buffer): void;
  trailers(req: Http3ServerRequest, lines: string[]): void;
  end(req: Http3ServerRequest): void;
  abort(req: Http3ServerRequest, error: Error): void;
  responseFinished(req: Http3ServerRequest): void;
};

export class Http3ServerRequest extends DormantReadable {
  readonly #stream: RequestStream;
  readonly #link: ExchangeLink;
  #headers: IncomingHeaders | undefined;
  #rawHeaders: string[] | undefined;
  // Made on first use: few requests carry trailers, fewer handlers read them.
  #trailers: IncomingHeaders | undefined;
  #rawTrailers: string[] | undefined;
  #method: string;
  #url: string;
  /** The whole body arrived (onEnd, or no body at all). */
  #received = false;
  #aborted = false;
  /** Bytes pushed past highWaterMark; given back as credit at the next _read(). */
  #deferredCredit = 0;
  /** The response finished while the Readable slept: the dump is owed. */
  #dumpOwed = false;

  /** @internal Made by the server for each request stream. */
  constructor(stream: RequestStream, link: ExchangeLink) {
    super();
    this.#stream = stream;
    this.#link = link;
    // The headers object is built on first use (many handlers route on
    // method and url alone); those two come from the pseudo-header lines,
    // which lead the section.
    this.#method = firstLineValue(stream.lines, ':method') ?? '';
    this.#url = firstLineValue(stream.lines, ':path') ?? '';
    this.#received = stream.complete;
  }

  /** The Readable was first used: what arrived before is pushed now, in order. */
  protected override _wake(): void {
    const body = this.#stream.bufferedBody;
    if (body.length > 0) this.push(body);
    if (this.#received) this.push(null);
    if (this.#dumpOwed) this.#onResponseFinished();
  }

  static {
    requestInternals.data = (req, chunk) => req.#onData(chunk);
    requestInternals.trailers = (req, lines) => req.#onTrailers(lines);
    requestInternals.end = (req) => req.#onEnd();
    requestInternals.abort = (req, error) => req.#onAbort(error);
    requestInternals.responseFinished = (req) => req.#onResponseFinished();
  }

  /** Field lines folded with Node's duplicate rules, pseudo-headers included (as node:http2 has them). */
  get headers(): IncomingHeaders {
    return (this.#headers ??= foldRequestLines(this.#stream.lines, !this.#stream.complete || this.#stream.bufferedBody.length > 0));
  }
  set headers(value: IncomingHeaders) {
    this.#headers = value;
  }

  /** Every value of every field as an array, like IncomingMessage's headersDistinct. */
  get headersDistinct(): Record<string, string[]> {
    return distinct(this.#stream.lines);
  }

  /** The field lines as received, flat (name, value, ...), pseudo-headers first. */
  get rawHeaders(): string[] {
    return (this.#rawHeaders ??= this.#stream.lines.slice());
  }

  get trailers(): IncomingHeaders {
    return (this.#trailers ??= {});
  }
  get trailersDistinct(): Record<string, string[]> {
    return distinct(this.rawTrailers);
  }
  get rawTrailers(): string[] {
    return (this.#rawTrailers ??= []);
  }

  get method(): string {
    return this.#method;
  }
  set method(value: string) {
    this.#method = value;
  }

  /** The request target (:path); routers rewrite it, as they do on IncomingMessage. */
  get url(): string {
    return this.#url;
  }
  set url(value: string) {
    this.#url = value;
  }

  /** The request arrived as TLS early data (0-RTT) and may be a replay (RFC 8470). */
  get earlyData(): boolean {
    return this.#stream.earlyData;
  }

  get authority(): string | undefined {
    const headers = this.headers;
    return (headers[':authority'] ?? headers.host) as string | undefined;
  }
  get scheme(): string | undefined {
    return this.headers[':scheme'] as string | undefined;
  }

  get httpVersion(): string {
    return '3.0';
  }
  get httpVersionMajor(): number {
    return 3;
  }
  get httpVersionMinor(): number {
    return 0;
  }

  /** The whole body arrived. */
  get complete(): boolean {
    return this.#received;
  }

  /** The client reset the stream (or the connection closed) before the exchange finished. */
  get aborted(): boolean {
    return this.#aborted;
  }

  /** The request's own socket view: peer address and port, 'close' when the exchange ends. */
  get socket(): Http3StreamSocket {
    return this.#link.socket;
  }
  get connection(): Http3StreamSocket {
    return this.#link.socket;
  }

  /** The underlying HTTP/3 stream (low level; its shape may change). */
  get stream(): RequestStream {
    return this.#stream;
  }

  /** Emits 'timeout' when no bytes move either way for `ms`; 0 turns it off. Shared with res.setTimeout. */
  setTimeout(ms: number, callback?: () => void): this {
    if (callback) this.on('timeout', callback);
    this.#link.setTimeout(ms);
    return this;
  }

  override _read(): void {
    this.#returnDeferredCredit();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    // Whatever the buffer held is dropped: give its credit back, and (see
    // #onData) every later chunk as it arrives, so the upload drains instead
    // of stalling the stream while the response may still be written.
    this.#returnDeferredCredit();
    // Like IncomingMessage: the error is emitted only to someone listening
    // (pipeline, for await, an 'error' handler); a client reset must not
    // crash a server that never looked at the body.
    callback(error && this.listenerCount('error') > 0 ? error : null);
  }

  #returnDeferredCredit(): void {
    const n = this.#deferredCredit;
    if (n > 0) {
      this.#deferredCredit = 0;
      this.#stream.consume(n);
    }
  }

  #onData(chunk: Buffer): void {
    this.#link.touch();
    if (this.destroyed || this.#received) {
      this.#stream.consume(chunk.length);
      return;
    }
    if (this.push(chunk)) this.#stream.consume(chunk.length);
    else this.#deferredCredit += chunk.length;
  }

  #onTrailers(lines: string[]): void {
    foldFieldLines(lines, this.trailers);
    const raw = this.rawTrailers;
    for (const l of lines) raw.push(l);
  }

  #onEnd(): void {
    if (this.#received) return;
    this.#received = true;
    // Asleep, the end is pushed when it wakes.
    if (this._awake && !this.destroyed) this.push(null);
  }

  #onAbort(error: Error): void {
    this.#aborted = true;
    this.emit('aborted');
    if (!this.destroyed) this.destroy(error);
  }

  /**
   * The response is complete. A body nobody touched is resumed (dumped), as
   * node:http does, so the request still ends and closes and its credit
   * flows back to the core.
   */
  #onResponseFinished(): void {
    // Asleep, nothing has looked at the body: the dump waits for the
    // first use (if there is none, there is no one to see it either).
    if (!this._awake) this.#dumpOwed = true;
    else if (this.readableFlowing === null && !this.destroyed) this.resume();
  }
}

/**
 * The request's headers object: Node's duplicate rules, Host filled in from
 * :authority, and `transfer-encoding: chunked` for a body of unknown length.
 */
function foldRequestLines(lines: readonly string[], bodyMayFollow: boolean): IncomingHeaders {
  const headers = foldFieldLines(lines, Object.create(null) as IncomingHeaders);
  // HTTP/3 clients send :authority instead of Host (RFC 9114 section
  // 4.3.1); code written for HTTP/1 (Express's req.hostname, vhost
  // routers) reads Host, so a missing one is filled in from :authority,
  // as a gateway to HTTP/1.1 must. rawHeaders stays as received.
  if (headers.host === undefined && headers[':authority'] !== undefined) headers.host = headers[':authority'];
  // HTTP/3 frames a body by DATA frames and FIN, so a body of unknown length
  // (fetch() with a ReadableStream, most HTTP/3 clients' uploads) comes with
  // neither content-length nor transfer-encoding. Body parsers built on
  // type-is (express.json(), express.urlencoded(), express.text(),
  // koa-bodyparser) take that to mean "no body" and skip it. The same body
  // over HTTP/1.1 would carry `transfer-encoding: chunked`, so that is what
  // the headers object says when body bytes came with the header section or
  // the stream did not end with it, and no content-length came; rawHeaders
  // stays as received.
  if (bodyMayFollow && headers['content-length'] === undefined && headers['transfer-encoding'] === undefined) {
    headers['transfer-encoding'] = 'chunked';
  }
  return headers;
}

function distinct(lines: readonly string[]): Record<string, string[]> {
  const out = Object.create(null) as Record<string, string[]>;
  for (let i = 0; i + 1 < lines.length; i += 2) (out[lines[i]] ??= []).push(lines[i + 1]);
  return out;
}
