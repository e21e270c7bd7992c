// The TCP side's responses held to their declared content-length, as the
// HTTP/3 ones are (declared-length.ts): node:http2 and node:http (without
// strictContentLength) send a body that disagrees with its content-length
// as it is, a message a proxy or cache in front would take as complete.
// Here a chunk that would pass the declared length is not written, and an
// end() short of it does not end the message: the HTTP/2 stream is reset
// (INTERNAL_ERROR), the HTTP/1.1 connection closed, and the response emits
// ERR_HTTP_CONTENT_LENGTH_MISMATCH (or the server logs one line). No throw:
// a write from a piped stream would be an uncaught exception.
//
// The wrappers are own properties of the response, so they outlive
// Express's prototype swap; a later wrapper (compression) wraps them.
import http from 'node:http';
import http2 from 'node:http2';
import type { Logger } from '../log';
import { BodyLength, declaredLength, UNDECLARED } from './declared-length';
import { contentLengthMismatch } from './errors';

type TcpResponse = http.ServerResponse | http2.Http2ServerResponse;
type Callback = (error?: Error | null) => void;

function byteLength(chunk: unknown, encoding: unknown): number {
  if (typeof chunk === 'string') return Buffer.byteLength(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
  if (chunk instanceof Uint8Array) return chunk.byteLength;
  return 0;
}

export function holdToDeclaredLength(req: { method?: string }, res: TcpResponse, logger: Logger): void {
  const write = res.write as (...args: unknown[]) => boolean;
  const end = res.end as (...args: unknown[]) => TcpResponse;
  let length: BodyLength | undefined;
  let failed = false;
  /** end() was checked: node:http2's end(chunk) writes the chunk through write(), which must not count it again. */
  let ended = false;

  const declare = (): BodyLength => {
    const s = res.statusCode;
    // No content on these: node:http and node:http2 drop what is written.
    if (req.method === 'HEAD' || s === 204 || s === 304) return new BodyLength(UNDECLARED);
    const v = res.getHeader('content-length');
    return new BodyLength(declaredLength(typeof v === 'number' ? String(v) : v));
  };

  const mismatch = (bodyBytes: number, declared: number, callback?: Callback): void => {
    failed = true;
    const error = contentLengthMismatch(bodyBytes, declared);
    if (callback) process.nextTick(callback, error);
    if (res.listenerCount('error') > 0) res.emit('error', error);
    else logger.warn(`${error.code}: ${error.message} (response to ${req.method} ${(res as { req?: { url?: string } }).req?.url ?? ''}); stream reset`);
    // node:http2's compat takes a plain stream close for a finished
    // response ('finish'); destroying it resets the stream (INTERNAL_ERROR)
    // without one. node:http closes the connection.
    if (res instanceof http2.Http2ServerResponse) res.stream.destroy(error);
    else res.destroy();
  };

  Object.defineProperty(res, 'write', {
    configurable: true,
    writable: true,
    value: function (this: TcpResponse, chunk: unknown, encoding?: unknown, callback?: unknown): boolean {
      if (failed) return false;
      if (ended) return write.apply(this, [chunk, encoding, callback]);
      length ??= declare();
      const n = byteLength(chunk, encoding);
      if (!length.fits(n)) {
        mismatch(length.sent + n, length.declared, (typeof encoding === 'function' ? encoding : callback) as Callback | undefined);
        return false;
      }
      length.sent += n;
      return write.apply(this, [chunk, encoding, callback]);
    },
  });
  Object.defineProperty(res, 'end', {
    configurable: true,
    writable: true,
    value: function (this: TcpResponse, chunk?: unknown, encoding?: unknown, callback?: unknown): TcpResponse {
      if (failed) return this;
      if (typeof chunk === 'function' || res.writableEnded) return end.apply(this, [chunk, encoding, callback]);
      length ??= declare();
      const n = byteLength(chunk, encoding);
      if (!length.completesWith(n)) {
        mismatch(length.sent + n, length.declared);
        return this;
      }
      length.sent += n;
      ended = true;
      return end.apply(this, [chunk, encoding, callback]);
    },
  });
}
