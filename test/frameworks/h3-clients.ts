// The three HTTP/3 clients of the framework tests, each turning what it
// received into a FetchResult (cases.ts):
//   aioquic   test/helpers/clients/h3client.py (Python), as the other suites use it
//   quic-go   test/helpers/clients/quicgo (Go; its http3 client)
//   Chromium  fetch() in a page on the server's origin (playwright-core),
//             forced onto QUIC with --origin-to-force-quic-on and the
//             certificate pinned by its SPKI hash.
import path from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { launchChromium, Launched } from '../helpers/chromium';
import { buildQuicGo, QUICGO_BIN } from '../helpers/interop-clients';
import { PYTHON, ROOT } from '../helpers/paths';
import { runJsonProcess } from '../helpers/process';
import type { FetchRequest, FetchResult } from './cases';
import { PATTERN_PERIOD } from './pattern';

export type H3ClientName = 'aioquic' | 'quic-go' | 'Chromium';

const H3_CLIENT = path.join(ROOT, 'test', 'helpers', 'clients', 'h3client.py');
/** Response body kept as text (the whole body is hashed and counted). */
const BODY_KEEP = 1 << 20;
/** Upload bytes the client leaves unacknowledged in aioquic's send buffer at most. */
const UPLOAD_BUFFERED = 4 << 20;

// ------------------------------------------------------------------ aioquic

interface AioquicResponse {
  status: number | null;
  headers: [string, string][];
  body_text: string;
  body_length: number;
  body_sha256: string;
  chunks: [number, number][];
  elapsed_ms: number;
  sent_bytes: number;
  upload_ms: number | null;
  reset_code: number | null;
  error: string | null;
}

/**
 * Runs `reqs` in order on one aioquic connection. A small body goes with a
 * content-length, as curl, browsers and Go send one for a body of known
 * length; the upload goes without (framed by DATA frames and FIN alone, as
 * fetch() sends a ReadableStream), unless `contentLength` says otherwise.
 */
export async function aioquicFetch(
  port: number,
  reqs: FetchRequest[],
  { timeoutS = 120, host = '127.0.0.1', contentLength }: { timeoutS?: number; host?: string; contentLength?: boolean } = {},
): Promise<FetchResult[]> {
  const plan = {
    timeout: timeoutS,
    sequential: true,
    requests: reqs.map((r) => ({
      method: r.method,
      path: r.path,
      headers: r.headers,
      ...(r.body !== undefined ? { body_text: r.body } : {}),
      ...(r.uploadBytes ? { body_generate: { total: r.uploadBytes, pattern: true, max_buffered: UPLOAD_BUFFERED } } : {}),
      content_length: contentLength ?? !r.uploadBytes,
      body_keep: BODY_KEEP,
    })),
  };
  const out = await runJsonProcess<{ connected: boolean; handshake_error: string | null; responses: AioquicResponse[] }>(
    PYTHON,
    [H3_CLIENT, '--host', host, '--port', String(port)],
    plan,
    'h3client.py',
  );
  if (!out.connected) return reqs.map(() => failed(`aioquic handshake: ${out.handshake_error}`));
  return out.responses.map((x) => ({
    status: x.status,
    // The header section as decoded, without pseudo-headers.
    headers: x.headers.filter(([name]) => !name.startsWith(':')),
    body: x.body_text,
    bodyBytes: x.body_length,
    bodySha256: x.body_sha256,
    chunks: x.chunks.map(([t, bytes]) => ({ t, bytes })),
    totalMs: Math.round(x.elapsed_ms),
    protocol: 'h3',
    ...(x.error || x.reset_code !== null ? { error: x.error ?? `stream reset 0x${x.reset_code!.toString(16)}` } : {}),
  }));
}

// ------------------------------------------------------------------ quic-go

/**
 * The quic-go client binary: $H3_QUICGO_BIN when set, else the project's
 * (built from test/helpers/clients/quicgo when older than its sources, as the
 * interop matrix does).
 */
export function quicGoBinary(): string {
  const bin = process.env.H3_QUICGO_BIN;
  if (bin) return bin;
  buildQuicGo();
  return QUICGO_BIN;
}

interface QuicGoResponse {
  status: number;
  header_lines: [string, string][] | null;
  body: string;
  proto: string;
  error?: string;
  body_bytes: number;
  body_sha256: string;
  chunks: [number, number][] | null;
  elapsed_ms: number;
}

/** Runs `reqs` in order on one quic-go HTTP/3 connection. */
export async function quicGoFetch(port: number, reqs: FetchRequest[], timeoutMs = 120000, host = '127.0.0.1'): Promise<FetchResult[]> {
  const plan = {
    base: `https://${host}:${port}`,
    timeout_ms: timeoutMs,
    requests: reqs.map((r) => ({
      method: r.method,
      path: r.path,
      headers: r.headers,
      ...(r.body !== undefined ? { body_text: r.body } : {}),
      ...(r.uploadBytes ? { body_pattern: r.uploadBytes } : {}),
      body_keep: 1024 * 1024,
    })),
  };
  const out = await runJsonProcess<{ responses: QuicGoResponse[] }>(quicGoBinary(), [], plan, 'quicgo');
  return out.responses.map((x) => ({
    status: x.error && !x.status ? null : x.status,
    headers: x.header_lines ?? [],
    body: x.body ?? '',
    bodyBytes: x.body_bytes ?? 0,
    bodySha256: x.body_sha256 ?? '',
    chunks: (x.chunks ?? []).map(([t, bytes]) => ({ t, bytes })),
    totalMs: Math.round(x.elapsed_ms ?? 0),
    protocol: x.proto === 'HTTP/3.0' ? 'h3' : x.proto,
    ...(x.error ? { error: x.error } : {}),
  }));
}

