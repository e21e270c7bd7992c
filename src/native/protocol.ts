// The TypeScript half of the binary boundary protocol; native/src/boundary
// is the other half and docs/design.md describes the layout. Decoding calls
// the sink directly, so no intermediate event objects are allocated.

import { CommandKind, EventKind, RequestFlag } from './boundary.generated';

// The codes are generated from the Rust definitions (native/addon/src/boundary/codes.rs).
export { AbortReason, CloseHow, CommandKind, EventKind, LogLevel, RequestFlag, WtStreamEvent } from './boundary.generated';

export interface ConnClosedInfo {
  conn: number;
  how: number;
  isApp: boolean;
  errorCode: number;
  reason: string;
  peer: string;
  cid: string;
}

export interface EventSink {
  /** `lines` is flat: name, value, name, value... in wire order, pseudo-headers first. */
  onRequest(conn: number, stream: number, flags: number, lines: string[], body: Buffer): void;
  onBody(conn: number, stream: number, chunk: Buffer, fin: boolean): void;
  onStreamAborted(conn: number, stream: number, reason: number, code: number): void;
  onConnOpen(conn: number, peer: string, cid: string): void;
  /** The connection follows the client to a new address (`1.2.3.4:5` or `[::1]:5`). */
  onPeerMoved(conn: number, peer: string): void;
  onConnClosed(info: ConnClosedInfo): void;
  onLog(level: number, message: string): void;
  onServerClosed(): void;
  onWtSessionOpen(conn: number, session: number, path: string): void;
  /** `reason` is the client's CLOSE_WEBTRANSPORT_SESSION reason (UTF-8), empty otherwise. */
  onWtSessionClosed(conn: number, session: number, code: number, reason: string): void;
  onWtStream(conn: number, session: number, stream: number, what: number, bidi: boolean): void;
  onWtDatagrams(conn: number, count: number): void;
  /** The request's trailer lines, flat: name, value, ... */
  onTrailers(conn: number, stream: number, lines: string[]): void;
  /** QUIC has taken `total` bytes of the stream's response body so far. */
  onSent(conn: number, stream: number, total: number): void;
  /** The client's SETTINGS_MAX_FIELD_SECTION_SIZE. */
  onPeerFieldLimit(conn: number, limit: number): void;
  /** One datagram of an application session (a view into the batch: copy to keep it). */
  onWtDatagram(conn: number, session: number, payload: Buffer): void;
  /** A handshake waits for the application to choose an identity for `serverName` (SNICallback); answer `request`. */
  onIdentityWanted(conn: number, request: number, serverName: string): void;
  /**
   * A handshake that asked for a client certificate completed: `verifyError`
   * is 0 when the chain verified, an X509_V_ERR_* code otherwise (2: no
   * certificate); `chain` the client's certificates as DER, leaf first
   * (views into the batch: copy to keep them).
   */
  onClientCertificate(conn: number, verifyError: number, chain: Buffer[]): void;
}

// Buffer's methods through constants, called with .call: reached as
// properties of the batch (a Buffer napi made, whose map V8 does not treat
// as stable) or of the command buffer, each load stayed a generic LoadIC
// call in the optimized code (--print-opt-code), where a constant function
// is inlined. latin1Slice and latin1Write (Node's, undocumented) are what
// toString('latin1', start, end) and write(s, offset, 'latin1') call after
// their argument checks; offsets and lengths are checked again in C++.
const { subarray, writeUInt16LE, writeUInt32LE, writeDoubleLE, latin1Slice, latin1Write } = Buffer.prototype as Buffer & {
  latin1Slice(this: Buffer, start: number, end: number): string;
  latin1Write(this: Buffer, s: string, offset: number): number;
};

