// Small WebTransport applications the tests share.
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
  void (async () => {
    for await (const uni of session.incomingUnidirectionalStreams) {
      void (async () => {
        const text = (await readAll(uni)).toString();
        const out = await session.createUnidirectionalStream();
        const w = out.getWriter();
        await w.write(Buffer.from(text.toUpperCase()));
        await w.close();
      })().catch(() => {});
    }
  })().catch(() => {});
  void (async () => {
    const w = session.datagrams.writable.getWriter();
    for await (const d of session.datagrams.readable) await w.write(Buffer.from(Buffer.from(d).toString().toUpperCase()));
  })().catch(() => {});
}

