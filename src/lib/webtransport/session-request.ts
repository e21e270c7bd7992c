// A client's request for a WebTransport session (an extended CONNECT with
// :protocol webtransport), waiting for the application's decision:
// accept() answers 200 (with optional fields and a chosen subprotocol) and
// gives the session; reject() answers a 4xx or 5xx. Until one of them is
// called the session holds a place under the server's session limit.
import { firstLineValue } from '../request-stream';
import type { RequestStream } from '../request-stream';
import { WebTransportError } from './error';
import { WebTransportSession } from './session';

export interface AcceptOptions {
  /** Response fields, flat or as an object (names lowercase; values as given). */
  headers?: Record<string, string | string[]>;
  /** The subprotocol chosen from `protocols`: sent as `wt-protocol` (draft-14's structured string). */
  protocol?: string;
}

/** What the server does with a request's answer. */
export interface SessionRequestOwner {
  /** The application accepted: the server registers and returns the session. */
  accepted(request: WebTransportSessionRequest, stream: RequestStream): WebTransportSession;
}

export class WebTransportSessionRequest {
  #decided = false;
  #aborted = false;

  /** @internal Made by the server for each extended CONNECT. */
  constructor(
    private readonly owner: SessionRequestOwner,
    private readonly stream: RequestStream,
  ) {
    stream.onAbort = () => {
      this.#aborted = true;
    };
  }

  /** The client gave up (reset the CONNECT stream, or its connection closed) before a decision. */
  get aborted(): boolean {
    return this.#aborted;
  }

  /** The request's field lines, flat: name, value, ... (pseudo-headers first). */
  get lines(): readonly string[] {
    return this.stream.lines;
  }

  get path(): string {
    return firstLineValue(this.stream.lines, ':path') ?? '/';
  }
  get authority(): string {
    return firstLineValue(this.stream.lines, ':authority') ?? '';
  }
  /** The page's origin as the browser sent it; undefined from clients that send none. */
  get origin(): string | undefined {
    return firstLineValue(this.stream.lines, 'origin');
  }

  /** Field values by lowercase name, repeated fields joined with ", " (pseudo-headers left out). */
  get headers(): Record<string, string> {
    const out: Record<string, string> = Object.create(null);
    const lines = this.stream.lines;
    for (let i = 0; i + 1 < lines.length; i += 2) {
      const name = lines[i];
      if (name.startsWith(':')) continue;
      out[name] = out[name] === undefined ? lines[i + 1] : `${out[name]}, ${lines[i + 1]}`;
    }
    return out;
  }

  /**
   * The subprotocols the client offers, in its order: the
   * `wt-available-protocols` field (draft-14: a list of structured-field
   * strings), empty when it offers none.
   */
  get protocols(): string[] {
    const field = this.headers['wt-available-protocols'];
    if (!field) return [];
    const out: string[] = [];
    for (const m of field.matchAll(/"((?:[^"\\]|\\.)*)"/g)) out.push(m[1].replace(/\\(.)/g, '$1'));
    return out;
  }

  get remoteAddress(): string {
    return this.stream.connection.remoteAddress;
  }
  get remotePort(): number {
    return this.stream.connection.remotePort;
  }

  /** Whether accept() or reject() was called. */
  get decided(): boolean {
    return this.#decided;
  }

  /** Opens the session: 200 with the given fields. */
  accept(options: AcceptOptions = {}): WebTransportSession {
    this.#decide();
    if (this.#aborted) throw new WebTransportError('the client gave up on this session before it was accepted', { source: 'session' });
    const fields: string[] = [];
    for (const [name, value] of Object.entries(options.headers ?? {})) {
      for (const v of Array.isArray(value) ? value : [value]) fields.push(name.toLowerCase(), String(v));
    }
    if (options.protocol !== undefined) fields.push('wt-protocol', `"${options.protocol.replace(/["\\]/g, '\\$&')}"`);
    this.stream.sendHeaders(200, fields, false);
    return this.owner.accepted(this, this.stream);
  }

  /** Refuses the session with a final status (default 404), fields optional. */
  reject(status = 404, headers: Record<string, string> = {}): void {
    if (!Number.isInteger(status) || status < 300 || status > 599) {
      throw new RangeError(`a refused session is answered with a status from 300 to 599, got ${status}`);
    }
    this.#decide();
    const fields: string[] = [];
    for (const [name, value] of Object.entries(headers)) fields.push(name.toLowerCase(), String(value));
    this.stream.respond(status, fields, Buffer.alloc(0));
  }

  #decide(): void {
    if (this.#decided) throw new Error('this WebTransport session request was already accepted or rejected');
    this.#decided = true;
  }
}
