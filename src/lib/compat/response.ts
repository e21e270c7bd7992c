// The response side of the node:http2-compatible API: Node's
// ServerResponse/Http2ServerResponse methods on one HTTP/3 request stream.
//
// Headers are kept until the first write() or end() (writeHead() only
// freezes them; if nothing follows in the same tick they go out on their
// own), so the common `writeHead(); end(body)` and `setHeader(); end(body)`
// become one command to the core, stream.respond(), with content-length
// filled in. Data after the header section goes out with sendData();
// write() returns false while more than sendHighWater bytes wait in the
// core, and 'drain' follows.
//
// Internal calls go through private members, except `_implicitHeader` ->
// `writeHead`, which stay dynamic on purpose: on-headers (used by
// compression, morgan, express-session) wraps res.writeHead to run code
// just before the header section is fixed, as it does on node:http.
import { Stream } from 'node:stream';
import { STATUS_CODES } from 'node:http';
import { H3Code, RequestStream } from '../request-stream';
import type { Http3ServerRequest } from './request';
import type { ExchangeLink } from './exchange';
import type { Http3StreamSocket } from './socket';
import { TickQueue } from './tick-queue';
import { DROP, fieldKey, OutgoingValue, validateField, wireValue } from './header-rules';
import { OutgoingFields } from './outgoing-fields';
import { BodyLength, declaredLength, UNDECLARED } from './declared-length';
import {
  fieldSectionSize,
  headersAlreadySent,
  contentLengthMismatch,
  headersTooLarge,
  informationalStatusNotAllowed,
  invalidArgType,
  invalidArgValue,
  invalidStatusCode,
  NodeStyleError,
  streamDestroyed,
  writeAfterEnd,
} from './errors';

export type WriteCallback = (error?: Error | null) => void;
export type OutgoingHeaders = Record<string, OutgoingValue | number | undefined>;
/** writeHead's header forms: an object, a flat [name, value, ...] list, or [name, value] pairs. */
export type OutgoingHeaderInput = OutgoingHeaders | readonly (string | number)[] | readonly (readonly [string, OutgoingValue | number])[];

/**
 * @internal What the exchange and the server call on a response, reached
 * through functions for the same reason as requestInternals (Express swaps
 * the prototype).
 */
export const responseInternals = {} as {
  drain(res: Http3ServerResponse): void;
  abort(res: Http3ServerResponse, error: Error): void;
  /** A request listener threw: 500 if no header section is on the wire yet, else reset (H3_INTERNAL_ERROR). */
  fail(res: Http3ServerResponse, error: unknown): 'answered' | 'reset' | 'done';
  /** The server's own answer (405, 417, 404): any headers set so far are dropped. */
  respondPlain(res: Http3ServerResponse, status: number, text: string): void;
};

const EMPTY = Buffer.alloc(0);

/** Responses whose fixed header section goes out next tick unless a write or end takes it first. */
let frozenHeads: TickQueue<Http3ServerResponse>;
/** Ended responses: 'finish' and 'close' next tick. */
let finishing: TickQueue<Http3ServerResponse>;

export class Http3ServerResponse extends Stream {
  /** The request this responds to. */
  req: Http3ServerRequest;
  readonly #stream: RequestStream;
  readonly #link: ExchangeLink;
  readonly #isHead: boolean;
  readonly #headers = new OutgoingFields();
  #trailers: string[] | undefined;
  #status = 200;
  #statusMessage: string | undefined;
  #sendDate = true;
  /** removeHeader('content-length') ran: do not fill it in (node:http's _removedContLen). */
  #noAutoLength = false;
  /** writeHead() ran: the header section is fixed (headersSent). */
  #headersFrozen = false;
  /** The header section was handed to the core. */
  #headersOnWire = false;
  /** writeHead() is running for write()/end(): no separate flush needed. */
  #implicit = false;
  #ending = false;
  /** The last command (fin) was handed to the core: 'finish'. */
  #finished = false;
  #closed = false;
  #destroyed = false;
  #error: Error | undefined;
  #needDrain = false;
  /** The content-length the header section declared, and the body bytes sent against it. */
  /** Only when the app declared one: most responses allocate nothing for it. */
  #length: BodyLength | undefined;
  /** write() callbacks waiting for 'drain' (or for the end), in order. */
  #waiting: WriteCallback[] | undefined;

