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
import { Duplex } from 'node:stream';
import type { CommandWriter } from '../../native/protocol';
import { SEND_HIGH_WATER } from '../native-stream';
import { WebTransportError } from './error';
import { fromHttp3ErrorCode, toHttp3ErrorCode } from './error-codes';

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
            pull: () => this.#returnCredit(),
            cancel: (reason) => this.#stopSending(reason),
          },
          new ByteLengthQueuingStrategy({ highWaterMark: RECEIVE_HIGH_WATER }),
        )
      : undefined;
    this.writable = sides.write
      ? new WritableStream<Uint8Array>({
          start: (c) => {
            this.#writeController = c;
          },
          write: (chunk) => this.#write(chunk),
          close: () => this.#finish(),
          abort: (reason) => this.#reset(reason),
        })
      : undefined;
  }

  /** Both sides are done (read to the end or stopped, written to the end or reset). */
  get done(): boolean {
    return !this.#readOpen && !this.#writeOpen;
  }

  #write(chunk: Uint8Array): Promise<void> | void {
    if (!this.#writeOpen) throw new WebTransportError('the stream can no longer be written');
    if (!(chunk instanceof Uint8Array)) throw new TypeError('a WebTransport stream takes Uint8Array chunks');
    if (chunk.length === 0) return;
    this.link.commands.data(this.conn, this.id, chunk, false);
    this.#queued += chunk.length;
    this.link.scheduleFlush();
    if (this.#queued - this.#taken > SEND_HIGH_WATER) return new Promise<void>((resolve) => (this.#drained = resolve));
  }

  #finish(): void {
    if (!this.#writeOpen) return;
    this.#writeOpen = false;
    this.link.commands.data(this.conn, this.id, EMPTY, true);
    this.link.scheduleFlush();
  }

  #reset(reason: unknown): void {
    if (!this.#writeOpen) return;
    this.#writeOpen = false;
    this.link.commands.reset(this.conn, this.id, toHttp3ErrorCode(reasonCode(reason)));
    this.link.scheduleFlush();
    this.#releaseWriter();
  }

  #stopSending(reason: unknown): void {
    if (!this.#readOpen) return;
    this.#readOpen = false;
    this.link.commands.stopSending(this.conn, this.id, toHttp3ErrorCode(reasonCode(reason)));
    this.link.scheduleFlush();
  }

  /** Credit for the bytes the reader has taken out of the queue. */
  #returnCredit(): void {
    const c = this.#readController;
    if (!c || !this.#readOpen) return;
    const inQueue = Math.max(0, RECEIVE_HIGH_WATER - (c.desiredSize ?? 0));
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
    const c = this.#readController;
    if (!c || !this.#readOpen) return;
    if (chunk.length > 0) {
      this.#enqueued += chunk.length;
      c.enqueue(chunk);
    }
    if (fin) {
      this.#readOpen = false;
      c.close();
    } else {
      this.#returnCredit();
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
    this.#readController?.error(new WebTransportError(`the peer reset the stream (code ${code ?? h3Code})`, { source: 'stream', streamErrorCode: code }));
  }

  /** @internal The peer asked this side to stop sending (STOP_SENDING). */
  deliverStopSending(h3Code: number): void {
    if (!this.#writeOpen) return;
    this.#writeOpen = false;
    const code = fromHttp3ErrorCode(h3Code);
    this.#writeController?.error(new WebTransportError(`the peer stopped the stream (code ${code ?? h3Code})`, { source: 'stream', streamErrorCode: code }));
    this.#releaseWriter();
  }

  /** @internal The core forgot the stream, or its session or connection ended: whatever is still open fails. */
  deliverGone(message: string): void {
    const error = new WebTransportError(message, { source: 'session' });
    if (this.#readOpen) {
      this.#readOpen = false;
      this.#readController?.error(error);
    }
    if (this.#writeOpen) {
      this.#writeOpen = false;
      this.#writeController?.error(error);
      this.#releaseWriter();
    }
  }
}

/** A bidirectional stream: what the peer sends, and what this side sends. */
export class WebTransportBidirectionalStream {
  readonly readable: ReadableStream<Uint8Array>;
  readonly writable: WritableStream<Uint8Array>;

  /** @internal */
  constructor(channel: WtStreamChannel) {
    this.readable = channel.readable!;
    this.writable = channel.writable!;
  }

  /**
   * The stream as a Node Duplex (node:stream's `Duplex.fromWeb`), for code
   * written for Node streams: pipe(), pipeline(), 'data' events. Use one
   * shape or the other: the web streams are locked to the Duplex.
   * (Unidirectional streams: `Readable.fromWeb` and `Writable.fromWeb`.)
   */
  toDuplex(): Duplex {
    return Duplex.fromWeb({ readable: this.readable, writable: this.writable });
  }
}
