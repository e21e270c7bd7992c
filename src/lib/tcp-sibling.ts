// The TCP sibling: the same request listener served over TLS on TCP (HTTP/2,
// and HTTP/1.1 unless turned off) on the same port number as the HTTP/3
// server's UDP socket, with `alt-svc: h3=":<port>"` on every response. A
// client that cannot use UDP (a firewall, curl without HTTP/3, Node's own
// fetch) is still served, and a browser, which always starts on TCP unless
// an HTTPS DNS record says otherwise, learns from Alt-Svc that it may switch
// to HTTP/3. The compatibility server (compat/) and serve() start one after
// their UDP side is bound; README "The TCP sibling and Alt-Svc".
import http2 from 'node:http2';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type net from 'node:net';
import type tls from 'node:tls';

/** What the sibling hands to the listener: node:http2's compatibility objects, or node:http's for HTTP/1.1. */
export type TcpRequest = http2.Http2ServerRequest | IncomingMessage;
export type TcpResponse = http2.Http2ServerResponse | ServerResponse;
export type TcpListener = (req: TcpRequest, res: TcpResponse) => void;

export interface TcpSiblingOptions {
  /**
   * The TCP port: the UDP side's actual port, already bound (so an ephemeral
   * UDP port 0 has been resolved by then). Must be 1-65535: with 0 the two
   * sides would end up on different numbers and Alt-Svc would point at a
   * port the browser already uses for TCP only by chance.
   */
  port: number;
  /** Local address; "::" (dual-stack, as on the UDP side) when omitted, "0.0.0.0" where the host has no IPv6. */
  host?: string;
  /** PEM certificate chain (contents, not a path), as node:tls takes it. */
  cert?: string | Buffer;
  /** PEM private key (contents, not a path). */
  key?: string | Buffer;
  /** Further node:tls options (SNICallback, requestCert, ca...), and `cert`/`key` when not given above. */
  tls?: tls.TlsOptions;
  /** The UDP port advertised in Alt-Svc; `port` when omitted (a proxy in front may map it). */
  altSvcPort?: number;
  /** Alt-Svc `ma`, seconds the client may remember the alternative (default 86400, one day). */
  maxAge?: number;
  /**
   * Serve HTTP/1.1 too (ALPN http/1.1 or no ALPN). Default true. The
   * listener then also gets node:http's IncomingMessage/ServerResponse,
   * which have no pseudo-headers; node:http2's own default is false for
   * that reason, and the compatibility server passes its `allowHTTP1` here.
   */
  allowHTTP1?: boolean;
  listener: TcpListener;
  /** Errors of the TCP server after it is listening (the default logs them with console.error). */
  onError?: (err: Error) => void;
  /** close(): how long open requests may take before their connections are destroyed (default 3000 ms, as on the UDP side). */
  closeTimeoutMs?: number;
}

export interface TcpSibling {
  readonly server: http2.Http2SecureServer;
  /** The value added to every response. */
  readonly altSvc: string;
  address(): AddressInfo;
  /**
   * Stops accepting, sends GOAWAY on HTTP/2 sessions, closes idle HTTP/1.1
   * connections now and busy ones after their response; what is still open
   * after `closeTimeoutMs` is destroyed. Resolves when every connection is gone.
   */
  close(): Promise<void>;
}

/** The Alt-Svc field value advertising HTTP/3 on `port` of the same host (RFC 7838; "h3" is RFC 9114's ALPN token). */
export function altSvcValue(port: number, maxAge = 86400): string {
  return `h3=":${port}"; ma=${maxAge}`;
}

