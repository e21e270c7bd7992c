// Drives test/helpers/clients/h3client.py: aioquic, an HTTP/3 stack independent of
// quiche, from the project-local virtualenv that scripts/setup-python.sh makes.
import path from 'node:path';
import { CLIENTS, PYTHON } from '../paths';
import { runJsonProcess } from '../process';

const CLIENT = path.join(CLIENTS, 'h3client.py');

export interface PlannedRequest {
  method?: string;
  path: string;
  headers?: [string, string][];
  raw_headers?: [string, string][];
  body_b64?: string;
  body_chunks_b64?: string[];
  chunk_delay_ms?: number;
  end_stream?: boolean;
  reset_after_chunks?: number;
  reset_code?: number;
  /** Send `total` zero bytes in `chunk_size` pieces, lazily, stopping when the server answers. */
  body_generate?: { total: number; chunk_size?: number };
  /** Count and hash the response body instead of keeping it (large downloads). */
  discard_body?: boolean;
  /** Once this many response body bytes arrived: STOP_SENDING and RESET_STREAM with `stop_code` (default 0x10c). */
  stop_after_bytes?: number;
  stop_code?: number;
}

export interface Plan {
  timeout?: number;
  requests: PlannedRequest[];
  sequential?: boolean;
  close?: { error_code: number; reason: string } | null;
  /** ALPN protocols offered instead of h3. */
  alpn?: string[];
  /** Keep the session ticket the server sends in this file (pickled). */
  session_ticket_out?: string;
  /** Resume with the ticket kept in this file. */
  session_ticket_in?: string;
  /** Send the requests before the handshake completes (0-RTT when the ticket allows). */
  early?: boolean;
  /** With `sequential`: move to a new UDP port (a NAT rebinding) before request number `rebind_before`. */
  rebind_before?: number;
  /** Stay connected this long after the last answer before closing (a new path's validation may still be under way). */
  linger_ms?: number;
  /** The SNI, and the name `ca` checks the leaf against (default "localhost"). */
  server_name?: string;
  /**
   * A PEM file of CAs: verify the server's chain against them and its name
   * against `server_name`; a failure fails the handshake (handshake_error
   * says why). Without it nothing is verified (the demo identity is self-signed).
   */
  ca?: string;
  /** PEM files of a client certificate (chain) and its key, sent when the server asks for one. */
  client_cert?: string;
  client_key?: string;
}

export interface H3Response {
  status: number | null;
  headers: [string, string][];
  body_b64: string;
  body_text: string;
  ended: boolean;
  reset_code: number | null;
  stop_sending_code: number | null;
  error: string | null;
  elapsed_ms: number;
  /** With body_generate: how many body bytes the client handed to QUIC. */
  sent_bytes: number | null;
  /** Interim responses (1xx) before the final one, each as its field lines. */
  interim: [string, string][][];
  /** The trailer section, when the response had one. */
  trailers: [string, string][] | null;
  body_length: number;
  body_sha256: string;
  /** stop_after_bytes was reached and the client stopped the stream. */
  stopped: boolean;
}

export interface ClientResult {
  /**
   * The client's side of the handshake completed. A client certificate the
   * server refuses (or requires and did not get) is refused after that, in
   * TLS 1.3: then `connection_terminated` (and each response's error) carries
   * the alert, e.g. 0x174 certificate_required.
   */
  connected: boolean;
  /**
   * Why the handshake failed: how the connection closed, e.g. "connection
   * closed: error 0x12a (TLS alert bad_certificate) sent by this client:
   * hostname 'c.test' doesn't match ..." or "... sent by the server: ...".
   */
  handshake_error: string | null;
  alpn: string | null;
  responses: H3Response[];
  connection_terminated: { error_code: number; reason: string } | null;
  /** The stream ID of a GOAWAY the server sent, if any. */
  goaway?: number | null;
  session_resumed?: boolean;
  early_data_accepted?: boolean;
  /** With session_ticket_out: whether a ticket arrived. */
  session_ticket?: boolean;
  /**
   * What the server presented: the SHA-256 (lowercase hex) of each
   * certificate's DER, leaf first, also when the handshake then failed;
   * empty when no Certificate message came (a resumed session has none).
   */
  peer_chain_sha256: string[];
}

/** `connections` clients at once, each running `plan`. */
export async function runClients(port: number, plan: Plan, connections: number, host = '127.0.0.1'): Promise<ClientResult[]> {
  const out = await runPythonClient<{ connections: ClientResult[] }>(CLIENT, port, { ...plan, connections }, host);
  return out.connections;
}

/** Runs one of the Python clients in test/helpers/clients with a JSON plan on stdin; resolves with its JSON result. */
export function runPythonClient<T>(script: string, port: number, plan: unknown, host = '127.0.0.1'): Promise<T> {
  return runJsonProcess<T>(PYTHON, [script, '--host', host, '--port', String(port)], plan, path.basename(script));
}

export function runClient(port: number, plan: Plan, host = '127.0.0.1'): Promise<ClientResult> {
  return runPythonClient<ClientResult>(CLIENT, port, plan, host);
}

/** One request on its own connection. */
export async function request(port: number, req: PlannedRequest, timeout = 5): Promise<H3Response> {
  const result = await runClient(port, { timeout, requests: [req] });
  if (!result.connected) throw new Error(`handshake failed: ${result.handshake_error}`);
  return result.responses[0];
}

/** Looks up a response field the way a test should: on the raw decoded lines. */
export function field(res: H3Response, name: string): string | undefined {
  return res.headers.find(([n]) => n === name)?.[1];
}

export function b64(data: Buffer | string): string {
  return Buffer.from(data).toString('base64');
}
