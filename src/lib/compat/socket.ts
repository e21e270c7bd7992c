// What Node code reads as `req.socket`: the peer's address and port, TLS
// facts, and a 'close' event. HTTP/3 has no socket per request (one UDP
// socket serves every connection, and a connection carries many requests),
// so there are two kinds of object, each an EventEmitter:
//
// - Http3ConnectionSocket, one per QUIC connection: the server's
//   'connection' event hands it out; it emits 'close' when the connection
//   closes.
// - Http3StreamSocket, one per request, made on first access of
//   req.socket / res.socket: what node:http2's compatibility API gives
//   (a socket-like proxy per stream). Per request because request-scoped
//   libraries treat the socket as the exchange: on-finished (Express,
//   serve-static, morgan) waits for socket 'close' to learn that a client
//   went away and to close the file it was sending, and finalhandler calls
//   req.socket.destroy() to abandon a response whose headers are out. With
//   one object per connection, the first would wait (and hold its
//   listeners) until the whole connection closed and the second would do
//   nothing.
import { X509Certificate } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { DetailedPeerCertificate, PeerCertificate } from 'node:tls';
import type { ConnectionHandle } from '../request-stream';
import { noSocketManipulation } from './errors';

export interface SocketAddress {
  address: string;
  family: string;
  port: number;
}

/** OpenSSL's names for the X509_V_ERR_* codes a client certificate fails with, as node:tls reports them. */
const VERIFY_ERRORS: Record<number, string> = {
  2: 'UNABLE_TO_GET_ISSUER_CERT',
  4: 'UNABLE_TO_DECRYPT_CERT_SIGNATURE',
  6: 'UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY',
  7: 'CERT_SIGNATURE_FAILURE',
  9: 'CERT_NOT_YET_VALID',
  10: 'CERT_HAS_EXPIRED',
  13: 'ERROR_IN_CERT_NOT_BEFORE_FIELD',
  14: 'ERROR_IN_CERT_NOT_AFTER_FIELD',
  18: 'DEPTH_ZERO_SELF_SIGNED_CERT',
  19: 'SELF_SIGNED_CERT_IN_CHAIN',
  20: 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  21: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  22: 'CERT_CHAIN_TOO_LONG',
  23: 'CERT_REVOKED',
  24: 'INVALID_CA',
  25: 'PATH_LENGTH_EXCEEDED',
  26: 'INVALID_PURPOSE',
  27: 'CERT_UNTRUSTED',
  28: 'CERT_REJECTED',
};

/** The parts of net.Socket / tls.TLSSocket that HTTP code reads, for one QUIC connection. */
abstract class QuicSocketBase extends EventEmitter {
  /** @internal */
  protected readonly handle: ConnectionHandle;
  readonly encrypted = true;
  readonly alpnProtocol = 'h3';

  protected constructor(handle: ConnectionHandle) {
    super();
    this.handle = handle;
  }

  get remoteAddress(): string {
    return this.handle.remoteAddress;
  }
  get remotePort(): number {
    return this.handle.remotePort;
  }
  get remoteFamily(): 'IPv4' | 'IPv6' {
    return this.handle.remoteFamily;
  }
  get localAddress(): string {
    return this.handle.localAddress;
  }
  get localPort(): number {
    return this.handle.localPort;
  }
  /** The server's connection ID, hex (not a Node socket field; handy in logs). */
  get connectionId(): string {
    return this.handle.cid;
  }

  abstract get destroyed(): boolean;

  get readable(): boolean {
    return !this.destroyed;
  }
  get writable(): boolean {
    return !this.destroyed;
  }

  address(): SocketAddress {
    return { address: this.localAddress, family: this.handle.remoteFamily, port: this.localPort };
  }

  /** node:tls's: the client's certificate verified against `ca` (only with `requestCert`). */
  get authorized(): boolean {
    return this.handle.clientCertificate?.verifyError === 0;
  }

  /** node:tls's: why the client's certificate did not verify (OpenSSL's code name), else undefined. */
  get authorizationError(): string | undefined {
    const code = this.handle.clientCertificate?.verifyError;
    return code ? (VERIFY_ERRORS[code] ?? `X509_V_ERR_${code}`) : undefined;
  }

