// The general API underneath every server shape of the library: one HTTP/3
// request stream, both directions streamed. The node:http2-compatible
// server (compat/), the fetch handler (serve) and the spec's demo exchange
// (H3Request/H3Response) are all built on it. NativeLink implements it on
// the boundary protocol (docs/design.md, "Streams both ways").

/** The QUIC connection a stream belongs to, as Node code reads a socket. */
export interface ConnectionHandle {
  /** Server-local connection number. */
  readonly id: number;
  /** The client's address: it follows the client when it moves (NAT rebinding, migration). */
  readonly remoteAddress: string;
  readonly remotePort: number;
  readonly remoteFamily: 'IPv4' | 'IPv6';
  readonly localAddress: string;
  readonly localPort: number;
  /** The server's connection ID, hex. */
  readonly cid: string;
  /** False once the connection has closed. */
  readonly open: boolean;
  /**
   * The client's SETTINGS_MAX_FIELD_SECTION_SIZE (RFC 9114 section 4.2.2),
   * Infinity until its SETTINGS say otherwise. A header section is sized as
   * the sum of name + value + 32 bytes per line, `:status` included; a larger
   * one is refused by the core (the stream is reset, and a log line says why),
   * so check against this first and report the error to the application.
   */
  readonly peerMaxFieldSectionSize: number;
  /**
   * When the server asked for a client certificate: the verification error
   * (0: verified; an X509_V_ERR_* code otherwise, 2 when the client sent
   * none) and the client's chain, DER, leaf first.
   */
  readonly clientCertificate?: { verifyError: number; chain: Buffer[] };
}

/** Why a stream ended early. */
export type StreamAbortReason =
  /** The client sent RESET_STREAM on the request. */
  | 'reset'
  /** The client sent STOP_SENDING: it will not read the response. */
  | 'stop-sending'
  /** The request broke HTTP/3's rules; the core reset the stream. */
  | 'protocol'
  /** The connection closed with the stream still open. */
  | 'connection'
  /** A field section was larger than the client's SETTINGS_MAX_FIELD_SECTION_SIZE. */
  | 'headers-too-large';

export interface StreamAbort {
  reason: StreamAbortReason;
  /** The HTTP/3 error code (RFC 9114 section 8.1), e.g. 0x10c H3_REQUEST_CANCELLED. */
  code: number;
}

/**
 * One request stream. Incoming callbacks are set by the layer above;
 * outgoing methods hand commands to the native core (they never throw for
 * a stream that has gone away: they do nothing).
 *
 * Field lines are flat arrays: name, value, name, value... Names are
 * lowercase on the wire (HTTP/3 requires it); values are latin1 strings,
 * passed unchanged.
 */
export interface RequestStream {
  readonly connection: ConnectionHandle;
  /** The QUIC stream ID. */
  readonly id: number;
  /** The request's field lines in wire order, pseudo-headers first. */
  readonly lines: readonly string[];
  /** The request ended with its header section: onData/onEnd never fire. */
  readonly complete: boolean;
  /**
   * The body that came with the request, else empty: in buffered mode the
   * whole body; in streamed mode the whole body when it arrived together
   * with the header section (`complete` is then true). It needs no consume().
   */
  readonly bufferedBody: Buffer;
  /**
   * The header section arrived as TLS early data (0-RTT): the request may
   * be a replay. Unsafe methods in early data are answered 425 by the core
   * unless `earlyData: 'all'`.
   */
  readonly earlyData: boolean;

  /** Body bytes, in order. Each must be given back with consume() once taken. */
  onData: ((chunk: Buffer) => void) | undefined;
  /** The request's trailer section (before onEnd). */
  onTrailers: ((lines: string[]) => void) | undefined;
  /** The body is complete. */
  onEnd: (() => void) | undefined;
  /** The stream ended early; nothing else fires after it. */
  onAbort: ((abort: StreamAbort) => void) | undefined;
  /** sendPending fell to sendLowWater or below after being above sendHighWater. */
  onDrain: (() => void) | undefined;

  /**
   * Returns body credit: the consumer has taken `bytes` more of what onData
   * delivered. The core reads at most the body credit (the `bodyCredit`
   * option) ahead of what was consumed, so a slow consumer slows the client
   * through QUIC flow control.
   */
  consume(bytes: number): void;

  /** A 1xx response (103 Early Hints, 100 Continue); only before sendHeaders. */
  sendInformational(status: number, fields: readonly string[]): void;
  /** The final response's header section; `fin` ends the stream with it. */
  sendHeaders(status: number, fields: readonly string[], fin: boolean): void;
  /** Body bytes after sendHeaders; `fin` ends the stream. */
  sendData(chunk: Buffer, fin: boolean): void;
  /** The trailer section; ends the stream. */
  sendTrailers(fields: readonly string[]): void;
  /** Status, fields, whole body and end in one command (the fast path). */
  respond(status: number, fields: readonly string[], body: Buffer): void;
  /** Resets both directions with an HTTP/3 error code. */
  reset(code: number): void;

  /** True once the stream sends nothing more: the response ended, it was reset, or it was aborted. */
  readonly isClosed: boolean;
  /** Body bytes given to sendData that QUIC has not taken yet. */
  readonly sendPending: number;
  /** Above this sendPending, writers should wait for onDrain. */
  readonly sendHighWater: number;
}

/** HTTP/3 error codes the library uses by name (RFC 9114 section 8.1). */
export const H3Code = {
  NO_ERROR: 0x100,
  INTERNAL_ERROR: 0x102,
  REQUEST_REJECTED: 0x10b,
  REQUEST_CANCELLED: 0x10c,
  REQUEST_INCOMPLETE: 0x10d,
  MESSAGE_ERROR: 0x10e,
} as const;

/** The RFC 9114 name of an HTTP/3 error code, for error messages. */
export function h3CodeName(code: number): string {
  const names: Record<number, string> = {
    0x100: 'H3_NO_ERROR',
    0x101: 'H3_GENERAL_PROTOCOL_ERROR',
    0x102: 'H3_INTERNAL_ERROR',
    0x103: 'H3_STREAM_CREATION_ERROR',
    0x104: 'H3_CLOSED_CRITICAL_STREAM',
    0x105: 'H3_FRAME_UNEXPECTED',
    0x106: 'H3_FRAME_ERROR',
    0x107: 'H3_EXCESSIVE_LOAD',
    0x108: 'H3_ID_ERROR',
    0x109: 'H3_SETTINGS_ERROR',
    0x10a: 'H3_MISSING_SETTINGS',
    0x10b: 'H3_REQUEST_REJECTED',
    0x10c: 'H3_REQUEST_CANCELLED',
    0x10d: 'H3_REQUEST_INCOMPLETE',
    0x10e: 'H3_MESSAGE_ERROR',
    0x10f: 'H3_CONNECT_ERROR',
    0x110: 'H3_VERSION_FALLBACK',
  };
  return names[code] ?? `0x${code.toString(16)}`;
}

/** The value of a field's first line, without building the headers object. */
export function firstLineValue(lines: readonly string[], name: string): string | undefined {
  for (let i = 0; i + 1 < lines.length; i += 2) if (lines[i] === name) return lines[i + 1];
  return undefined;
}
