// A WebTransport session as the server's application holds it, in the W3C
// API's shape (https://www.w3.org/TR/webtransport/#web-transport): ready,
// closed, the peer's incoming streams as ReadableStreams of streams,
// createBidirectionalStream / createUnidirectionalStream, datagrams as a
// readable/writable pair, and close().
//
// Limits: the streams the peer opens are capped by the server's
// `maxStreams` and per session by `maxStreamsPerSession` (the core refuses
// more); streams this side opens are capped per session by the same
// `maxStreamsPerSession` (creating one more rejects); incoming datagrams
// queue up to DATAGRAM_QUEUE and are dropped (and counted) beyond.
import type { Duplex } from 'node:stream';
import type { ConnectionHandle } from '../request-stream';
import { DatagramDuplex } from './datagram-duplex';
import { WebTransportError } from './error';
import { WebTransportBidirectionalStream, WtLink, WtStreamChannel } from './stream';

/** Datagrams received and not yet read that a session keeps; more are dropped. */
export const DATAGRAM_QUEUE = 256;
/**
 * The largest datagram payload a session sends: what fits a QUIC packet on
 * the smallest path QUIC allows (1,200-byte UDP payload, less a short
 * header with a 20-byte connection ID, the AEAD tag, the DATAGRAM frame's
 * type and length, and the Quarter Stream ID). Larger ones are dropped.
 */
export const MAX_DATAGRAM_SIZE = 1200 - (1 + 20 + 4 + 16) - (1 + 2) - 8;

export interface WebTransportCloseInfo {
  closeCode: number;
  reason: string;
}

/** What a session needs from the server that carries it. */
export interface SessionLink extends WtLink {
  /** Streams this side may have open on one session. */
  readonly maxStreamsPerSession: number;
  /** The next server-initiated stream ID of a kind on the connection. */
  nextStreamId(conn: number, bidi: boolean): number;
  /** Registers a stream so that the core's reports about it reach it. */
  track(conn: number, channel: WtStreamChannel, session: WebTransportSession): void;
  /** Datagrams dropped because the application did not read them (counted). */
  datagramDropped(): void;
}

export interface WebTransportDatagramDuplexStream {
  readonly readable: ReadableStream<Uint8Array>;
  readonly writable: WritableStream<Uint8Array>;
  readonly maxDatagramSize: number;
}

export class WebTransportSession {
  readonly ready: Promise<void>;
  readonly closed: Promise<WebTransportCloseInfo>;
  /**
   * Resolves when the server starts a graceful shutdown: the client was sent
   * DRAIN_WEBTRANSPORT_SESSION (and GOAWAY), and the server waits up to 3 s
   * for the session to close before it closes the connection.
   */
  readonly draining: Promise<void>;
  #resolveDraining!: () => void;
  readonly incomingBidirectionalStreams: ReadableStream<WebTransportBidirectionalStream>;
  readonly incomingUnidirectionalStreams: ReadableStream<ReadableStream<Uint8Array>>;
  readonly datagrams: WebTransportDatagramDuplexStream;
  /** The CONNECT request's path and its connection's peer. */
  readonly path: string;
  readonly connection: ConnectionHandle;
  #resolveClosed!: (info: WebTransportCloseInfo) => void;
  #rejectClosed!: (error: WebTransportError) => void;
  #bidiController!: ReadableStreamDefaultController<WebTransportBidirectionalStream>;
  #uniController!: ReadableStreamDefaultController<ReadableStream<Uint8Array>>;
  #datagramController!: ReadableStreamDefaultController<Uint8Array>;
  /** The datagrams as a Node Duplex, once the application asked for it: they go there instead. */
  #datagramDuplex: DatagramDuplex | undefined;
  /** Datagrams still go through the web stream: those from before the Duplex are being moved over. */
  #datagramsViaWeb = false;
  readonly #channels = new Set<WtStreamChannel>();
  #localStreams = 0;
  #open = true;
  #closing = false;