/** Starts the TCP sibling; rejects with a one-line Error (port in use, bad port, bad identity). */
export async function startTcpSibling(options: TcpSiblingOptions): Promise<TcpSibling> {
  const { port, listener } = options;
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new RangeError(`TCP sibling port must be the UDP side's bound port, 1-65535, got ${port}`);
  }
  const altSvc = altSvcValue(options.altSvcPort ?? port, options.maxAge ?? 86400);
  const closeTimeoutMs = options.closeTimeoutMs ?? 3000;
  const onError = options.onError ?? ((e: Error) => console.error(`h3-node: TCP sibling: ${e.message}`));

  let server: http2.Http2SecureServer;
  try {
    const identity = options.cert !== undefined ? { cert: options.cert, key: options.key } : {};
    server = http2.createSecureServer({ ...options.tls, ...identity, allowHTTP1: options.allowHTTP1 ?? true });
  } catch (e) {
    throw new Error(`TCP sibling: bad certificate or key: ${(e as Error).message}`);
  }

  // What close() needs: every TCP socket (for the hard deadline, handshakes
  // included), HTTP/2 sessions (GOAWAY) and, per HTTP/1.1 socket, how many
  // responses are in flight (an idle keep-alive socket is closed at once; a
  // busy one after its response). server.close() alone would wait for all
  // of them, keep-alive included, for minutes.
  const sockets = new Set<net.Socket>();
  const sessions = new Set<http2.ServerHttp2Session>();
  const http1InFlight = new Map<tls.TLSSocket, Set<TcpResponse>>();
  let closing = false;

  server.on('connection', (socket: net.Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  server.on('session', (session: http2.ServerHttp2Session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
    if (closing) session.close();
  });
  server.on('secureConnection', (socket: tls.TLSSocket) => {
    if (socket.alpnProtocol === 'h2') return; // its session is tracked above
    http1InFlight.set(socket, new Set());
    socket.once('close', () => http1InFlight.delete(socket));
  });

  server.on('request', (req: TcpRequest, res: TcpResponse) => {
    // Set before the app runs, so the app's own writeHead(status, fields)
    // merges with it (both node:http and node:http2 merge), and an app that
    // sets its own alt-svc has the last word. Set again as the header
    // section is written if it is gone by then: an error handler that
    // clears every header (Koa's) would otherwise send a response without
    // it. Both node:http and node:http2 write their headers through
    // writeHead (implicit headers too).
    res.setHeader('alt-svc', altSvc);
    const writeHead = res.writeHead;
    (res as { writeHead: unknown }).writeHead = function (this: TcpResponse, ...args: unknown[]) {
      if (!this.headersSent && !this.hasHeader('alt-svc')) this.setHeader('alt-svc', altSvc);
      return (writeHead as (...a: unknown[]) => unknown).apply(this, args);
    };
    if (req.httpVersionMajor < 2) countHttp1(req.socket as tls.TLSSocket, res);
    listener(req, res);
  });

  function countHttp1(socket: tls.TLSSocket, res: TcpResponse): void {
    const inFlight = http1InFlight.get(socket);
    if (!inFlight) return;
    inFlight.add(res);
    if (closing) res.setHeader('connection', 'close');
    res.once('close', () => {
      inFlight.delete(res);
      if (closing && inFlight.size === 0) socket.end();
    });
  }

  const host = options.host ?? '::';
  const bound = await listenOnce(server, port, host).catch((e: NodeJS.ErrnoException) => {
    // As on the UDP side: the dual-stack default falls back to IPv4 where the host has no IPv6.
    if (options.host === undefined && (e.code === 'EAFNOSUPPORT' || e.code === 'EADDRNOTAVAIL')) {
      return listenOnce(server, port, '0.0.0.0');
    }
    throw e;
  }).catch((e: NodeJS.ErrnoException) => {
    const message =
      e.code === 'EADDRINUSE'
        ? `TCP port ${port} on ${host} is already in use (the HTTP/3 side has UDP ${port}; turn the TCP sibling off to serve HTTP/3 only)`
        : e.code === 'EACCES'
          ? `TCP port ${port} on ${host}: permission denied`
          : `cannot listen on TCP port ${port} on ${host}: ${e.message}`;
    // The code stays, as on node:net's errors: listen(0) picks another port on EADDRINUSE.
    throw Object.assign(new Error(message), { code: e.code, syscall: 'listen', address: host, port });
  });
  server.on('error', onError);

  let closed: Promise<void> | undefined;
  return {
    server,
    altSvc,
    address: () => bound,
    close() {
      closed ??= new Promise<void>((resolve) => {
        closing = true;
        const deadline = setTimeout(() => {
          for (const session of sessions) session.destroy();
          for (const socket of sockets) socket.destroy();
        }, closeTimeoutMs);
        deadline.unref();
        server.close(() => {
          clearTimeout(deadline);
          resolve();
        });
        for (const session of sessions) session.close();
        for (const [socket, inFlight] of http1InFlight) {
          if (inFlight.size === 0) socket.end();
          // Tells the client this connection ends with the response, where it is not yet under way.
          for (const res of inFlight) if (!res.headersSent) res.setHeader('connection', 'close');
        }
      });
      return closed;
    },
  };
}

function listenOnce(server: net.Server, port: number, host: string): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    const onError = (e: Error) => reject(e);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve(server.address() as AddressInfo);
    });
  });
}
