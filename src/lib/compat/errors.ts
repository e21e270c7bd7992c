// Errors of the node:http2-compatible API. Where Node has a code for the
// same mistake (an invalid header name, a write after end...), the error
// carries Node's code, so code written for node:http/node:http2 that checks
// `err.code` keeps working; HTTP/3-only conditions get ERR_HTTP3_* codes.
import type { StreamAbort } from '../request-stream';
import { h3CodeName } from '../request-stream';

export type NodeStyleError<E extends Error = Error> = E & { code: string };

function withCode<E extends Error>(error: E, code: string): NodeStyleError<E> {
  return Object.assign(error, { code });
}

export function invalidHeaderName(what: string, name: unknown): NodeStyleError<TypeError> {
  return withCode(new TypeError(`${what} must be a valid HTTP token ["${String(name)}"]`), 'ERR_INVALID_HTTP_TOKEN');
}

export function invalidHeaderValue(name: string, value: unknown): NodeStyleError<TypeError> {
  return withCode(new TypeError(`Invalid value "${String(value)}" for header "${name}"`), 'ERR_HTTP_INVALID_HEADER_VALUE');
}

export function invalidHeaderChar(name: string): NodeStyleError<TypeError> {
  return withCode(new TypeError(`Invalid character in header content ["${name}"]`), 'ERR_INVALID_CHAR');
}

/** Node's http2 code for the same rule (RFC 9114 section 4.2 forbids these as RFC 9113 does). */
export function connectionSpecificHeader(name: string): NodeStyleError<TypeError> {
  return withCode(
    new TypeError(`HTTP/1 connection-specific header "${name}" is not allowed in HTTP/3 (RFC 9114 section 4.2)`),
    'ERR_HTTP2_INVALID_CONNECTION_HEADERS',
  );
}

export function pseudoHeaderNotAllowed(name: string): NodeStyleError<TypeError> {
  return withCode(new TypeError(`Cannot set HTTP/3 pseudo-header "${name}"`), 'ERR_HTTP2_PSEUDOHEADER_NOT_ALLOWED');
}

export function headersAlreadySent(action: 'set' | 'remove' | 'write'): NodeStyleError<Error> {
  return withCode(new Error(`Cannot ${action} headers after they are sent to the client`), 'ERR_HTTP_HEADERS_SENT');
}

export function invalidStatusCode(code: unknown): NodeStyleError<RangeError> {
  return withCode(new RangeError(`Invalid status code: ${String(code)}`), 'ERR_HTTP_INVALID_STATUS_CODE');
}

export function informationalStatusNotAllowed(code: number): NodeStyleError<RangeError> {
  return withCode(
    new RangeError(`Informational status code ${code} cannot be a final status; use writeContinue() or writeEarlyHints()`),
    'ERR_HTTP2_INFO_STATUS_NOT_ALLOWED',
  );
}

export function invalidArgType(name: string, expected: string, actual: unknown): NodeStyleError<TypeError> {
  const got = actual === null ? 'null' : typeof actual;
  return withCode(new TypeError(`The "${name}" argument must be ${expected}. Received ${got}`), 'ERR_INVALID_ARG_TYPE');
}

export function invalidArgValue(name: string, reason: string): NodeStyleError<TypeError> {
  return withCode(new TypeError(`The argument '${name}' ${reason}`), 'ERR_INVALID_ARG_VALUE');
}

export function writeAfterEnd(): NodeStyleError<Error> {
  return withCode(new Error('write after end'), 'ERR_STREAM_WRITE_AFTER_END');
}

/**
 * node:http's error (and message) for a body that disagrees with the
 * content-length the response declared: RFC 9114 section 4.1.2 makes such a
 * message malformed, so it never goes out as a complete one.
 */
export function contentLengthMismatch(bodyBytes: number, declared: number): NodeStyleError<Error> {
  return withCode(
    new Error(`Response body's content-length of ${bodyBytes} byte(s) does not match the content-length of ${declared} byte(s) set in header`),
    'ERR_HTTP_CONTENT_LENGTH_MISMATCH',
  );
}

export function streamDestroyed(method: string): NodeStyleError<Error> {
  return withCode(new Error(`Cannot call ${method} after a stream was destroyed`), 'ERR_STREAM_DESTROYED');
}

/** A Node socket method HTTP/3 cannot offer: the stream is not a byte pipe. */
export function noSocketManipulation(method: string): NodeStyleError<Error> {
  return withCode(
    new Error(`HTTP/3 sockets should not be directly manipulated (e.g. read and written): socket.${method}()`),
    'ERR_HTTP3_NO_SOCKET_MANIPULATION',
  );
}

/** Why a request's streams were destroyed early; names the HTTP/3 code. */
export interface StreamResetError extends Error {
  code: 'ERR_HTTP3_STREAM_RESET' | 'ERR_HTTP3_HEADERS_TOO_LARGE';
  /** The HTTP/3 error code (RFC 9114 section 8.1). */
  h3Code: number;
  reason: StreamAbort['reason'];
}

export function streamResetError(abort: StreamAbort): StreamResetError {
  const named = `${h3CodeName(abort.code)} (0x${abort.code.toString(16)})`;
  let message: string;
  switch (abort.reason) {
    case 'reset':
      message = `stream reset by the client: ${named}`;
      break;
    case 'stop-sending':
      message = `the client stopped reading the response (STOP_SENDING): ${named}`;
      break;
    case 'protocol':
      message = `the request broke HTTP/3's rules; stream reset: ${named}`;
      break;
    case 'connection':
      message = `the connection closed with the request open: ${named}`;
      break;
    case 'headers-too-large':
      message =
        `the response's header section is larger than the client's SETTINGS_MAX_FIELD_SECTION_SIZE; ` +
        `stream reset: ${named}`;
      break;
    default:
      message = `stream ended early (${String(abort.reason)}): ${named}`;
  }
  const code = abort.reason === 'headers-too-large' ? 'ERR_HTTP3_HEADERS_TOO_LARGE' : 'ERR_HTTP3_STREAM_RESET';
  return Object.assign(new Error(message), { code, h3Code: abort.code, reason: abort.reason }) as StreamResetError;
}

/**
 * A header or trailer section the client said it will not accept (its
 * SETTINGS_MAX_FIELD_SECTION_SIZE, sized as RFC 9114 section 4.2.2 does).
 */
export function headersTooLarge(what: 'header' | 'trailer', size: number, limit: number): NodeStyleError<Error> {
  return withCode(
    new Error(`the response's ${what} section is ${size} bytes, over the client's SETTINGS_MAX_FIELD_SECTION_SIZE of ${limit}; stream reset`),
    'ERR_HTTP3_HEADERS_TOO_LARGE',
  );
}

/** A field section's size as RFC 9114 section 4.2.2 counts it: name + value + 32 per line. */
export function fieldSectionSize(lines: readonly string[], withStatus: boolean): number {
  let size = withStatus ? ':status'.length + 3 + 32 : 0;
  for (let i = 0; i < lines.length; i += 2) size += lines[i].length + lines[i + 1].length + 32;
  return size;
}
