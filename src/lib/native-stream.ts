// RequestStream on the boundary protocol: what the layers above ask of a
// stream becomes commands for the native core; what the core reports about
// it (body, trailers, progress of the response body, aborts) arrives here.
import type { CommandWriter } from '../native/protocol';
import type { ConnectionHandle, RequestStream, StreamAbort } from './request-stream';

/** Above this many response body bytes not yet taken by QUIC, writers wait. */
export const SEND_HIGH_WATER = 256 * 1024;
/** onDrain fires once the backlog is down to this. */
const SEND_LOW_WATER = SEND_HIGH_WATER / 2;
/** RESPOND carries at most this many field lines (a u8 count). */
const RESPOND_MAX_FIELDS = 255;

/** What a stream needs of the server that owns it. */
export interface StreamOwner {
  readonly commands: CommandWriter;
  /** Commands were written: hand them to the core soon. */
  scheduleFlush(): void;
  /** The stream will neither send nor receive any more: forget it. */
  forget(stream: NativeRequestStream): void;
}

export class NativeRequestStream implements RequestStream {
  onData: ((chunk: Buffer) => void) | undefined = undefined;
  onTrailers: ((lines: string[]) => void) | undefined = undefined;
  onEnd: (() => void) | undefined = undefined;
  onAbort: ((abort: StreamAbort) => void) | undefined = undefined;
  onDrain: (() => void) | undefined = undefined;
  readonly sendHighWater = SEND_HIGH_WATER;
  /** Response body bytes handed to the core, and how many of them QUIC took. */
  private queued = 0;
  private taken = 0;
  private waitingForDrain = false;
  /** The response ended (FIN sent), the stream was reset, or it was aborted. */
  private closed = false;

  constructor(
    private readonly owner: StreamOwner,
    readonly connection: ConnectionHandle,
    readonly id: number,
    readonly lines: readonly string[],
    readonly complete: boolean,
    readonly bufferedBody: Buffer,
    readonly earlyData: boolean,
  ) {}

  get sendPending(): number {
    return this.queued - this.taken;
  }

  consume(bytes: number): void {
    if (this.closed || bytes <= 0) return;
    this.owner.commands.consumed(this.connection.id, this.id, bytes);
    this.owner.scheduleFlush();
  }

  sendInformational(status: number, fields: readonly string[]): void {
    if (this.closed) return;
    this.owner.commands.headers(this.connection.id, this.id, status, false, fields);
    this.owner.scheduleFlush();
  }

  sendHeaders(status: number, fields: readonly string[], fin: boolean): void {
    if (this.closed) return;
    this.owner.commands.headers(this.connection.id, this.id, status, fin, fields);
    if (fin) this.close();
    this.owner.scheduleFlush();
  }

  sendData(chunk: Buffer, fin: boolean): void {
    if (this.closed) return;
    this.owner.commands.data(this.connection.id, this.id, chunk, fin);
    this.queued += chunk.length;
    if (fin) this.close();
    else if (this.sendPending > SEND_HIGH_WATER) this.waitingForDrain = true;
    this.owner.scheduleFlush();
  }

  sendTrailers(fields: readonly string[]): void {
    if (this.closed) return;
    this.owner.commands.headers(this.connection.id, this.id, 0, true, fields);
    this.close();
    this.owner.scheduleFlush();
  }

  respond(status: number, fields: readonly string[], body: Buffer): void {
    if (this.closed) return;
    if (fields.length / 2 > RESPOND_MAX_FIELDS) {
      this.owner.commands.headers(this.connection.id, this.id, status, body.length === 0, fields);
      if (body.length > 0) this.owner.commands.data(this.connection.id, this.id, body, true);
    } else {
      this.owner.commands.respond(this.connection.id, this.id, status, fields as string[], body);
    }
    this.close();
    this.owner.scheduleFlush();
  }

  reset(code: number): void {
    if (this.closed) return;
    this.owner.commands.reset(this.connection.id, this.id, code);
    this.close();
    this.owner.scheduleFlush();
  }

  /** True once the stream will send nothing more. */
  get isClosed(): boolean {
    return this.closed;
  }

  private close(): void {
    this.closed = true;
    this.owner.forget(this);
  }

  // Reports from the core (StreamServer calls these).

  /** @internal */
  deliverData(chunk: Buffer, fin: boolean): void {
    if (chunk.length > 0) this.onData?.(chunk);
    if (fin) this.onEnd?.();
  }

  /** @internal */
  deliverTrailers(lines: string[]): void {
    this.onTrailers?.(lines);
  }

  /** @internal QUIC has taken `total` bytes of the response body. */
  deliverSent(total: number): void {
    if (total > this.taken) this.taken = total;
    if (this.waitingForDrain && this.sendPending <= SEND_LOW_WATER) {
      this.waitingForDrain = false;
      this.onDrain?.();
    }
  }

  /** @internal The stream ended early; the core already forgot it. */
  deliverAbort(abort: StreamAbort): void {
    if (this.closed) return;
    this.closed = true;
    this.onAbort?.(abort);
  }
}