/** Decodes one event batch; returns its sequence number for the acknowledgement. */
export function decodeBatch(buf: Buffer, sink: EventSink): number {
  // Numbers through a DataView, not Buffer's readUInt32LE and friends:
  // Turbofan compiles a DataView read to a few instructions, while the
  // Buffer methods' loads stayed generic LoadIC calls in the optimized
  // decodeBatch (--print-opt-code: one per u16/u32/f64 read).
  const view = new DataView(buf.buffer, buf.byteOffset, buf.length);
  const seq = view.getFloat64(0, true);
  let off = 8;
  const u16 = () => {
    const v = view.getUint16(off, true);
    off += 2;
    return v;
  };
  const u32 = () => {
    const v = view.getUint32(off, true);
    off += 4;
    return v;
  };
  const f64 = () => {
    const v = view.getFloat64(off, true);
    off += 8;
    return v;
  };
  const str = (len: number) => {
    const s = latin1Slice.call(buf, off, off + len);
    off += len;
    return s;
  };
  // A header section's lines: their lengths are walked first, then the
  // whole run is decoded with one latin1Slice and cut with substring, so a
  // request with n fields costs one crossing into C++ rather than 2n
  // (latin1: one byte is one character, so offsets carry over).
  const fieldLines = (n: number) => {
    const start = off;
    let end = off;
    for (let i = 0; i < n; i++) {
      end += 2 + view.getUint16(end, true);
      end += 4 + view.getUint32(end, true);
    }
    const all = latin1Slice.call(buf, start, end);
    const lines = new Array<string>(n * 2);
    let at = 0;
    for (let i = 0; i < n; i++) {
      const nameLen = view.getUint16(start + at, true);
      at += 2;
      lines[2 * i] = all.substring(at, at + nameLen);
      at += nameLen;
      const valueLen = view.getUint32(start + at, true);
      at += 4;
      lines[2 * i + 1] = all.substring(at, at + valueLen);
      at += valueLen;
    }
    off = end;
    return lines;
  };
  const bytes = (len: number) => {
    const b = subarray.call(buf, off, off + len);
    off += len;
    return b;
  };
  while (off < buf.length) {
    const kind = buf[off++];
    const conn = u32();
    switch (kind) {
      case EventKind.Request: {
        const stream = f64();
        const flags = buf[off++];
        const lines = fieldLines(u16());
        const body = flags & RequestFlag.HasBody ? bytes(u32()) : EMPTY;
        sink.onRequest(conn, stream, flags, lines, body);
        break;
      }
      case EventKind.Body: {
        const stream = f64();
        const fin = buf[off++] === 1;
        sink.onBody(conn, stream, bytes(u32()), fin);
        break;
      }
      case EventKind.StreamAborted: {
        const stream = f64();
        const reason = buf[off++];
        sink.onStreamAborted(conn, stream, reason, f64());
        break;
      }
      case EventKind.ConnOpen: {
        const peer = str(u16());
        sink.onConnOpen(conn, peer, str(u16()));
        break;
      }
      case EventKind.PeerMoved:
        sink.onPeerMoved(conn, str(u16()));
        break;
      case EventKind.ConnClosed: {
        const how = buf[off++];
        const isApp = buf[off++] === 1;
        const errorCode = f64();
        const reasonLen = u16();
        const reason = buf.toString('utf8', off, off + reasonLen);
        off += reasonLen;
        const peer = str(u16());
        const cid = str(u16());
        sink.onConnClosed({ conn, how, isApp, errorCode, reason, peer, cid });
        break;
      }
      case EventKind.Log: {
        const level = buf[off++];
        const messageLen = u16();
        sink.onLog(level, buf.toString('utf8', off, off + messageLen));
        off += messageLen;
        break;
      }
      case EventKind.ServerClosed:
        sink.onServerClosed();
        break;
      case EventKind.WtSessionOpen: {
        const session = f64();
        sink.onWtSessionOpen(conn, session, str(u16()));
        break;
      }
      case EventKind.WtSessionClosed: {
        const session = f64();
        const code = u32();
        const reasonLen = u16();
        sink.onWtSessionClosed(conn, session, code, buf.toString('utf8', off, off + reasonLen));
        off += reasonLen;
        break;
      }
      case EventKind.WtStream: {
        const session = f64();
        const stream = f64();
        const what = buf[off++];
        sink.onWtStream(conn, session, stream, what, buf[off++] === 1);
        break;
      }
      case EventKind.WtDatagrams:
        sink.onWtDatagrams(conn, u32());
        break;
      case EventKind.Trailers: {
        const stream = f64();
        const lines = fieldLines(u16());
        sink.onTrailers(conn, stream, lines);
        break;
      }
      case EventKind.Sent: {
        const stream = f64();
        sink.onSent(conn, stream, f64());
        break;
      }
      case EventKind.PeerFieldLimit:
        sink.onPeerFieldLimit(conn, f64());
        break;
      case EventKind.WtDatagram: {
        const session = f64();
        sink.onWtDatagram(conn, session, bytes(u16()));
        break;
      }
      case EventKind.IdentityWanted: {
        const request = u32();
        sink.onIdentityWanted(conn, request, str(u16()));
        break;
      }
      case EventKind.ClientCertificate: {
        const verifyError = u32();
        const count = buf[off++];
        const chain: Buffer[] = [];
        for (let i = 0; i < count; i++) chain.push(bytes(u32()));
        sink.onClientCertificate(conn, verifyError, chain);
        break;
      }
      default:
        throw new Error(`unknown native event kind ${kind}`);
    }
  }
  return seq;
}

