// A session's datagrams as a Node object-mode Duplex: each chunk read is one
// datagram the peer sent (a Buffer of its own), each chunk written is one
// datagram to send. For code that prefers Node streams to the W3C
// `datagrams.readable`/`writable` pair, and cheaper per datagram: Node 20's
// web streams cost 1.6-2.2 us of CPU per datagram read and written back (a
// promise per read and per write), a Duplex's push, 'data' and write()
// 0.30-0.36 us, a plain function call 0.11-0.14 (bench/tools/webstreams-cost.mjs;
// docs/design.md, "Datagrams through a Node Duplex").
//
// Limits are the web streams': at most DATAGRAM_QUEUE datagrams wait unread
// (more are dropped and counted: a datagram is never worth holding the
// connection back for), and a datagram larger than maxDatagramSize is
// dropped as the W3C API drops it. Writing never waits: each write goes
// straight to the core, whose own datagram queue is bounded. Datagrams have
// no end on the wire: ending the writable side sends nothing.
import { Duplex } from 'node:stream';

export class DatagramDuplex extends Duplex {
  constructor(
    private readonly send: (datagram: Uint8Array) => void,
    queue: number,
  ) {
    super({ objectMode: true, readableHighWaterMark: queue });
  }

  /** Datagrams arrive when the peer sends them; there is nothing to ask for. */
  override _read(): void {}

  override _write(chunk: unknown, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    if (!(chunk instanceof Uint8Array)) {
      done(new TypeError(`a datagram must be a Buffer or Uint8Array, got ${chunk === null ? 'null' : typeof chunk}`));
      return;
    }
    try {
      this.send(chunk);
    } catch (e) {
      done(e as Error);
      return;
    }
    done();
  }
}
