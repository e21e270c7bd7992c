// One interface for every HTTP/3 client the tests drive from outside the
// server: aioquic (Python), quic-go (Go), ngtcp2's example client (C) and
// headless Chromium. The interop matrix, the interop-runner cases, the
// framework suites and the feature tests that need a second client all
// speak to a client through it, so a client is added (or its quirks
// handled) in one file: aioquic.ts, quic-go.ts, ngtcp2.ts, chromium.ts.
//
// A client that cannot do something says why (`cannot`, `cannotWebTransport`,
// a missing `runPlan`) instead of pretending; the suites record that as
// "n/a" with the reason.

/** One request. Exactly one of `body`, `bodyLen` and `uploadBytes` carries a body, if any. */
export interface ClientRequest {
  method: string;
  path: string;
  /** Field lines to add (no pseudo-headers). */
  headers: [string, string][];
  /** A small body as text. */
  body?: string;
  /** A body of this many bytes of "x". */
  bodyLen?: number;
  /** A body of this many pattern bytes (byte i = i % 251, test/helpers/pattern.ts), made while it is sent. */
  uploadBytes?: number;
  /**
   * Send a content-length for the body. Default: yes for `body` and
   * `bodyLen` (curl, browsers and Go send one for a body of known length),
   * no for `uploadBytes` (framed by DATA frames and FIN alone, as fetch()
   * sends a ReadableStream). aioquic and Chromium (which then sends `body`
   * as a ReadableStream) let a test choose; quic-go cannot leave it out.
   */
  contentLength?: boolean;
}

export interface ClientChunk {
  /** Milliseconds since the request was started. */
  t: number;
  bytes: number;
}

export interface ClientResponse {
  status: number | null;
  /** Response field lines as received: duplicates kept, names lowercase, no pseudo-headers. */
  headers: [string, string][];
  /** The body as UTF-8 text (clients may keep only its first MiB; bodyBytes and bodySha256 always cover all of it). */
  body: string;
  bodyBytes: number;
  bodySha256: string;
  /** When each piece of the body arrived (empty where the client cannot tell). */
  chunks: ClientChunk[];
  /** Milliseconds from start to the end of the response. */
  totalMs: number;
  /** The protocol the client reports ("h3", "h2", "http/1.1"), where it reports one. */
  protocol?: string;
  error?: string;
}

export interface FetchOptions {
  host?: string;
  /** The whole batch's deadline. Default 120 s. */
  timeoutMs?: number;
  /** Chromium only: a large body as a ReadableStream (default) or a Blob made in the page first. */
  upload?: 'stream' | 'blob';
}

/** A WebTransport session at /wt that echoes one bidirectional stream and one datagram. */
export interface WtOutcome {
  status: number | null;
  streamEcho: string;
  datagramEcho: string;
  error?: string;
}

// ------------------------------------------------------- interop-runner plans

export interface RunnerConnectionPlan {
  paths: string[];
  /** Resume with the ticket of the connection before. */
  resume?: boolean;
  /** Resume and send the requests as 0-RTT. */
  early_data?: boolean;
  /** Update the 1-RTT keys once the handshake is done. */
  key_update?: boolean;
  /** Move to a new local socket after this many responses (0: never). */
  migrate_after?: number;
  // bind, migrate_bind, migrate_new_cid, sequential: aioquic and quic-go only.
  /** The local IP address (IPv4 or IPv6, port 0) the first socket binds to, instead of the wildcard. */
  bind?: string;
  /** With `migrate_after`: the local IP address the socket moved to binds to (a new address, not only a new port). Default: the wildcard. */
  migrate_bind?: string;
  /**
   * With `migrate_after`: a new destination connection ID with the move
   * (default true). false keeps it, as a NAT rebinding (aioquic); quic-go
   * cannot, and says so in the connection's error ("cannot: ...") without moving.
   */
  migrate_new_cid?: boolean;
  /**
   * Each request once the response before it completed (default false: all
   * at once). With `migrate_after` N the move then comes between response N
   * and request N+1; otherwise it comes while the other requests are in flight.
   */
  sequential?: boolean;
  /** With `sequential` (aioquic and quic-go): wait `pause_ms` before request number `pause_before` (0-based, at least 1), the connection open and idle. */
  pause_before?: number;
  pause_ms?: number;
}

