// Small WebTransport applications the tests share.
import { pipeline, Transform } from 'node:stream';
import type { WebTransportSession } from '../../src/index';

/** Reads a web ReadableStream of bytes to its end. */
export async function readAll(readable: ReadableStream<Uint8Array>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of readable) parts.push(Buffer.from(chunk));
  return Buffer.concat(parts);
}

/**
 * Answers every incoming stream in upper case: bidirectional on itself,
 * unidirectional on a new stream; datagrams likewise. A session that ends
 * under it ends its loops quietly.
 */
export function upperCaseApp(session: WebTransportSession): void {
  void (async () => {
    for await (const bidi of session.incomingBidirectionalStreams) {
      void (async () => {
        const text = (await readAll(bidi.readable)).toString();
        const w = bidi.writable.getWriter();
        await w.write(Buffer.from(text.toUpperCase()));
        await w.close();
      })().catch(() => {});
    }
  })().catch(() => {});
  answerUnidirectionalInUpperCase(session);
  void (async () => {
    const w = session.datagrams.writable.getWriter();
    for await (const d of session.datagrams.readable) await w.write(Buffer.from(Buffer.from(d).toString().toUpperCase()));
  })().catch(() => {});
}

/**
 * upperCaseApp's answers through the Node-stream shape: each bidirectional
 * stream's toDuplex() through an upper-casing Transform and back, the
 * datagrams through datagramDuplex(); unidirectional streams as above.
 */
export function upperCaseDuplexApp(session: WebTransportSession): void {
  const datagrams = session.datagramDuplex();
  datagrams.on('data', (d: Buffer) => datagrams.write(Buffer.from(d.toString().toUpperCase())));
  datagrams.on('error', () => {});
  void (async () => {
    for await (const bidi of session.incomingBidirectionalStreams) {
      const duplex = bidi.toDuplex();
      const upper = new Transform({ transform: (chunk: Buffer, _enc, done) => done(null, Buffer.from(chunk.toString().toUpperCase())) });
      pipeline(duplex, upper, duplex, () => {});
    }
  })().catch(() => {});
  answerUnidirectionalInUpperCase(session);
}

/** Each unidirectional stream the client opens is answered, in upper case, on a new one of the server's. */
function answerUnidirectionalInUpperCase(session: WebTransportSession): void {
  void (async () => {
    for await (const uni of session.incomingUnidirectionalStreams) {
      void (async () => {
        const text = (await readAll(uni)).toString();
        const w = (await session.createUnidirectionalStream()).getWriter();
        await w.write(Buffer.from(text.toUpperCase()));
        await w.close();
      })().catch(() => {});
    }
  })().catch(() => {});
}