  /** @internal Made by the server for each request stream. */
  constructor(stream: RequestStream, link: ExchangeLink, req: Http3ServerRequest) {
    super();
    this.#stream = stream;
    this.#link = link;
    this.req = req;
    this.#isHead = req.method === 'HEAD';
  }

  static {
    frozenHeads = new TickQueue((res) => res.#flushFrozenHeaders());
    finishing = new TickQueue((res) => res.#afterEnd());
    responseInternals.drain = (res) => res.#onDrain();
    responseInternals.abort = (res, error) => res.#onAbort(error);
    responseInternals.fail = (res, error) => res.#fail(error);
    responseInternals.respondPlain = (res, status, text) => res.#respondPlain(status, text);
  }

  // ---- status -------------------------------------------------------------

  get statusCode(): number {
    return this.#status;
  }
  set statusCode(code: number) {
    this.#status = checkStatus(code);
  }

  /** Kept for code that sets it; HTTP/3 has no reason phrase, so it never goes on the wire. */
  get statusMessage(): string {
    return this.#statusMessage ?? STATUS_CODES[this.#status] ?? '';
  }
  set statusMessage(message: string) {
    this.#statusMessage = message;
  }

  /** Add a `date` field unless one is set (default true, as node:http). */
  get sendDate(): boolean {
    return this.#sendDate;
  }
  set sendDate(value: boolean) {
    this.#sendDate = Boolean(value);
  }

  // ---- state ----------------------------------------------------------------

  /** The header section is fixed (writeHead, write or end ran). */
  get headersSent(): boolean {
    return this.#headersFrozen;
  }
  /** node:http's internal, read by finalhandler and others as "headers sent". */
  get _header(): boolean {
    return this.#headersFrozen;
  }
  get writableEnded(): boolean {
    return this.#ending;
  }
  get finished(): boolean {
    return this.#ending;
  }
  /** The whole response was handed to the core ('finish' follows). There is no delivery acknowledgement. */
  get writableFinished(): boolean {
    return this.#finished;
  }
  get writable(): boolean {
    return !this.#ending && !this.#destroyed;
  }
  get destroyed(): boolean {
    return this.#destroyed;
  }
  get closed(): boolean {
    return this.#closed;
  }
  /** Why the response was cut short (client reset, destroy(err)); stream.finished and pipeline report it. */
  get errored(): Error | null {
    return this.#error ?? null;
  }
  get writableErrored(): Error | null {
    return this.#error ?? null;
  }
  get writableNeedDrain(): boolean {
    return this.#needDrain;
  }
  get writableLength(): number {
    return this.#stream.sendPending;
  }
  get writableHighWaterMark(): number {
    return this.#stream.sendHighWater;
  }
  get writableCorked(): number {
    return 0;
  }
  get writableObjectMode(): boolean {
    return false;
  }

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

  // ---- header fields --------------------------------------------------------

  /** Sets a field, replacing any value; an array makes one field line per element. */
  setHeader(name: string, value: OutgoingValue | number): this {
    if (this.#headersFrozen) throw headersAlreadySent('set');
    this.#setField(name, value, false);
    return this;
  }

  /** Adds value(s) to a field, keeping what is there (several `set-cookie` lines, for example). */
  appendHeader(name: string, value: OutgoingValue | number): this {
    if (this.#headersFrozen) throw headersAlreadySent('set');
    this.#setField(name, value, true);
    return this;
  }

  /** Sets every field of a Headers or Map (Node 18.15's setHeaders). */
  setHeaders(headers: Headers | Map<string, OutgoingValue | number>): this {
    if (this.#headersFrozen) throw headersAlreadySent('set');
    if (typeof (headers as Headers).getSetCookie === 'function') {
      const cookies = (headers as Headers).getSetCookie();
      for (const [k, v] of headers as Headers) if (k !== 'set-cookie') this.#setField(k, v, false);
      if (cookies.length > 0) this.#setField('set-cookie', cookies, false);
    } else {
      for (const [k, v] of headers as Map<string, OutgoingValue | number>) this.#setField(k, v, false);
    }
    return this;
  }

  getHeader(name: string): OutgoingValue | undefined {
    return this.#headers.get(checkName(name).toLowerCase());
  }

  getHeaders(): Record<string, OutgoingValue> {
    const out = Object.create(null) as Record<string, OutgoingValue>;
    this.#headers.forEach((key, value) => (out[key] = value));
    return out;
  }

  getHeaderNames(): string[] {
    const names: string[] = [];
    this.#headers.forEach((key) => names.push(key));
    return names;
  }

  getRawHeaderNames(): string[] {
    const names: string[] = [];
    this.#headers.forEach((_key, _value, name) => names.push(name));
    return names;
  }

  hasHeader(name: string): boolean {
    return this.#headers.has(checkName(name).toLowerCase());
  }

  /** Removes a field; removing `date` or `content-length` also stops them being filled in, as node:http does. */
  removeHeader(name: string): void {
    if (this.#headersFrozen) throw headersAlreadySent('remove');
    const lower = checkName(name).toLowerCase();
    if (lower === 'date') this.#sendDate = false;
    else if (lower === 'content-length') this.#noAutoLength = true;
    this.#headers.delete(lower);
  }

  /** Trailer fields, sent after the body (a trailer section ends the stream). */
  addTrailers(headers: Record<string, OutgoingValue | number> | readonly (readonly [string, OutgoingValue | number])[]): void {
    const pairs = Array.isArray(headers) ? (headers as readonly (readonly [string, OutgoingValue | number])[]) : Object.entries(headers);
    for (const [name, value] of pairs) this.setTrailer(name, value);
  }

  setTrailer(name: string, value: OutgoingValue | number): void {
    const lower = fieldKey(name);
    const v = validateField(lower, value);
    if (v === DROP || this.#ending) return;
    const list = (this.#trailers ??= []);
    if (typeof v === 'string') list.push(lower, wireValue(v));
    else for (const x of v) list.push(lower, wireValue(x));
  }

  #setField(name: string, value: unknown, append: boolean): void {
    const lower = fieldKey(name);
    const v = validateField(lower, value);
    if (v === DROP) return;
    if (append) this.#headers.append(lower, name, v);
    else this.#headers.set(lower, name, v);
  }

  // ---- header section ----------------------------------------------------------

  /**
   * Fixes the status and header section; `headers` (an object, a flat list
   * or [name, value] pairs) are set on top of those already set. The
   * section goes out with the first write()/end(), or on its own at the end
   * of the current tick.
   */
  writeHead(statusCode: number, statusMessage?: string | OutgoingHeaderInput, headers?: OutgoingHeaderInput): this {
    if (this.#destroyed || this.#finished) return this;
    if (this.#headersFrozen) throw headersAlreadySent('write');
    const status = checkStatus(statusCode);
    if (typeof statusMessage === 'string') this.#statusMessage = statusMessage;
    else if (headers === undefined) headers = statusMessage;
    if (headers !== undefined && headers !== null) this.#applyHeaders(headers);
    this.#status = status;
    this.#headersFrozen = true;
    // Explicit writeHead (SSE, long polls): the client should see the
    // header section without waiting for the first body chunk.
    if (!this.#implicit) frozenHeads.add(this);
    return this;
  }

  /** node:http's hook: write()/end() fix the header section through writeHead(statusCode). */
  _implicitHeader(): void {
    this.#implicit = true;
    try {
      this.writeHead(this.statusCode);
    } finally {
      this.#implicit = false;
    }
  }

  /** Sends the header section now (the implicit 200 unless writeHead ran). */
  flushHeaders(): void {
    if (this.#destroyed || this.#finished) return;
    if (!this.#headersFrozen) this._implicitHeader();
    this.#flushFrozenHeaders();
  }

  #flushFrozenHeaders(): void {
    if (this.#headersOnWire || this.#ending || this.#destroyed || !this.#bodyAllowed()) return;
    const fields = this.#fieldLines(-1);
    if (!this.#fits('header', fields)) return;
    this.#declareLength();
    this.#headersOnWire = true;
    this.#stream.sendHeaders(this.#status, fields, false);
  }

  /** The header section is about to go out: hold the body to the content-length it carries, if any. */
  #declareLength(): void {
    const declared = declaredLength(this.#headers.get('content-length'));
    this.#length = declared === UNDECLARED ? undefined : new BodyLength(declared);
  }

  /**
   * The body disagrees with the declared content-length: the message must
   * not go out complete, so the stream is reset (H3_INTERNAL_ERROR) and the
   * error goes to the callback, to 'error' listeners, and to the log when
   * nobody listens.
   */
  #lengthMismatch(bodyBytes: number, callback?: WriteCallback): void {
    const error = contentLengthMismatch(bodyBytes, this.#length!.declared);
    if (callback) process.nextTick(callback, error);
    if (this.listenerCount('error') === 0) {
      this.#link.logger.warn(`${error.code}: ${error.message} (response to ${this.req.method} ${this.req.url}); stream reset`);
    }
    this.destroy(error);
  }

  /**
   * Whether a section fits the client's SETTINGS_MAX_FIELD_SECTION_SIZE; if
   * not, the response is destroyed with ERR_HTTP3_HEADERS_TOO_LARGE (the
   * core would refuse to send it anyway), so the application hears why.
   */
  #fits(what: 'header' | 'trailer', lines: readonly string[]): boolean {
    const limit = this.#stream.connection.peerMaxFieldSectionSize;
    if (limit === Infinity) return true;
    const size = fieldSectionSize(lines, what === 'header');
    if (size <= limit) return true;
    this.destroy(headersTooLarge(what, size, limit));
    return false;
  }

  #applyHeaders(headers: OutgoingHeaderInput): void {
    if (Array.isArray(headers)) {
      // As node:http: fields given here replace earlier ones of the same
      // name but may repeat among themselves.
      const pairs: [string, unknown][] = [];
      if (headers.length > 0 && Array.isArray(headers[0])) {
        for (const p of headers as readonly (readonly [string, unknown])[]) pairs.push([p[0], p[1]]);
      } else {
        if (headers.length % 2 !== 0) throw invalidArgValue('headers', 'must be a flat [name, value, ...] list of even length');
        for (let i = 0; i < headers.length; i += 2) pairs.push([headers[i] as string, headers[i + 1]]);
      }
      for (const [k] of pairs) if (typeof k === 'string') this.#headers.delete(k.toLowerCase());
      for (const [k, v] of pairs) this.#setField(k, v, true);
    } else if (typeof headers === 'object') {
      for (const k of Object.keys(headers)) this.#setField(k, (headers as OutgoingHeaders)[k], false);
    }
  }

  /** The section's field lines: names lowercase, one line per array element; date and content-length added as node:http does. */
  #fieldLines(contentLength: number): string[] {
    const headers = this.#headers;
    const out: string[] = [];
    headers.pushLines(out, wireValue);
    if (this.#sendDate && !headers.has('date')) out.push('date', httpDate());
    // RFC 9110 section 8.6: never a content-length on a 204 (node:http drops it too).
    if (this.#status === 204) return headers.has('content-length') ? withoutField(out, 'content-length') : out;
    if (contentLength >= 0 && !this.#noAutoLength && !headers.has('content-length')) out.push('content-length', String(contentLength));
    return out;
  }

  /** HEAD answers and 204/304 carry no content: data written to them is dropped, as node:http does. */
  #bodyAllowed(): boolean {
    const s = this.#status;
    return !this.#isHead && s !== 204 && s !== 304;
  }

  // ---- informational responses ------------------------------------------------

  /** 100 Continue; false once the final header section is out. */
  writeContinue(callback?: () => void): boolean {
    return this.#informational(100, [], callback);
  }

  /** 102 Processing. */
  writeProcessing(callback?: () => void): boolean {
    return this.#informational(102, [], callback);
  }

  /** 103 Early Hints, e.g. `{ link: ['</app.css>; rel=preload; as=style'] }`; other fields go along. */
  writeEarlyHints(hints: Record<string, OutgoingValue | number>, callback?: () => void): void {
    if (hints === null || typeof hints !== 'object') throw invalidArgType('hints', 'of type object', hints);
    const fields: string[] = [];
    for (const name of Object.keys(hints)) {
      const lower = fieldKey(name);
      const v = validateField(lower, hints[name]);
      // An informational response has no content (RFC 9110 section 15.2).
      if (v === DROP || lower === 'content-length') continue;
      if (typeof v === 'string') fields.push(lower, wireValue(v));
      else for (const x of v) fields.push(lower, wireValue(x));
    }
    this.#informational(103, fields, callback);
  }

  #informational(status: number, fields: string[], callback: (() => void) | undefined): boolean {
    const ok = !this.#headersOnWire && !this.#ending && !this.#destroyed;
    if (ok) this.#stream.sendInformational(status, fields);
    if (callback) process.nextTick(callback);
    return ok;
  }

  // ---- body ---------------------------------------------------------------------

  /**
   * Sends a body chunk (the header section first, if it is not out).
   * Returns false while the core holds more than sendHighWater unsent
   * bytes; 'drain' follows. After end() it emits 'error'
   * (ERR_STREAM_WRITE_AFTER_END) instead of throwing; after the stream was
   * reset the data is dropped and false returned.
   */
  write(chunk: string | Uint8Array, encoding?: BufferEncoding | WriteCallback, callback?: WriteCallback): boolean {
    if (typeof encoding === 'function') {
      callback = encoding;
      encoding = undefined;
    }
    if (this.#ending) {
      this.#reportWriteError(writeAfterEnd(), callback);
      return false;
    }
    if (this.#destroyed) {
      if (callback) process.nextTick(callback, this.#error ?? streamDestroyed('write'));
      return false;
    }
    const data = toBuffer(chunk, encoding);
    if (!this.#headersFrozen) this._implicitHeader();
    if (this.#destroyed) return false; // a writeHead hook destroyed it
    this.#link.touch();
    if (!this.#bodyAllowed()) {
      if (callback) process.nextTick(callback);
      return true;
    }
    if (!this.#headersOnWire) {
      const fields = this.#fieldLines(-1);
      if (!this.#fits('header', fields)) return false;
      this.#declareLength();
      if (this.#length && !this.#length.fits(data.length)) {
        this.#lengthMismatch(data.length, callback);
        return false;
      }
      this.#headersOnWire = true;
      this.#stream.sendHeaders(this.#status, fields, false);
    } else if (this.#length && !this.#length.fits(data.length)) {
      this.#lengthMismatch(this.#length.sent + data.length, callback);
      return false;
    }
    if (this.#length) this.#length.sent += data.length;
    if (data.length > 0) this.#stream.sendData(data, false);
    // "Above sendHighWater" is exactly when the core promises onDrain.
    if (this.#stream.sendPending > this.#stream.sendHighWater) this.#needDrain = true;
    if (callback) {
      // Callbacks run in order: behind any still waiting for 'drain'.
      if (this.#needDrain || this.#waiting) (this.#waiting ??= []).push(callback);
      else process.nextTick(callback);
    }
    return !this.#needDrain;
  }

  /** Finishes the response, with a last chunk if given; 'finish' then 'close' follow. */
  end(chunk?: string | Uint8Array | (() => void), encoding?: BufferEncoding | (() => void), callback?: () => void): this {
    if (typeof chunk === 'function') {
      callback = chunk;
      chunk = undefined;
    } else if (typeof encoding === 'function') {
      callback = encoding;
      encoding = undefined;
    }
    if (this.#ending || this.#destroyed) {
      if (callback) process.nextTick(callback);
      return this;
    }
    const body = chunk === undefined || chunk === null ? EMPTY : toBuffer(chunk, encoding as BufferEncoding | undefined);
    if (!this.#headersFrozen) this._implicitHeader();
    if (this.#destroyed) return this;
    if (callback) this.once('finish', callback);
    this.#end(body);
    return this;
  }

  #end(body: Buffer): void {
    this.#ending = true;
    this.#link.touch();
    const s = this.#stream;
    const status = this.#status;
    const bodyAllowed = this.#bodyAllowed();
    if (this.#trailers && bodyAllowed && !this.#fits('trailer', this.#trailers)) return;
    if (!this.#headersOnWire) {
      const fields = this.#fieldLines(bodyAllowed ? body.length : -1);
      if (!this.#fits('header', fields)) return;
      if (bodyAllowed) {
        this.#declareLength();
        if (this.#length && !this.#length.completesWith(body.length)) return this.#lengthMismatch(body.length);
      }
      this.#headersOnWire = true;
      if (!bodyAllowed) {
        s.respond(status, fields, EMPTY);
      } else if (this.#trailers) {
        s.sendHeaders(status, fields, false);
        if (body.length > 0) s.sendData(body, false);
        s.sendTrailers(this.#trailers);
      } else {
        // The fast path: status, fields, body and end in one command.
        s.respond(status, fields, body);
      }
    } else if (bodyAllowed && this.#length && !this.#length.completesWith(body.length)) {
      return this.#lengthMismatch(this.#length.sent + body.length);
    } else if (bodyAllowed && this.#trailers) {
      if (body.length > 0) s.sendData(body, false);
      s.sendTrailers(this.#trailers);
    } else {
      s.sendData(bodyAllowed ? body : EMPTY, true);
    }
    this.#finished = true;
    finishing.add(this);
  }

  /** After end(): pending write callbacks, 'finish', 'close'. */
  #afterEnd(): void {
    this.#flushWaiting(null);
    this.emit('finish');
    this.#close(false);
  }

  // ---- ending early --------------------------------------------------------------

  /**
   * Abandons the response: resets the stream with H3_INTERNAL_ERROR (or
   * H3_REQUEST_CANCELLED without an error) unless it is already complete.
   * Emits 'close' (after 'error' when given one and someone listens);
   * `errored` holds the error.
   */
  destroy(error?: Error): this {
    if (this.#destroyed || this.#finished) return this;
    this.#destroyed = true;
    this.#error = error;
    this.#stream.reset(error ? H3Code.INTERNAL_ERROR : H3Code.REQUEST_CANCELLED);
    this.#flushWaiting(error ?? streamDestroyed('write'));
    // The request's body will not complete either.
    const req = this.req;
    if (!req.complete && !req.destroyed) req.destroy();
    process.nextTick(() => this.#closeWithError(error));
    return this;
  }

  #onAbort(error: Error): void {
    if (this.#finished || this.#destroyed) return;
    this.#destroyed = true;
    this.#error = error;
    this.#flushWaiting(error);
    process.nextTick(() => this.#closeWithError(error));
  }

  /**
   * 'error' (only to listeners: like node:http, a client going away must
   * not crash a server that does not listen) and then 'close'. pipeline()
   * and stream.finished() listen, and need the 'error': for a stream
   * without _writableState they take a 'close' with `writable` false as
   * success.
   */
  #closeWithError(error: Error | undefined): void {
    if (error && this.listenerCount('error') > 0) this.emit('error', error);
    this.#close(error !== undefined);
  }

  #onDrain(): void {
    this.#link.touch();
    if (!this.#needDrain) return;
    this.#needDrain = false;
    this.#flushWaiting(null);
    this.emit('drain');
  }

  #flushWaiting(error: Error | null): void {
    const waiting = this.#waiting;
    if (!waiting) return;
    this.#waiting = undefined;
    for (const cb of waiting) cb(error);
  }

  #close(hadError: boolean): void {
    if (this.#closed) return;
    this.#closed = true;
    this.emit('close');
    this.#link.closed(hadError);
  }

  /** Write after end: Node's error, to the callback and to 'error' listeners; logged when there are none, never thrown. */
  #reportWriteError(error: NodeStyleError, callback: WriteCallback | undefined): void {
    process.nextTick(() => {
      if (callback) callback(error);
      if (this.listenerCount('error') > 0) this.emit('error', error);
      else this.#link.logger.warn(`${error.code}: ${error.message} (response to ${this.req.method} ${this.req.url})`);
    });
  }

  #fail(error: unknown): 'answered' | 'reset' | 'done' {
    if (this.#finished || this.#destroyed) return 'done';
    if (!this.#headersOnWire) {
      this.#respondPlain(500, 'internal server error\n');
      return 'answered';
    }
    this.destroy(error instanceof Error ? error : new Error(String(error)));
    return 'reset';
  }

  #respondPlain(status: number, text: string): void {
    if (this.#headersOnWire || this.#ending || this.#destroyed) return;
    this.#headers.clear();
    this.#trailers = undefined;
    this.#status = status;
    this.#headers.set('content-type', 'content-type', 'text/plain; charset=utf-8');
    this.#headersFrozen = true;
    this.#end(Buffer.from(text));
  }

  // ---- misc ------------------------------------------------------------------------

  /** The request's idle timeout, shared with req.setTimeout: 'timeout' on both when no bytes move for `ms`. */
  setTimeout(ms: number, callback?: () => void): this {
    if (callback) this.on('timeout', callback);
    this.#link.setTimeout(ms);
    return this;
  }

  /** No-ops: each write is handed to the core at once. */
  cork(): void {}
  uncork(): void {}
}

/** Field lines (name, value, ...) without the lines of one field. */
function withoutField(lines: string[], name: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < lines.length; i += 2) if (lines[i] !== name) out.push(lines[i], lines[i + 1]);
  return out;
}

function checkName(name: unknown): string {
  if (typeof name !== 'string') throw invalidArgType('name', 'of type string', name);
  return name;
}

function checkStatus(code: unknown): number {
  const n = typeof code === 'number' ? code : typeof code === 'string' && code.trim() !== '' ? Number(code) : NaN;
  if (!Number.isInteger(n) || n < 100 || n > 599) throw invalidStatusCode(code);
  if (n < 200) throw informationalStatusNotAllowed(n);
  return n;
}

function toBuffer(chunk: unknown, encoding: BufferEncoding | undefined): Buffer {
  if (typeof chunk === 'string') return Buffer.from(chunk, encoding ?? 'utf8');
  if (Buffer.isBuffer(chunk)) return chunk;
  if (chunk instanceof Uint8Array) return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  throw invalidArgType('chunk', 'of type string or an instance of Buffer or Uint8Array', chunk);
}

// The `date` value: made once and kept until the next second starts, when
// an unref'd timer drops it (as node:http does), so a response reads a
// string instead of the clock.
let dateValue: string | undefined;
function httpDate(): string {
  if (dateValue === undefined) {
    const now = new Date();
    dateValue = now.toUTCString();
    setTimeout(() => (dateValue = undefined), 1000 - now.getMilliseconds()).unref();
  }
  return dateValue;
}