// ----------------------------------------------------------------- Chromium

/** How Chromium sends a large body: a ReadableStream (duplex: 'half'), or a Blob made in the page first. */
export type BrowserUpload = 'stream' | 'blob';

/**
 * Runs in the page: one fetch(), the body read with a reader so each
 * piece's arrival time is known. The upload body is the pattern, made by
 * a ReadableStream's pull() as Chromium asks for it (or put in a Blob).
 */
const PAGE_FETCH = `async (r) => {
  const PERIOD = ${PATTERN_PERIOD};
  const CHUNK = 64 * 1024;
  const base = new Uint8Array(CHUNK + PERIOD);
  for (let i = 0; i < base.length; i++) base[i] = i % PERIOD;
  const init = { method: r.method, headers: r.headers, credentials: 'same-origin', cache: 'no-store', redirect: 'manual' };
  if (r.body !== undefined) init.body = r.body;
  if (r.uploadBytes) {
    if (r.upload === 'stream') {
      let off = 0;
      init.body = new ReadableStream({
        pull(controller) {
          if (off >= r.uploadBytes) { controller.close(); return; }
          const n = Math.min(CHUNK, r.uploadBytes - off);
          const start = off % PERIOD;
          controller.enqueue(base.slice(start, start + n));
          off += n;
        },
      }, { highWaterMark: 0 });
      init.duplex = 'half';
    } else {
      const parts = [];
      for (let off = 0; off < r.uploadBytes; off += CHUNK) {
        const start = off % PERIOD;
        parts.push(base.subarray(start, start + Math.min(CHUNK, r.uploadBytes - off)));
      }
      init.body = new Blob(parts);
    }
  }
  const t0 = performance.now();
  try {
    const res = await fetch(r.path, init);
    const chunks = [];
    const parts = [];
    let bytes = 0;
    const reader = res.body.getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      chunks.push({ t: Math.round((performance.now() - t0) * 10) / 10, bytes: value.byteLength });
      bytes += value.byteLength;
      if (bytes <= 1048576) parts.push(value);
    }
    const all = new Uint8Array(parts.reduce((s, p) => s + p.byteLength, 0));
    let o = 0;
    for (const p of parts) { all.set(p, o); o += p.byteLength; }
    const sha = Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', all)), (b) => b.toString(16).padStart(2, '0')).join('');
    // The resource timing entry is queued after the body completes, not
    // with it: wait for it (up to 2 s) rather than read it too early; and a
    // page that made hundreds of requests must not have filled the buffer.
    performance.setResourceTimingBufferSize(100000);
    let entries = performance.getEntriesByName(new URL(r.path, location.href).href);
    for (let i = 0; i < 40 && entries.length === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      entries = performance.getEntriesByName(new URL(r.path, location.href).href);
    }
    return {
      status: res.status,
      headers: [...res.headers],
      body: new TextDecoder().decode(all),
      bodyBytes: bytes,
      bodySha256: sha,
      chunks,
      totalMs: Math.round(performance.now() - t0),
      protocol: entries.length ? entries[entries.length - 1].nextHopProtocol : 'unreported',
    };
  } catch (e) {
    return { status: null, headers: [], body: '', bodyBytes: 0, bodySha256: '', chunks: [], totalMs: Math.round(performance.now() - t0), error: String(e) };
  }
}`;

export interface ChromiumPage {
  context: BrowserContext;
  page: Page;
  origin: string;
  close(): Promise<void>;
}

/**
 * A blank document on `origin` (supplied by request interception for that
 * one URL, so the server needs no page), in a fresh context: every fetch()
 * from it is same-origin and goes to the server.
 */
export async function openOriginPage(chrome: Launched, origin: string): Promise<ChromiumPage> {
  const context = await chrome.browser.newContext();
  const page = await context.newPage();
  const url = `${origin}/__framework-test-page`;
  await page.route(url, (route) => route.fulfill({ status: 200, contentType: 'text/html', body: '<!doctype html><title>framework test</title>' }));
  await page.goto(url);
  return { context, page, origin, close: () => context.close() };
}

/**
 * One fetch() from the page. Field lines are the raw ones the browser
 * received (playwright's headersArray(): Set-Cookie included, which fetch()
 * itself hides; duplicates kept). The browser cannot send a `cookie`
 * header of its own: a request with one sends the cookie jar instead
 * (credentials 'same-origin'), so run /cookie before /whoami.
 */
export async function chromiumFetch(target: ChromiumPage, req: FetchRequest, upload: BrowserUpload = 'stream'): Promise<FetchResult> {
  const headers = Object.fromEntries(req.headers.filter(([n]) => n !== 'cookie'));
  const url = new URL(req.path, target.origin).href;
  const seen = target.page.waitForResponse((r) => r.url() === url && r.request().method() === req.method, { timeout: 120000 }).catch(() => undefined);
  const x = (await target.page.evaluate(`(${PAGE_FETCH})(${JSON.stringify({ ...req, headers, upload })})`)) as FetchResult;
  if (x.status !== null) {
    const response = await seen;
    if (response) x.headers = (await response.headersArray()).map(({ name, value }) => [name, value] as [string, string]);
  }
  if (x.error === undefined) delete x.error;
  return x;
}

/** Chromium forced onto QUIC for these origins ("127.0.0.1:port"), trusting the certificate with this SPKI hash. */
export function launchChromiumH3(origins: string[], spkiSha256: string): Promise<Launched> {
  return launchChromium(origins, spkiSha256);
}

function failed(error: string): FetchResult {
  return { status: null, headers: [], body: '', bodyBytes: 0, bodySha256: '', chunks: [], totalMs: 0, error };
}