const EMPTY = Buffer.alloc(0);

/** Accumulates commands for the next crossing into native code. */
export class CommandWriter {
  private buf: Buffer = Buffer.allocUnsafe(16 * 1024);
  /**
   * The same bytes for the numbers of the hot commands: Turbofan compiles a
   * DataView write to a few instructions, where Buffer's writeUInt32LE and
   * friends stay calls with their range checks (callgrind of W1 through
   * createSecureServer: about 880 instructions per request in them).
   */
  private view: DataView = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.length);
  private len = 0;

  /** Bytes of commands written since the last take(). */
  get size(): number {
    return this.len;
  }

  private reserve(n: number): void {
    if (this.len + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.len + n));
    this.buf.copy(next, 0, 0, this.len);
    this.setBuffer(next);
  }

  private setBuffer(next: Buffer): void {
    this.buf = next;
    this.view = new DataView(next.buffer, next.byteOffset, next.length);
  }

  /** `fields` is flat: name, value, ... (already validated and lowercased). */
  respond(conn: number, stream: number, status: number, fields: string[], body: Buffer): void {
    let size = 1 + 4 + 8 + 2 + 1 + 4 + body.length;
    for (const f of fields) size += 4 + f.length;
    this.reserve(size);
    const b = this.buf;
    const v = this.view;
    let off = this.len;
    b[off] = CommandKind.Respond;
    v.setUint32(off + 1, conn, true);
    v.setFloat64(off + 5, stream, true);
    putU16(b, off + 13, status);
    b[off + 15] = fields.length / 2;
    off = putFieldLines(b, v, off + 16, fields);
    v.setUint32(off, body.length, true);
    off += 4;
    b.set(body, off);
    this.len = off + body.length;
  }

  /** The start of every stream command: kind, connection, stream. */
  private streamHead(kind: CommandKind, conn: number, stream: number, size: number): number {
    this.reserve(13 + size);
    const off = this.len;
    this.buf[off] = kind;
    this.view.setUint32(off + 1, conn, true);
    this.view.setFloat64(off + 5, stream, true);
    return off + 13;
  }

  /**
   * A header section: 1xx, the final head (`fin` ends the stream with it),
   * or with status 0 the trailers. `fields` is flat: name, value, ...
   */
  headers(conn: number, stream: number, status: number, fin: boolean, fields: readonly string[]): void {
    let size = 2 + 1 + 2;
    for (const f of fields) size += 4 + f.length;
    const off = this.streamHead(CommandKind.Headers, conn, stream, size);
    const v = this.view;
    putU16(this.buf, off, status);
    this.buf[off + 2] = fin ? 1 : 0;
    putU16(this.buf, off + 3, fields.length / 2);
    this.len = putFieldLines(this.buf, v, off + 5, fields);
  }

  /** Body bytes of a started response; `fin` ends the stream. */
  data(conn: number, stream: number, chunk: Uint8Array, fin: boolean): void {
    let off = this.streamHead(CommandKind.Data, conn, stream, 1 + 4 + chunk.length);
    const b = this.buf;
    b[off] = fin ? 1 : 0;
    this.view.setUint32(off + 1, chunk.length, true);
    off += 5;
    b.set(chunk, off);
    this.len = off + chunk.length;
  }

  /** The application consumed `bytes` more of the request body (at most 2^32 - 1 per command). */
  consumed(conn: number, stream: number, bytes: number): void {
    const off = this.streamHead(CommandKind.Consumed, conn, stream, 4);
    this.len = writeUInt32LE.call(this.buf, bytes, off);
  }

  /** Resets both directions of a request stream, or the sending side of a WebTransport stream, with an HTTP/3 error code. */
  reset(conn: number, stream: number, code: number): void {
    const off = this.streamHead(CommandKind.Reset, conn, stream, 8);
    this.len = writeDoubleLE.call(this.buf, code, off);
  }

  /** WebTransport stream: STOP_SENDING with an HTTP/3 error code. */
  stopSending(conn: number, stream: number, code: number): void {
    const off = this.streamHead(CommandKind.StopSending, conn, stream, 8);
    this.len = writeDoubleLE.call(this.buf, code, off);
  }

  /** Opens server stream `stream` (the next of its kind on the connection) for a session. */
  openStream(conn: number, stream: number, session: number): void {
    const off = this.streamHead(CommandKind.OpenStream, conn, stream, 8);
    this.len = writeDoubleLE.call(this.buf, session, off);
  }

  /** An HTTP datagram on a session (at most 65,535 bytes; QUIC limits it further). */
  datagram(conn: number, session: number, payload: Uint8Array): void {
    let off = this.streamHead(CommandKind.Datagram, conn, session, 2 + payload.length);
    off = writeUInt16LE.call(this.buf, payload.length, off);
    this.buf.set(payload, off);
    this.len = off + payload.length;
  }

  /** Closes a session: CLOSE_WEBTRANSPORT_SESSION with `code` and `reason` (UTF-8, at most 1024 bytes). */
  closeSession(conn: number, session: number, code: number, reason: Uint8Array): void {
    let off = this.streamHead(CommandKind.CloseSession, conn, session, 4 + 2 + reason.length);
    off = writeUInt32LE.call(this.buf, code, off);
    off = writeUInt16LE.call(this.buf, reason.length, off);
    this.buf.set(reason, off);
    this.len = off + reason.length;
  }

  /**
   * Hands over the accumulated bytes as a view of the writer's buffer, valid
   * until the next write: `submit` copies it synchronously, so the buffer is
   * reused rather than reallocated (a streamed response would otherwise
   * leave one discarded buffer per flush for the GC). A buffer grown past
   * 1 MiB by a burst is let go.
   */
  take(): Buffer | null {
    if (this.len === 0) return null;
    const out = subarray.call(this.buf, 0, this.len);
    if (this.buf.length > KEEP_AT_MOST) this.setBuffer(Buffer.allocUnsafe(16 * 1024));
    this.len = 0;
    return out;
  }
}

