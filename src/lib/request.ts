// A request as handlers see it (spec, "Request as seen by handlers").

const EMPTY = Buffer.alloc(0);

export class H3Request {
  readonly method: string;
  readonly path: string;
  readonly authority: string | undefined;
  readonly scheme: string | undefined;
  /**
   * The request's cookie: every `cookie` field line joined with "; "
   * (RFC 9114 section 4.2.1), or undefined when there is none. Cookies are
   * reachable only here, never through header().
   */
  readonly cookie: string | undefined;
  /** The buffered body; empty when bodies stream through a body callback. */
  readonly body: Buffer;
  /** Connection and stream this request arrived on (for logs and tracing). */
  readonly connectionId: number;
  readonly streamId: number;
  /** The request arrived as TLS early data (0-RTT) and may be a replay (RFC 8470). */
  readonly earlyData: boolean;
  /** Regular field lines except cookies, flat: name, value, ... */
  private readonly lines: string[];

  /** @internal `lines` is the decoded wire list: name, value, ... pseudo-headers first. */
  constructor(connectionId: number, streamId: number, lines: string[], body: Buffer | undefined, earlyData = false) {
    this.earlyData = earlyData;
    this.connectionId = connectionId;
    this.streamId = streamId;
    let method = '';
    let path = '';
    let authority: string | undefined;
    let scheme: string | undefined;
    let cookie: string | undefined;
    const regular: string[] = [];
    for (let i = 0; i < lines.length; i += 2) {
      const name = lines[i];
      const value = lines[i + 1];
      if (name.charCodeAt(0) === 58 /* ':' */) {
        if (name === ':method') method = value;
        else if (name === ':path') path = value;
        else if (name === ':authority') authority = value;
        else if (name === ':scheme') scheme = value;
      } else if (name === 'cookie') {
        cookie = cookie === undefined ? value : `${cookie}; ${value}`;
      } else {
        regular.push(name, value);
      }
    }
    this.method = method;
    this.path = path;
    this.authority = authority;
    this.scheme = scheme;
    this.cookie = cookie;
    this.lines = regular;
    this.body = body ?? EMPTY;
  }

  /**
   * The value of a request header by (case-insensitive) name, or undefined
   * when absent. Several lines with one name are joined with ", "
   * (RFC 9110 section 5.3). `cookie` is never returned here: read `cookie`.
   */
  header(name: string): string | undefined {
    const key = name.toLowerCase();
    let found: string | undefined;
    for (let i = 0; i < this.lines.length; i += 2) {
      if (this.lines[i] === key) {
        found = found === undefined ? this.lines[i + 1] : `${found}, ${this.lines[i + 1]}`;
      }
    }
    return found;
  }

  /** Whether a header is present (never true for `cookie`). */
  hasHeader(name: string): boolean {
    return this.header(name) !== undefined;
  }

  /** Header names present, lowercase, in first-seen order (cookie excluded). */
  headerNames(): string[] {
    const names: string[] = [];
    for (let i = 0; i < this.lines.length; i += 2) {
      if (!names.includes(this.lines[i])) names.push(this.lines[i]);
    }
    return names;
  }
}
