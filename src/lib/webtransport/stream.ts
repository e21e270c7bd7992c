// One WebTransport stream of an application session, in the W3C API's
// shape: a web ReadableStream for what the peer sends, a WritableStream
// for what the application sends (a bidirectional stream has both).
//
// Backpressure, reading: the native core reads at most the body credit
// ahead of what this side gave back (CONSUMED); credit goes back when the
// application takes bytes out of the ReadableStream's queue (its pull()
// runs whenever the queue is below its high-water mark), so a reader that
// stops reading stops the peer through QUIC flow control. Writing: write()
// resolves while fewer than SEND_HIGH_WATER bytes wait for QUIC; beyond
// that it waits for the core's SENT reports, so writer.ready holds a fast
// writer back.
import type { Duplex } from 'node:stream';
import type { CommandWriter } from '../../native/protocol';
import { SEND_HIGH_WATER } from '../native-stream';
import { WebTransportError } from './error';
import { fromHttp3ErrorCode, toHttp3ErrorCode } from './error-codes';
import { StreamDuplex } from './stream-duplex';

/** Bytes a stream's ReadableStream queues before it stops returning credit. */
export const RECEIVE_HIGH_WATER = 64 * 1024;
/** write() waits above SEND_HIGH_WATER bytes not yet taken by QUIC (the same bound as a response body's), until half of it. */
const SEND_LOW_WATER = SEND_HIGH_WATER / 2;
const EMPTY = new Uint8Array(0);

/** What a stream needs from the server that carries it. */
export interface WtLink {
  readonly commands: CommandWriter;
  /** Commands were written: hand them to the core soon. */
  scheduleFlush(): void;
}

/** The application error code in a cancel() or abort() reason: a WebTransportError's streamErrorCode, else 0. */
function reasonCode(reason: unknown): number {
  const code = (reason as { streamErrorCode?: unknown } | null)?.streamErrorCode;
  return typeof code === 'number' && Number.isInteger(code) && code >= 0 && code <= 0xffffffff ? code : 0;
}

/**
 * The transport side of one stream: what the core reports arrives here
 * (StreamServer routes BODY, SENT, aborts and the stream's end by ID), and
 * the web streams it exposes turn the application's reads and writes into
 * commands.
 */
export class WtStreamChannel {
  readonly readable: ReadableStream<Uint8Array> | undefined;
  readonly writable: WritableStream<Uint8Array> | undefined;
  #readController: ReadableStreamDefaultController<Uint8Array> | undefined;
  #writeController: WritableStreamDefaultController | undefined;
  #readOpen: boolean;
  #writeOpen: boolean;
  /** Bytes enqueued for the reader, and how many of them went back as credit. */
  #enqueued = 0;
  #returned = 0;
  /** Bytes handed to the core for sending, and how many QUIC took. */
  #queued = 0;
  #taken = 0;
  #drained: (() => void) | undefined;
  /** The stream as a Node Duplex, once the application asked for it: data goes there instead of the web streams. */
  #duplex: StreamDuplex | undefined;
  /** Data still goes through the web stream's queue: what came before the Duplex is being moved over. */
  #readViaWeb = false;

  constructor(
    private readonly link: WtLink,
    readonly conn: number,
    readonly id: number,
    sides: { read: boolean; write: boolean },
  ) {
    this.#readOpen = sides.read;
    this.#writeOpen = sides.write;
    this.readable = sides.read
      ? new ReadableStream<Uint8Array>(
          {
            start: (c) => {
              this.#readController = c;
            },
            pull: () => this.returnCredit(),
            cancel: (reason) => this.stopReceiving(reason),
          },
          new ByteLengthQueuingStrategy({ highWaterMark: RECEIVE_HIGH_WATER }),
        )
      : undefined;
    this.writable = sides.write
      ? new WritableStream<Uint8Array>({
          start: (c) => {
            this.#writeController = c;
          },
          write: (chunk) => this.sendChunk(chunk),
          close: () => this.endSending(),
          abort: (reason) => this.resetSending(reason),
        })
      : undefined;
  }

  /** Both sides are done (read to the end or stopped, written to the end or reset). */
  get done(): boolean {
    return !this.#readOpen && !this.#writeOpen;
  }