/**
 * Writes flat field lines (name, value, ...) as the core reads them: every
 * line's u16 name length and u32 value length first, then all names and
 * values back to back in line order, latin1 (one byte per character: the
 * fields were validated as such). Returns the end offset.
 *
 * The characters go in with one latin1Write of the joined strings: copied
 * one by one in JavaScript they cost about 40 instructions each
 * (callgrind of W1 through createSecureServer: 4,500 per response of four
 * lines), and a call into C++ per string about 450.
 */
function putFieldLines(b: Buffer, v: DataView, off: number, fields: readonly string[]): number {
  const n = fields.length;
  if (n === 0) return off;
  // Concatenation, not join(): V8 makes each `+` a rope node in a few
  // instructions and flattens the rope once inside latin1Write, where
  // Array.prototype.join built a flat string of its own first.
  let all = '';
  for (let i = 0; i < n; i += 2) {
    const name = fields[i];
    const value = fields[i + 1];
    // The name's length has two bytes; a DataView would wrap a longer one
    // silently (a value's four bytes hold any string V8 makes).
    if (name.length > 0xffff) throw new RangeError(`field name of ${name.length} characters (at most 65535)`);
    putU16(b, off, name.length);
    v.setUint32(off + 2, value.length, true);
    off += 6;
    all = all + name + value;
  }
  return off + latin1Write.call(b, all, off);
}

/**
 * A u16, little-endian, as two byte stores: Turbofan left DataView's
 * setUint16 a call to its builtin in these functions (callgrind: about 60
 * instructions each), where it inlines setUint32 and setFloat64.
 */
function putU16(b: Buffer, off: number, v: number): void {
  b[off] = v;
  b[off + 1] = v >>> 8;
}

/** The largest command buffer kept between flushes. */
const KEEP_AT_MOST = 1024 * 1024;
