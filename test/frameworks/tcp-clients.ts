// Node's own clients over TCP+TLS for the framework tests: HTTP/2
// (http2.connect) and HTTP/1.1 (https), reporting a FetchResult.
import crypto from 'node:crypto';
import http2 from 'node:http2';
import https from 'node:https';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FetchRequest, FetchResult } from './cases';
import { patternChunks } from '../helpers/pattern';

const TEXT_CAP = 1024 * 1024;

/** Collects a response body: length, SHA-256, arrival times, text up to a cap. */
class BodySink {
  private readonly hash = crypto.createHash('sha256');
  private readonly parts: Buffer[] = [];
  private kept = 0;
  bytes = 0;
  readonly chunks: { t: number; bytes: number }[] = [];
  constructor(private readonly started: number) {}
  add(chunk: Buffer): void {
    this.chunks.push({ t: Math.round((performance.now() - this.started) * 10) / 10, bytes: chunk.length });
    this.bytes += chunk.length;
    this.hash.update(chunk);
    if (this.kept < TEXT_CAP) {
      this.parts.push(chunk);
      this.kept += chunk.length;
    }
  }
  result(): Pick<FetchResult, 'body' | 'bodyBytes' | 'bodySha256' | 'chunks'> {
    return { body: Buffer.concat(this.parts).toString('utf8'), bodyBytes: this.bytes, bodySha256: this.hash.digest('hex'), chunks: this.chunks };
  }
}

/** Writes the request body to `dest`: the small text body, or the pattern generated chunk by chunk (backpressure respected). */
async function sendBody(req: FetchRequest, dest: Writable): Promise<void> {
  if (req.uploadBytes) {
    await pipeline(Readable.from(patternChunks(req.uploadBytes)), dest);
  } else {
    dest.end(req.body);
  }
}

/** One request on an HTTP/2 session. */
export function h2Fetch(session: http2.ClientHttp2Session, req: FetchRequest): Promise<FetchResult> {
  const started = performance.now();
  const headers: http2.OutgoingHttpHeaders = { ':method': req.method, ':path': req.path };
  for (const [n, v] of req.headers) headers[n] = v;
  const stream = session.request(headers, { endStream: false });
  const sink = new BodySink(started);
  return new Promise((resolve) => {
    let status: number | null = null;
    const lines: [string, string][] = [];
    let done = false;
    const finish = (error?: string) => {
      if (done) return;
      done = true;
      resolve({ status, headers: lines, ...sink.result(), totalMs: Math.round(performance.now() - started), protocol: 'h2', ...(error ? { error } : {}) });
    };
    stream.on('response', (h) => {
      status = Number(h[':status']);
      // The client has no raw header list: repeated fields (set-cookie) come as arrays.
      for (const [n, v] of Object.entries(h)) {
        if (n.startsWith(':')) continue;
        for (const one of Array.isArray(v) ? v : [v]) lines.push([n, String(one)]);
      }
    });
    stream.on('data', (c: Buffer) => sink.add(c));
    stream.on('end', () => finish());
    stream.on('error', (e) => finish(String(e)));
    stream.on('close', () => finish(status === null ? `stream closed (code ${stream.rstCode})` : undefined));
    sendBody(req, stream).catch((e) => finish(`sending: ${e}`));
  });
}

/** One request over HTTP/1.1 (a fresh TLS connection each time). */
export function h1Fetch(port: number, req: FetchRequest, host = '127.0.0.1'): Promise<FetchResult> {
  const started = performance.now();
  const sink = new BodySink(started);
  return new Promise((resolve) => {
    let done = false;
    let status: number | null = null;
    const lines: [string, string][] = [];
    const finish = (error?: string) => {
      if (done) return;
      done = true;
      resolve({ status, headers: lines, ...sink.result(), totalMs: Math.round(performance.now() - started), protocol: 'http/1.1', ...(error ? { error } : {}) });
    };
    const r = https.request(
      {
        host,
        port,
        method: req.method,
        path: req.path,
        headers: Object.fromEntries(req.headers),
        rejectUnauthorized: false,
        agent: false,
      },
      (res) => {
        status = res.statusCode ?? null;
        for (let i = 0; i < res.rawHeaders.length; i += 2) lines.push([res.rawHeaders[i], res.rawHeaders[i + 1]]);
        res.on('data', (c: Buffer) => sink.add(c));
        res.on('end', () => finish());
        res.on('error', (e) => finish(String(e)));
      },
    );
    r.on('error', (e) => finish(String(e)));
    sendBody(req, r).catch((e) => finish(`sending: ${e}`));
  });
}

export function h2Connect(port: number, host = '127.0.0.1'): Promise<http2.ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    const s = http2.connect(`https://${host}:${port}`, { rejectUnauthorized: false });
    s.once('connect', () => resolve(s));
    s.once('error', reject);
  });
}

export function h2Close(session: http2.ClientHttp2Session): Promise<void> {
  return new Promise((resolve) => session.close(() => resolve()));
}