  /**
   * The stream's two sides as a Node Duplex (bidirectional streams), in
   * place of the web streams, which it locks: a TypeError if the
   * application already holds a reader or writer of them.
   */
  toDuplex(): Duplex {
    if (this.#duplex !== undefined) return this.#duplex;
    // Only bidirectional streams have one (WebTransportBidirectionalStream's), so both sides exist.
    const readable = this.readable!;
    const writable = this.writable!;
    if (readable.locked || writable.locked) throw new TypeError('the stream is already in use through its readable or writable');
    writable.getWriter().closed.catch(() => {});
    const reader = readable.getReader();
    reader.closed.catch(() => {});
    const duplex = new StreamDuplex(this, RECEIVE_HIGH_WATER);
    this.#duplex = duplex;
    // What arrived before the application chose the Duplex waits in the
    // web stream's queue (or it already ended or failed there): it moves
    // over in order, and only then does data go to the Duplex directly.
    if (!this.#readOpen || this.#readController!.desiredSize !== RECEIVE_HIGH_WATER) {
      this.#readViaWeb = true;
      void this.#moveQueued(reader, duplex);
    }
    return duplex;
  }

  /** Reads the web stream's queue into the Duplex until it is empty, its end, or its error. */
  async #moveQueued(reader: ReadableStreamDefaultReader<Uint8Array>, duplex: StreamDuplex): Promise<void> {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (duplex.destroyed) return;
        if (done) {
          duplex.push(null);
          return;
        }
        duplex.push(value);
        if (this.#readOpen && this.#readController?.desiredSize === RECEIVE_HIGH_WATER) {
          this.#readViaWeb = false;
          this.returnCredit();
          return;
        }
      }
    } catch (e) {
      if (!duplex.destroyed) duplex.destroy(e as Error);
    }
  }

  /** @internal Sends a chunk; a promise while more than SEND_HIGH_WATER bytes wait for QUIC. */
  sendChunk(chunk: Uint8Array): Promise<void> | void {
    if (!this.#writeOpen) throw new WebTransportError('the stream can no longer be written');
    if (!(chunk instanceof Uint8Array)) throw new TypeError('a WebTransport stream takes Uint8Array chunks');
    if (chunk.length === 0) return;
    this.link.commands.data(this.conn, this.id, chunk, false);
    this.#queued += chunk.length;
    this.link.scheduleFlush();
    if (this.#queued - this.#taken > SEND_HIGH_WATER) return new Promise<void>((resolve) => (this.#drained = resolve));
  }

  /** @internal The end of what this side sends (FIN). */
  endSending(): void {
    if (!this.#writeOpen) return;
    this.#writeOpen = false;
    this.link.commands.data(this.conn, this.id, EMPTY, true);
    this.link.scheduleFlush();
  }

  /** @internal RESET_STREAM with the reason's application code. */
  resetSending(reason: unknown): void {
    if (!this.#writeOpen) return;
    this.#writeOpen = false;
    this.link.commands.reset(this.conn, this.id, toHttp3ErrorCode(reasonCode(reason)));
    this.link.scheduleFlush();
    this.#releaseWriter();
  }

  /** @internal STOP_SENDING with the reason's application code. */
  stopReceiving(reason: unknown): void {
    if (!this.#readOpen) return;
    this.#readOpen = false;
    this.link.commands.stopSending(this.conn, this.id, toHttp3ErrorCode(reasonCode(reason)));
    this.link.scheduleFlush();
  }

  /** @internal Credit for the bytes the reader has taken out of the queue (the web stream's or the Duplex's). */
  returnCredit(): void {
    if (!this.#readOpen) return;
    let inQueue: number;
    if (this.#duplex !== undefined && !this.#readViaWeb) {
      inQueue = this.#duplex.readableLength;
    } else {
      const c = this.#readController;
      if (!c) return;
      // While what came before the Duplex moves over, what waits in the
      // Duplex counts too: a paused Duplex holds the peer back.
      inQueue = Math.max(0, RECEIVE_HIGH_WATER - (c.desiredSize ?? 0)) + (this.#duplex?.readableLength ?? 0);
    }
    const give = this.#enqueued - inQueue - this.#returned;
    if (give <= 0) return;
    this.#returned += give;
    this.link.commands.consumed(this.conn, this.id, give);
    this.link.scheduleFlush();
  }

  #releaseWriter(): void {
    const resolve = this.#drained;
    this.#drained = undefined;
    resolve?.();
  }

  // Reports from the core.

  /** @internal Bytes from the peer; `fin`: the last of them. */
  deliverData(chunk: Buffer, fin: boolean): void {
    if (!this.#readOpen) return;
    const duplex = this.#duplex;
    if (duplex !== undefined && !this.#readViaWeb) {
      if (chunk.length > 0) {
        this.#enqueued += chunk.length;
        duplex.push(chunk);
      }
      if (fin) {
        this.#readOpen = false;
        duplex.push(null);
      } else {
        this.returnCredit();
      }
      return;
    }
    const c = this.#readController;
    if (!c) return;
    if (chunk.length > 0) {
      this.#enqueued += chunk.length;
      c.enqueue(chunk);
    }
    if (fin) {
      this.#readOpen = false;
      c.close();
    } else {
      this.returnCredit();
    }
  }

  /** @internal QUIC has taken `total` bytes of what this side wrote. */
  deliverSent(total: number): void {
    if (total > this.#taken) this.#taken = total;
    if (this.#drained && this.#queued - this.#taken <= SEND_LOW_WATER) this.#releaseWriter();
  }

  /** @internal The peer reset its sending side (RESET_STREAM). */
  deliverReset(h3Code: number): void {
    if (!this.#readOpen) return;
    this.#readOpen = false;
    const code = fromHttp3ErrorCode(h3Code);
    this.#fail(new WebTransportError(`the peer reset the stream (code ${code ?? h3Code})`, { source: 'stream', streamErrorCode: code }), 'read');
  }

  /** @internal The peer asked this side to stop sending (STOP_SENDING). */
  deliverStopSending(h3Code: number): void {
    if (!this.#writeOpen) return;
    this.#writeOpen = false;
    const code = fromHttp3ErrorCode(h3Code);
    this.#fail(new WebTransportError(`the peer stopped the stream (code ${code ?? h3Code})`, { source: 'stream', streamErrorCode: code }), 'write');
    this.#releaseWriter();
  }

  /** @internal The core forgot the stream, or its session or connection ended: whatever is still open fails. */
  deliverGone(message: string): void {
    const error = new WebTransportError(message, { source: 'session' });
    if (this.#readOpen) {
      this.#readOpen = false;
      this.#fail(error, 'read');
    }
    if (this.#writeOpen) {
      this.#writeOpen = false;
      this.#fail(error, 'write');
      this.#releaseWriter();
    }
  }

  /**
   * A side failed: its web stream errors, or the Duplex is destroyed with
   * the error (a Duplex has one fate for both sides, as Duplex.fromWeb's).
   */
  #fail(error: WebTransportError, side: 'read' | 'write'): void {
    const duplex = this.#duplex;
    if (duplex !== undefined && !(side === 'read' && this.#readViaWeb)) {
      if (!duplex.destroyed) duplex.destroy(error);
      return;
    }
    if (side === 'read') this.#readController?.error(error);
    else this.#writeController?.error(error);
  }
}

/** A bidirectional stream: what the peer sends, and what this side sends. */
export class WebTransportBidirectionalStream {
  readonly readable: ReadableStream<Uint8Array>;
  readonly writable: WritableStream<Uint8Array>;
  readonly #channel: WtStreamChannel;

  /** @internal */
  constructor(channel: WtStreamChannel) {
    this.#channel = channel;
    this.readable = channel.readable!;
    this.writable = channel.writable!;
  }

  /**
   * The stream as a Node Duplex, for code written for Node streams: pipe(),
   * pipeline(), 'data' events, with the same flow control as the web
   * streams (credit goes back to the peer as the Duplex's buffer is read;
   * write() returns false while 64 KiB wait for QUIC). The same object on
   * every call; it takes the web streams' place and locks them (a TypeError
   * if a reader or writer of them is already held). Ending the writable
   * side sends FIN; destroy(error) resets what is still open, with the
   * error's `streamErrorCode`. (Unidirectional streams: `Readable.fromWeb`
   * and `Writable.fromWeb`.)
   */
  toDuplex(): Duplex {
    return this.#channel.toDuplex();
  }
}