  /**
   * node:tls's: the client's certificate as an object ({} when there is
   * none: no `requestCert`, or the client sent none); `detailed` links each
   * to its issuer through `issuerCertificate`, as far as the client's chain goes.
   */
  getPeerCertificate(detailed = false): PeerCertificate | DetailedPeerCertificate | Record<string, never> {
    const chain = this.handle.clientCertificate?.chain ?? [];
    if (chain.length === 0) return {};
    const objects = chain.map((der) => new X509Certificate(der).toLegacyObject() as DetailedPeerCertificate);
    if (!detailed) return objects[0];
    for (let i = 0; i < objects.length; i++) {
      const next = objects[i + 1];
      // The last one links to itself when it signed itself (a root), as node:tls does.
      if (next) objects[i].issuerCertificate = next;
      else if (new X509Certificate(chain[i]).checkIssued(new X509Certificate(chain[i]))) objects[i].issuerCertificate = objects[i];
    }
    return objects[0];
  }

  /** node:tls's: the client's certificate as a crypto.X509Certificate, if it sent one. */
  getPeerX509Certificate(): X509Certificate | undefined {
    const leaf = this.handle.clientCertificate?.chain[0];
    return leaf ? new X509Certificate(leaf) : undefined;
  }

  // QUIC's own mechanisms cover these (keep-alive by PING, no Nagle); they
  // exist so code written for TCP sockets runs unchanged.
  setKeepAlive(): this {
    return this;
  }
  setNoDelay(): this {
    return this;
  }
  ref(): this {
    return this;
  }
  unref(): this {
    return this;
  }

  // An HTTP/3 request is not a byte pipe; writing HTTP/1 bytes here would be a bug.
  write(): never {
    throw noSocketManipulation('write');
  }
  read(): never {
    throw noSocketManipulation('read');
  }
  pause(): never {
    throw noSocketManipulation('pause');
  }
  resume(): never {
    throw noSocketManipulation('resume');
  }
}

/** One QUIC connection, as the server's 'connection' event hands it out. */
export class Http3ConnectionSocket extends QuicSocketBase {
  #closed = false;

  /** @internal */
  constructor(handle: ConnectionHandle) {
    super(handle);
    // Request-scoped code may listen here for the length of a request; a
    // connection carries up to maxStreamsPerConnection of them at once.
    this.setMaxListeners(0);
  }

  get destroyed(): boolean {
    return this.#closed || !this.handle.open;
  }

  /**
   * Does nothing: the stream interface has no command to close a single
   * connection (yet). Request-level code should destroy the request's own
   * socket (req.socket), which resets that stream.
   */
  destroy(): this {
    return this;
  }

  /** Idle timeouts are per connection in QUIC (the server's idleTimeoutMs); per-request ones are req.setTimeout. */
  setTimeout(_ms: number, callback?: () => void): this {
    if (callback) this.once('timeout', callback);
    return this;
  }

  /** @internal The connection closed: emits 'close' once. */
  markClosed(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.emit('close', false);
  }
}

/** What a request's socket view needs from its exchange. */
export interface SocketOwner {
  /** Resets the request's stream (unless its response is complete). */
  destroy(error?: Error): void;
  /** Ends the response. */
  end(): void;
  setTimeout(ms: number): void;
}

/**
 * One request's socket, as req.socket and res.socket return it (the same
 * object for both). Emits 'close' when the exchange ends (response
 * finished, stream reset, connection closed).
 */
export class Http3StreamSocket extends QuicSocketBase {
  #closed = false;
  readonly #owner: SocketOwner;

  /** @internal */
  constructor(handle: ConnectionHandle, owner: SocketOwner) {
    super(handle);
    this.#owner = owner;
  }

  get destroyed(): boolean {
    return this.#closed;
  }

  /** Resets this request's stream (H3_INTERNAL_ERROR with an error, else H3_REQUEST_CANCELLED) unless its response is complete. */
  destroy(error?: Error): this {
    this.#owner.destroy(error);
    return this;
  }

  end(): this {
    this.#owner.end();
    return this;
  }

  /** The request's idle timeout (req.setTimeout). */
  setTimeout(ms: number, callback?: () => void): this {
    if (callback) this.on('timeout', callback);
    this.#owner.setTimeout(ms);
    return this;
  }

  /** @internal The exchange ended: emits 'close' once. */
  markClosed(hadError: boolean): void {
    if (this.#closed) return;
    this.#closed = true;
    this.emit('close', hadError);
  }
}
