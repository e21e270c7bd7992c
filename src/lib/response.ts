// A response under construction (spec, "Response exchange"): a status, at
// most MAX_RESPONSE_FIELDS added fields, a content type and a body.

/** The spec's limit on fields a handler may add to one response. */
export const MAX_RESPONSE_FIELDS = 8;

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9a-z]+$/;
const BAD_VALUE = /[\0\r\n]/;

/** Fields the HTTP/3 layer owns; a handler setting them would break framing. */
const FORBIDDEN = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'content-length']);

export type Sender = (res: H3Response, fields: string[], body: Buffer) => void;

export class H3Response {
  private statusCode = 200;
  private type: string | undefined;
  private readonly fields: string[] = [];
  private done = false;

  /** @internal */
  constructor(private readonly sender: Sender) {}

  get status(): number {
    return this.statusCode;
  }

  set status(code: number) {
    if (!Number.isInteger(code) || code < 200 || code > 599) {
      throw new RangeError(`response status must be an integer from 200 to 599, got ${code}`);
    }
    this.statusCode = code;
  }

  get contentType(): string | undefined {
    return this.type;
  }

  set contentType(value: string | undefined) {
    this.type = value === undefined ? undefined : checkValue('content-type', value);
  }

  /** True once end() has handed the response to the server. */
  get sent(): boolean {
    return this.done;
  }

  /** Fields added so far, flat: name, value, ... (lowercase). */
  get addedFields(): readonly string[] {
    return this.fields;
  }

  /**
   * Adds one response field. Names and values go out lowercase (the spec's
   * wire rule). Throws a RangeError for the ninth field, and a TypeError for
   * a name or value HTTP/3 cannot carry.
   */
  addField(name: string, value: string): this {
    const n = name.toLowerCase();
    if (!TOKEN.test(n) ) throw new TypeError(`invalid response field name: ${JSON.stringify(name)}`);
    if (FORBIDDEN.has(n)) throw new TypeError(`response field "${n}" is managed by the HTTP/3 layer`);
    if (n === 'content-type') {
      this.contentType = value;
      return this;
    }
    if (this.fields.length / 2 >= MAX_RESPONSE_FIELDS) {
      throw new RangeError(
        `a response carries at most ${MAX_RESPONSE_FIELDS} added fields; cannot add "${n}"`,
      );
    }
    this.fields.push(n, checkValue(n, value));
    return this;
  }

  /** Node-style alias of addField. */
  setHeader(name: string, value: string): this {
    return this.addField(name, value);
  }

  /** Sends the response. Calling it twice throws. */
  end(body?: string | Buffer | Uint8Array): void {
    if (this.done) throw new Error('response already sent');
    this.done = true;
    const buf = body === undefined ? EMPTY : typeof body === 'string' ? Buffer.from(body) : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
    const all = this.type === undefined ? this.fields : ['content-type', this.type, ...this.fields];
    this.sender(this, all, buf);
  }

  /** status + `text/plain` + body. */
  text(status: number, body: string): void {
    this.status = status;
    this.contentType = 'text/plain';
    this.end(body);
  }

  /** status + `application/json` + JSON body followed by one newline. */
  json(status: number, value: unknown): void {
    this.status = status;
    this.contentType = 'application/json';
    this.end(`${JSON.stringify(value)}\n`);
  }
}

const EMPTY = Buffer.alloc(0);

function checkValue(name: string, value: string): string {
  if (typeof value !== 'string' || BAD_VALUE.test(value)) {
    throw new TypeError(`invalid value for response field "${name}"`);
  }
  const trimmed = value.trim();
  if (trimmed !== value) throw new TypeError(`value of response field "${name}" has leading or trailing whitespace`);
  return value.toLowerCase();
}
