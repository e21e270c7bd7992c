// `--demo-page PORT`: serves the Profile B page over plain HTTP/1.1 on
// localhost. Loopback http:// is a secure context, which WebTransport
// requires, without a second certificate. `/stats` here is the very
// document the Profile B server answers on its own `/stats`: the page
// cannot read that one cross-origin (Profile B sends no CORS fields, and its
// routes stay as the spec has them), so the same WebTransportStats object is
// served on the page's origin.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { WebTransportStats } from '../webtransport-stats';
import { renderPage } from './page';

export interface DemoPageOptions {
  /** TCP port for the page; 0 picks a free one. */
  port: number;
  /** 127.0.0.1 by default. */
  host?: string;
  /** UDP port of the Profile B server the page connects to. */
  wtPort: number;
  /** The Profile B server's SPKI hash, for the Chromium flags shown on the page. */
  spki: string;
  stats: WebTransportStats;
}

export interface DemoPage {
  readonly port: number;
  readonly url: string;
  close(): Promise<void>;
}

export function serveDemoPage(options: DemoPageOptions): Promise<DemoPage> {
  const host = options.host ?? '127.0.0.1';
  const page = renderPage({ wtPort: options.wtPort, spki: options.spki });
  const httpServer = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end('method not allowed\n');
    } else if (path === '/' || path === '/index.html') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }).end(page);
    } else if (path === '/stats') {
      res
        .writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' })
        .end(`${JSON.stringify(options.stats.snapshot())}\n`);
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    }
  });
  return new Promise((resolve, reject) => {
    httpServer.once('error', (e: NodeJS.ErrnoException) =>
      reject(new Error(e.code === 'EADDRINUSE' ? `demo page port ${options.port} on ${host} is already in use` : `cannot serve the demo page: ${e.message}`)),
    );
    httpServer.listen(options.port, host, () => {
      const port = (httpServer.address() as AddressInfo).port;
      resolve({
        port,
        url: `http://${host.includes(':') ? `[${host}]` : host}:${port}/`,
        close: () =>
          new Promise<void>((r) => {
            httpServer.close(() => r());
            httpServer.closeAllConnections();
          }),
      });
    });
  });
}