  /** @internal Made by the server when the application accepts a session request. */
  constructor(
    private readonly link: SessionLink,
    readonly id: number,
    connection: ConnectionHandle,
    path: string,
  ) {
    this.connection = connection;
    this.path = path;
    // The 2xx goes out with the same flush as anything the application
    // does next, so the session is ready as soon as it is accepted.
    this.ready = Promise.resolve();
    this.closed = new Promise((resolve, reject) => {
      this.#resolveClosed = resolve;
      this.#rejectClosed = reject;
    });
    this.draining = new Promise((resolve) => (this.#resolveDraining = resolve));
    // A connection lost rejects `closed` (as in the W3C API); an
    // application that never looks at it must not crash on that.
    this.closed.catch(() => {});
    this.incomingBidirectionalStreams = new ReadableStream({ start: (c) => void (this.#bidiController = c) });
    this.incomingUnidirectionalStreams = new ReadableStream({ start: (c) => void (this.#uniController = c) });
    const readable = new ReadableStream<Uint8Array>(
      { start: (c) => void (this.#datagramController = c) },
      new CountQueuingStrategy({ highWaterMark: DATAGRAM_QUEUE }),
    );
    const writable = new WritableStream<Uint8Array>({ write: (d) => this.#sendDatagram(d) });
    this.datagrams = { readable, writable, maxDatagramSize: MAX_DATAGRAM_SIZE };
  }

  get conn(): number {
    return this.connection.id;
  }

  /** Opens a bidirectional stream to the peer. */
  createBidirectionalStream(): Promise<WebTransportBidirectionalStream> {
    return this.#openStream(true).then((c) => new WebTransportBidirectionalStream(c));
  }

  /** Opens a unidirectional stream to the peer: a WritableStream. */
  createUnidirectionalStream(): Promise<WritableStream<Uint8Array>> {
    return this.#openStream(false).then((c) => c.writable!);
  }

  /**
   * Ends the session: CLOSE_WEBTRANSPORT_SESSION with the code (32 bits)
   * and reason (at most 1,024 bytes of UTF-8; longer is cut), then the
   * CONNECT stream's end. Its streams fail; `closed` resolves.
   */
  close(info: Partial<WebTransportCloseInfo> = {}): void {
    if (!this.#open || this.#closing) return;
    const code = info.closeCode ?? 0;
    if (!Number.isInteger(code) || code < 0 || code > 0xffffffff) throw new RangeError(`closeCode must be a 32-bit unsigned integer, got ${code}`);
    this.#closing = true;
    const reason = Buffer.from(info.reason ?? '', 'utf8').subarray(0, 1024);
    this.link.commands.closeSession(this.conn, this.id, code, reason);
    this.link.scheduleFlush();
  }

  /**
   * The session's datagrams as a Node object-mode Duplex: 'data' gives each
   * datagram the peer sends (a Buffer), write() sends one. The same object
   * on every call. It takes the place of `datagrams.readable` and
   * `datagrams.writable`, which it locks; a TypeError if the application
   * already holds a reader or writer of them. Up to 256 datagrams wait
   * unread (more are dropped and counted, as with the web streams). When the
   * session closes the readable side ends; when its connection is lost the
   * Duplex is destroyed with a WebTransportError (listen for 'error', as
   * with any Node stream).
   */
  datagramDuplex(): Duplex {
    if (this.#datagramDuplex !== undefined) return this.#datagramDuplex;
    const { readable, writable } = this.datagrams;
    if (readable.locked || writable.locked) {
      throw new TypeError('the session\'s datagrams are already in use through datagrams.readable or datagrams.writable');
    }
    writable.getWriter().closed.catch(() => {});
    const reader = readable.getReader();
    reader.closed.catch(() => {});
    const duplex = new DatagramDuplex((d) => this.#sendDatagram(d), DATAGRAM_QUEUE);
    this.#datagramDuplex = duplex;
    if (!this.#open) duplex.push(null);
    // Datagrams that came before the application chose the Duplex move over
    // first, in order; until then new ones queue behind them.
    else if (this.#datagramController.desiredSize !== DATAGRAM_QUEUE) {
      this.#datagramsViaWeb = true;
      void this.#moveQueuedDatagrams(reader, duplex);
    }
    return duplex;
  }

  async #moveQueuedDatagrams(reader: ReadableStreamDefaultReader<Uint8Array>, duplex: DatagramDuplex): Promise<void> {
    try {
      while (this.#datagramsViaWeb) {
        const { value, done } = await reader.read();
        if (duplex.destroyed) return;
        if (done) {
          duplex.push(null);
          return;
        }
        if (duplex.readableLength >= DATAGRAM_QUEUE) this.link.datagramDropped();
        else duplex.push(Buffer.from(value.buffer, value.byteOffset, value.byteLength));
        if (this.#datagramController.desiredSize === DATAGRAM_QUEUE) this.#datagramsViaWeb = false;
      }
    } catch {
      // The session failed: deliverClosed destroys the Duplex.
    }
  }

  #openStream(bidi: boolean): Promise<WtStreamChannel> {
    if (!this.#open || this.#closing) return Promise.reject(new WebTransportError('the session is closed', { source: 'session' }));
    const limit = this.link.maxStreamsPerSession;
    if (this.#localStreams >= limit) {
      return Promise.reject(new WebTransportError(`${limit} streams of this side are already open on the session`, { source: 'session' }));
    }
    const id = this.link.nextStreamId(this.conn, bidi);
    this.link.commands.openStream(this.conn, id, this.id);
    this.link.scheduleFlush();
    const channel = new WtStreamChannel(this.link, this.conn, id, { read: bidi, write: true });
    this.#localStreams++;
    this.#adopt(channel);
    return Promise.resolve(channel);
  }

  #adopt(channel: WtStreamChannel): void {
    this.#channels.add(channel);
    this.link.track(this.conn, channel, this);
  }

  #sendDatagram(d: Uint8Array): void {
    if (!this.#open || this.#closing) throw new WebTransportError('the session is closed', { source: 'session' });
    // Too large for every path: dropped, as the W3C API drops them.
    if (d.length > MAX_DATAGRAM_SIZE) return;
    this.link.commands.datagram(this.conn, this.id, d);
    this.link.scheduleFlush();
  }

  // Reports from the server.

  /** @internal The server is shutting down gracefully. */
  deliverDraining(): void {
    this.#resolveDraining();
  }

  /** @internal The peer opened a stream on this session. */
  deliverIncoming(channel: WtStreamChannel, bidi: boolean): void {
    this.#adopt(channel);
    if (bidi) this.#bidiController.enqueue(new WebTransportBidirectionalStream(channel));
    else this.#uniController.enqueue(channel.readable!);
  }

  /** @internal The core forgot one of this session's streams. */
  deliverStreamGone(channel: WtStreamChannel): void {
    if (!this.#channels.delete(channel)) return;
    if (channel.id % 2 === 1) this.#localStreams--;
    channel.deliverGone('the stream was closed');
  }

  /** @internal A datagram for this session (a view into the event batch: copied). */
  deliverDatagram(payload: Buffer): void {
    const duplex = this.#datagramDuplex;
    if (duplex !== undefined && !this.#datagramsViaWeb) {
      if (!this.#open || duplex.destroyed || duplex.readableLength >= DATAGRAM_QUEUE) this.link.datagramDropped();
      else duplex.push(Buffer.from(payload));
      return;
    }
    const c = this.#datagramController;
    if ((c.desiredSize ?? 0) <= 0) {
      this.link.datagramDropped();
      return;
    }
    c.enqueue(new Uint8Array(payload));
  }

  /**
   * @internal The session ended: `cleanly` when either side closed it
   * (CLOSE_WEBTRANSPORT_SESSION or the CONNECT stream's end), not when its
   * connection was lost.
   */
  deliverClosed(closeCode: number, reason: string, cleanly: boolean): void {
    if (!this.#open) return;
    this.#open = false;
    const error = new WebTransportError('the session is closed', { source: 'session' });
    for (const channel of this.#channels) channel.deliverGone('the session is closed');
    this.#channels.clear();
    const duplex = this.#datagramDuplex;
    if (duplex !== undefined && !duplex.destroyed) {
      // Cleanly while datagrams are still being moved over: that loop ends the Duplex after them.
      if (!cleanly) duplex.destroy(new WebTransportError('the connection was lost', { source: 'session' }));
      else if (!this.#datagramsViaWeb) duplex.push(null);
    }
    for (const c of [this.#bidiController, this.#uniController, this.#datagramController]) {
      try {
        if (cleanly) c.close();
        else c.error(error);
      } catch {
        // Already closed or errored by the application (cancel()).
      }
    }
    if (cleanly) this.#resolveClosed({ closeCode, reason });
    else this.#rejectClosed(new WebTransportError('the connection was lost', { source: 'session' }));
  }
}
