// A RequestStream double for the compat layer's unit tests: records every
// command the layer gives, and lets a test fire the core's callbacks by hand.
import type { ConnectionHandle, RequestStream, StreamAbort } from '../../src/lib/request-stream';

export type Call =
  | ['consume', number]
  | ['sendInformational', number, string[]]
  | ['sendHeaders', number, string[], boolean]
  | ['sendData', string, boolean]
  | ['sendTrailers', string[]]
  | ['respond', number, string[], string]
  | ['reset', number];

export function fakeConnection(id = 1, open = true, peerMaxFieldSectionSize = Infinity): ConnectionHandle & { open: boolean } {
  return {
    id,
    remoteAddress: '203.0.113.7',
    remotePort: 50123,
    remoteFamily: 'IPv4',
    localAddress: '0.0.0.0',
    localPort: 4433,
    cid: 'abcd',
    open,
    peerMaxFieldSectionSize,
  };
}

export class FakeStream implements RequestStream {
  readonly calls: Call[] = [];
  consumed = 0;
  sendPending = 0;
  sendHighWater = 64 * 1024;
  isClosed = false;
  readonly bufferedBody = Buffer.alloc(0);
  readonly earlyData = false;
  onData: ((chunk: Buffer) => void) | undefined;
  onTrailers: ((lines: string[]) => void) | undefined;
  onEnd: (() => void) | undefined;
  onAbort: ((abort: StreamAbort) => void) | undefined;
  onDrain: (() => void) | undefined;

  constructor(
    readonly lines: readonly string[],
    readonly complete = true,
    readonly connection: ConnectionHandle = fakeConnection(),
    readonly id = 0,
  ) {}

  consume(bytes: number): void {
    this.consumed += bytes;
    this.calls.push(['consume', bytes]);
  }
  sendInformational(status: number, fields: readonly string[]): void {
    this.calls.push(['sendInformational', status, [...fields]]);
  }
  sendHeaders(status: number, fields: readonly string[], fin: boolean): void {
    this.calls.push(['sendHeaders', status, [...fields], fin]);
  }
  sendData(chunk: Buffer, fin: boolean): void {
    this.sendPending += chunk.length;
    this.calls.push(['sendData', chunk.toString('latin1'), fin]);
  }
  sendTrailers(fields: readonly string[]): void {
    this.calls.push(['sendTrailers', [...fields]]);
  }
  respond(status: number, fields: readonly string[], body: Buffer): void {
    this.calls.push(['respond', status, [...fields], body.toString('latin1')]);
  }
  reset(code: number): void {
    this.calls.push(['reset', code]);
  }

  /** Commands other than consume(), by name. */
  commands(): string[] {
    return this.calls.filter((c) => c[0] !== 'consume').map((c) => c[0]);
  }
  last<N extends Call[0]>(name: N): Extract<Call, [N, ...unknown[]]> {
    const found = this.calls.filter((c) => c[0] === name);
    if (found.length === 0) throw new Error(`no ${name} call; calls: ${JSON.stringify(this.calls)}`);
    return found[found.length - 1] as Extract<Call, [N, ...unknown[]]>;
  }
}

/** Request field lines: pseudo-headers, then `extra` (name, value, ...). */
export function requestLines(method = 'GET', path = '/', extra: string[] = []): string[] {
  return [':method', method, ':scheme', 'https', ':authority', 'example.test:4433', ':path', path, ...extra];
}

/** Flat field lines -> [name, value] pairs, for readable assertions. */
export function pairs(fields: readonly string[]): [string, string][] {
  const out: [string, string][] = [];
  for (let i = 0; i < fields.length; i += 2) out.push([fields[i], fields[i + 1]]);
  return out;
}