/** Connections one after another (or `parallel` at once), each fetching its paths at once (or `sequential`). */
export interface RunnerPlan {
  host: string;
  port: number;
  sni: string;
  chacha20?: boolean;
  timeout: number;
  /** Up to this many connections at once (default 1); ignored (one at a time) when any connection resumes or sends early data. aioquic and quic-go only. */
  parallel?: number;
  connections: RunnerConnectionPlan[];
  // ca, client_cert, client_key: aioquic and quic-go only.
  /**
   * A PEM file of CAs: every connection verifies the server's chain against
   * them and the leaf's name against `sni`, and a failure fails its
   * handshake (the connection's error says how: "handshake failed:
   * connection closed: error 0x12a (TLS alert bad_certificate) sent by this
   * client: ..."). Without it nothing is verified (the demo identity is self-signed).
   */
  ca?: string;
  /**
   * PEM files of a client certificate (chain) and its key, sent when the
   * server asks for one. In TLS 1.3 a certificate the server refuses (or one
   * it requires and did not get) is refused after the client's side of the
   * handshake completed: `handshake` is true and the error carries the
   * server's alert (0x174 certificate_required). quic-go sends it only if it
   * fits the server's CertificateRequest (crypto/tls), else none.
   */
  client_cert?: string;
  client_key?: string;
  /**
   * ngtcp2 only: keep the client's frame trace (slower, so only for cases
   * of small files), so that a failure quotes the CONNECTION_CLOSE or
   * stateless reset the client received, if any.
   */
  traceFrames?: boolean;
}

export interface RunnerConnectionResult {
  handshake: boolean;
  resumed: boolean | null;
  early_data_accepted: boolean | null;
  cipher: string | null;
  key_updated: boolean | null;
  migrated: boolean | null;
  /**
   * The sorted, distinct source addresses ("ip:port", IPv6 in brackets, an
   * IPv4-mapped address as plain IPv4) of every datagram the connection
   * received, on every socket it used. aioquic and quic-go only.
   */
  peer_addresses?: string[];
  /**
   * What the server presented in this handshake: the SHA-256 (lowercase hex)
   * of each certificate's DER, leaf first, also when the verification
   * against `ca` then failed; empty when no Certificate message came (a
   * resumed session has none). aioquic and quic-go only.
   */
  peer_chain_sha256?: string[];
  error: string | null;
}

export interface RunnerResponse {
  connection: number;
  path: string;
  status: number | null;
  length: number;
  sha256: string;
  error: string | null;
}

export interface RunnerResult {
  connections: RunnerConnectionResult[];
  responses: RunnerResponse[];
  error: string | null;
}

// ------------------------------------------------------------------ the client

export type ClientName = 'aioquic' | 'quic-go' | 'ngtcp2' | 'Chromium';

export interface H3Client {
  readonly name: ClientName;
  /** The implementation and version, as the generated docs print it. */
  version: string;
  /** Why this client cannot send this request, or null. */
  cannot(req: ClientRequest): string | null;
  /** Runs the requests in order, on one connection where the client can. Never rejects for a failed request: its `error` says. */
  fetch(port: number, reqs: ClientRequest[], opts?: FetchOptions): Promise<ClientResponse[]>;
  /** Why this client cannot do WebTransport, or null. */
  readonly cannotWebTransport: string | null;
  webTransport?(port: number, stream: string, datagram: string): Promise<WtOutcome>;
  /** The interop-runner's plans (absent: the client cannot run them). */
  runPlan?(plan: RunnerPlan): Promise<RunnerResult>;
  /** Frees what the client holds (a browser). */
  close(): Promise<void>;
}

/** The field lines as one record: names lowercase, repeated fields joined with ", ". */
export function fieldRecord(lines: [string, string][]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [n, v] of lines) {
    if (n.startsWith(':')) continue;
    const name = n.toLowerCase();
    out[name] = out[name] === undefined ? v : `${out[name]}, ${v}`;
  }
  return out;
}

/** A response that never came. */
export function failedResponse(error: string): ClientResponse {
  return { status: null, headers: [], body: '', bodyBytes: 0, bodySha256: '', chunks: [], totalMs: 0, error };
}

/** Response body bytes the clients keep as text (all of it is hashed and counted). */
export const BODY_KEEP = 1 << 20;
export const DEFAULT_TIMEOUT_MS = 120_000;
