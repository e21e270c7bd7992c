// The default TCP side of createSecureServer: node:http2's secure server on
// the same port number, serving the same 'request' listeners, with
// `alt-svc: h3=":<port>"` on every response so browsers learn of HTTP/3
// (src/lib/tcp-sibling.ts does the work; this adapts it to the server).
import http2 from 'node:http2';
import type { TlsOptions } from 'node:tls';
import { startTcpSibling, TcpSibling } from '../tcp-sibling';
import { pinHttp2Members, swapsHttp1Prototypes } from './express-shadow';
import type { Logger } from '../log';
import { holdToDeclaredLength } from './tcp-length';
import type { Http3SecureServer, TcpSide } from './server';

export function defaultTcpSide(server: Http3SecureServer, tlsOptions: () => TlsOptions, allowHTTP1: boolean, logger: Logger): TcpSide {
  let sibling: TcpSibling | undefined;
  return {
    async listen(port, host) {
      sibling = await startTcpSibling({
        port,
        host: host ?? '::',
        tls: tlsOptions(),
        allowHTTP1,
        // The same listeners as HTTP/3 requests: 'request' on the server.
        listener: (req, res) => {
          const listeners = server.listeners('request');
          if (listeners.length === 0) {
            res.statusCode = 404;
            res.end();
            return;
          }
          // HTTP/2 requests come as node:http2's compat objects; an Express
          // app would swap their prototypes away (HTTP/1.1 ones are
          // node:http's own and survive it).
          if (req instanceof http2.Http2ServerRequest && listeners.some(swapsHttp1Prototypes)) {
            pinHttp2Members(req, res as http2.Http2ServerResponse);
          }
          holdToDeclaredLength(req, res, logger);
          server.emit('request', req, res);
        },
        onError: (e) => server.emit('error', e),
      });
    },
    setSecureContext(options) {
      sibling?.server.setSecureContext(options);
    },
    async close() {
      const s = sibling;
      sibling = undefined;
      await s?.close();
    },
  };
}
