// STUB (being written): the native core's lifecycle with request streams
// handed to one callback. createServer (the demo exchange), createSecureServer
// (node:http2 compatibility) and serve (fetch) each hold one.
import type { ConnectionHandle, RequestStream } from './request-stream';
import type { Logger } from './log';

export interface CoreOptions {
  cert?: string;
  key?: string;
  /** Buffered mode: the core buffers up to this many body bytes (else 413). Omitted: streamed bodies. */
  bodyWindow?: number;
  /** Streamed mode: bytes read ahead of what the consumer took, per stream (default 64 KiB). */
  bodyCredit?: number;
  idleTimeoutMs?: number;
  handshakeTimeoutMs?: number;
  maxConnections?: number;
  maxStreamsPerConnection?: number;
  maxFieldSectionSize?: number;
  webtransport?: boolean;
  keyLogFile?: string | false;
  qlogDir?: string;
  logger?: Logger;
}

export interface StreamServerEvents {
  /** A request's header section arrived. */
  onStream(stream: RequestStream): void;
  onConnection?(conn: ConnectionHandle): void;
  onConnectionClose?(conn: ConnectionHandle): void;
  /** The core stopped; nothing follows. */
  onClose(): void;
}

export interface AddressInfo {
  address: string;
  family: string;
  port: number;
}

export class StreamServer {
  constructor(_options: CoreOptions, _events: StreamServerEvents) {
    throw new Error('StreamServer: not yet implemented');
  }

  /** Binds and starts; throws a one-line Error (port in use, bad identity). */
  listen(_port: number, _host: string): AddressInfo {
    throw new Error('not yet implemented');
  }

  address(): AddressInfo | null {
    return null;
  }

  /** Graceful: GOAWAY, in-flight requests finish (up to 3 s). Otherwise every connection closes now. */
  close(_graceful: boolean): Promise<void> {
    return Promise.resolve();
  }
}
