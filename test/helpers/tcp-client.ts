// HTTP/2 and HTTP/1.1 clients over TLS for the TCP sibling and serve()
// tests, trusting the demo certificate (its SANs name localhost,
// 127.0.0.1 and ::1).
import fs from 'node:fs';
import http2 from 'node:http2';
import https from 'node:https';
import type { IncomingHttpHeaders } from 'node:http';
import { DEMO_CERT, DEMO_KEY } from '../../src/lib/identity';

export const demoCert = fs.readFileSync(DEMO_CERT);
export const demoKey = fs.readFileSync(DEMO_KEY);

export interface TcpReply {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export interface TcpRequestOptions {
  method?: string;
  path?: string;
  headers?: Record<string, string | string[]>;
  body?: Buffer | string;
  host?: string;
}

/** One HTTP/2 request on a fresh session (closed afterwards). */
export async function h2Request(port: number, options: TcpRequestOptions = {}): Promise<TcpReply> {
  const session = http2.connect(`https://${urlHost(options.host ?? '127.0.0.1')}:${port}`, { ca: demoCert });
  try {
    return await h2On(session, options);
  } finally {
    session.close();
  }
}

/** One HTTP/2 request on an existing session. */
export function h2On(session: http2.ClientHttp2Session, options: TcpRequestOptions = {}): Promise<TcpReply> {
  return new Promise((resolve, reject) => {
    session.once('error', reject);
    const stream = session.request({ ':method': options.method ?? 'GET', ':path': options.path ?? '/', ...options.headers });
    let headers: IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    stream.on('response', (h) => (headers = h));
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      session.off('error', reject);
      resolve({ status: Number(headers[':status']), headers, body: Buffer.concat(chunks) });
    });
    stream.on('error', reject);
    stream.end(options.body);
  });
}

/** One HTTP/1.1 request (no keep-alive unless `agent` is given). */
export function h1Request(port: number, options: TcpRequestOptions & { agent?: https.Agent } = {}): Promise<TcpReply> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: options.host ?? '127.0.0.1',
        port,
        method: options.method ?? 'GET',
        path: options.path ?? '/',
        headers: options.headers,
        ca: demoCert,
        // Verified as localhost, whatever Host field the test sends.
        servername: 'localhost',
        // No ALPN (node:https offers none): the server's allowHTTP1 path answers.
        agent: options.agent ?? false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

function urlHost(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}
