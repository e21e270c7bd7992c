// Headless Chromium as an HTTP/3 client: fetch() from a blank page on the
// server's own origin (so every request is same-origin and WebTransport runs
// in a secure context), in a fresh browser context per batch. Launched by
// ../chromium.ts, forced onto QUIC for the origins and trusting the demo
// certificate by its SPKI hash; or handed a browser launched otherwise
// (the TCP-side tests' Chromium, which speaks h2 or HTTP/1.1).
//
// What a browser will not do as told, and what the adapter does instead:
//   - it sends its cookie jar, not a cookie header: before each request the
//     jar is emptied and filled with the cookies of the request's own
//     `cookie` field, so it sends exactly those, as the other clients do;
//   - fetch() hides Set-Cookie and follows redirects: the field lines and,
//     for a redirect, the redirect's own status come from the browser's
//     network events, as received (the followed request is made, its answer
//     not reported);
//   - it reports the protocol only through Resource Timing
//     (`nextHopProtocol`); where no entry appears the protocol is
//     "unreported".
import type { BrowserContext, Page, Request, Response } from 'playwright-core';
import { launchChromium, Launched } from '../chromium';
import { PATTERN_PERIOD } from '../pattern';
import { ClientRequest, ClientResponse, FetchOptions, H3Client, WtOutcome } from './adapter';

/**
 * Runs in the page: one fetch(), the body read with a reader so each
 * piece's arrival time is known. The upload body is the pattern, made by
 * a ReadableStream's pull() as Chromium asks for it (or put in a Blob).
 */
const PAGE_FETCH = `async (r) => {
  const PERIOD = ${PATTERN_PERIOD};
  const CHUNK = 64 * 1024;
  const init = { method: r.method, headers: r.headers, credentials: 'same-origin', cache: 'no-store', redirect: 'follow' };
  if (r.body !== undefined && r.contentLength === false) {
    // The one way a browser sends a body without content-length: a stream.
    const bytes = new TextEncoder().encode(r.body);
    init.body = new ReadableStream({ start(controller) { controller.enqueue(bytes); controller.close(); } });
    init.duplex = 'half';
  } else if (r.body !== undefined) init.body = r.body;
  if (r.bodyLen) init.body = 'x'.repeat(r.bodyLen);
  if (r.uploadBytes) {
    const base = new Uint8Array(CHUNK + PERIOD);
    for (let i = 0; i < base.length; i++) base[i] = i % PERIOD;
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
    if (res.body) {
      const reader = res.body.getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        chunks.push({ t: Math.round((performance.now() - t0) * 10) / 10, bytes: value.byteLength });
        bytes += value.byteLength;
        if (bytes <= 1048576) parts.push(value);
      }
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
      redirected: res.redirected,
      headers: [...res.headers],
      body: new TextDecoder().decode(all),
      bodyBytes: bytes,
      bodySha256: sha,
      chunks,
      totalMs: Math.round(performance.now() - t0),
      protocol: entries.length && entries[entries.length - 1].nextHopProtocol ? entries[entries.length - 1].nextHopProtocol : 'unreported',
    };
  } catch (e) {
    return { status: null, headers: [], body: '', bodyBytes: 0, bodySha256: '', chunks: [], totalMs: Math.round(performance.now() - t0), error: String(e) };
  }
}`;

const WT_SCRIPT = `async (url, streamText, datagramText) => {
  const wt = new WebTransport(url);
  await wt.ready;
  const bidi = await wt.createBidirectionalStream();
  const w = bidi.writable.getWriter();
  await w.write(new TextEncoder().encode(streamText));
  await w.close();
  const reader = bidi.readable.getReader();
  let echo = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    echo += new TextDecoder().decode(value);
  }
  const dw = wt.datagrams.writable.getWriter();
  const dr = wt.datagrams.readable.getReader();
  let datagramEcho = '';
  for (let i = 0; i < 5 && !datagramEcho; i++) {
    await dw.write(new TextEncoder().encode(datagramText));
    const got = await Promise.race([dr.read(), new Promise((r) => setTimeout(() => r(null), 500))]);
    if (got && got.value) datagramEcho = new TextDecoder().decode(got.value);
  }
  wt.close({ closeCode: 0, reason: 'done' });
  return { echo, datagramEcho };
}`;

interface OriginPage {
  context: BrowserContext;
  page: Page;
  origin: string;
}

/**
 * A blank document on `origin` (supplied by request interception for that
 * one URL, so the server needs no page), in a fresh context.
 */
async function openOriginPage(browser: Launched, origin: string): Promise<OriginPage> {
  const context = await browser.browser.newContext();
  const page = await context.newPage();
  const url = `${origin}/__client-test-page`;
  await page.route(url, (route) => route.fulfill({ status: 200, contentType: 'text/html', body: '<!doctype html><title>test page</title>' }));
  await page.goto(url);
  return { context, page, origin };
}

async function pageFetch(target: OriginPage, req: ClientRequest, upload: 'stream' | 'blob'): Promise<ClientResponse> {
  const host = new URL(target.origin).hostname.replace(/^\[|\]$/g, '');
  await target.context.clearCookies();
  const cookie = req.headers.find(([n]) => n === 'cookie')?.[1];
  if (cookie) {
    const cookies = cookie.split(/;\s*/).map((pair) => pair.split('=')).map(([name, ...value]) => ({ name, value: value.join('='), domain: host, path: '/', secure: true }));
    await target.context.addCookies(cookies);
  }
  const headers = Object.fromEntries(req.headers.filter(([n]) => n !== 'cookie'));
  const url = new URL(req.path, target.origin).href;
  const seen = target.page.waitForResponse((r) => r.url() === url && r.request().method() === req.method, { timeout: 120000 }).catch(() => undefined);
  // fetch() follows a redirect (with 'manual' the browser aborts the
  // request and reports no response at all); the redirect's own answer is
  // the response of the request the followed one was redirected from.
  const hop: { response: Response | null } = { response: null };
  const onRequest = async (followed: Request) => {
    const from = followed.redirectedFrom();
    if (from?.url() === url) hop.response = await from.response();
  };
  target.page.on('request', onRequest);
  try {
    const x = (await target.page.evaluate(`(${PAGE_FETCH})(${JSON.stringify({ ...req, headers, upload })})`)) as ClientResponse & { redirected?: boolean };
    let response: Response | null | undefined;
    if (x.redirected) {
      // The request event reaches this process asynchronously; on a busy machine well after fetch() resolved.
      for (let waited = 0; !hop.response && waited < 3000; waited += 20) await new Promise((ok) => setTimeout(ok, 20));
      response = hop.response;
      if (!response) x.error = 'redirected, but the browser reported no redirect response';
      else Object.assign(x, { status: response.status(), body: '', bodyBytes: 0, bodySha256: '', chunks: [] });
    } else if (x.status !== null) {
      response = await seen;
    }
    if (response) x.headers = (await response.headersArray()).map(({ name, value }) => [name.toLowerCase(), value] as [string, string]);
    delete x.redirected;
    if (x.error === undefined) delete x.error;
    return x;
  } finally {
    target.page.off('request', onRequest);
  }
}

export interface ChromiumClient extends H3Client {
  /** Launches Chromium forced onto QUIC for these origins ("127.0.0.1:port"), trusting the certificate with this SPKI hash. */
  start(origins: string[], spkiSha256: string): Promise<void>;
  /** Uses a browser launched elsewhere (closed by whoever launched it). */
  use(browser: Launched): void;
}

export function chromiumClient(): ChromiumClient {
  let browser: Launched | undefined;
  let owned = false;
  const client: ChromiumClient = {
    name: 'Chromium',
    version: 'Chromium',
    async start(origins, spkiSha256) {
      client.use(await launchChromium(origins, spkiSha256));
      owned = true;
    },
    use(launched) {
      browser = launched;
      client.version = `Chromium ${launched.browser.version()} headless (Debian chromium, playwright-core)`;
    },
    cannot: () => null,
    cannotWebTransport: null,
    async fetch(port: number, reqs: ClientRequest[], { host = '127.0.0.1', upload = 'stream' }: FetchOptions = {}) {
      if (!browser) throw new Error('chromiumClient: start() or use() first');
      const target = await openOriginPage(browser, `https://${host.includes(':') ? `[${host}]` : host}:${port}`);
      try {
        const out: ClientResponse[] = [];
        for (const r of reqs) out.push(await pageFetch(target, r, upload));
        return out;
      } finally {
        await target.context.close();
      }
    },
    async webTransport(port: number, stream: string, datagram: string): Promise<WtOutcome> {
      if (!browser) throw new Error('chromiumClient: start() or use() first');
      const target = await openOriginPage(browser, `https://127.0.0.1:${port}`);
      try {
        const r = (await target.page.evaluate(
          `(${WT_SCRIPT})(${JSON.stringify(`https://127.0.0.1:${port}/wt`)}, ${JSON.stringify(stream)}, ${JSON.stringify(datagram)})`,
        )) as { echo: string; datagramEcho: string };
        // The session opened (wt.ready resolved), which only a 2xx answer allows.
        return { status: 200, streamEcho: r.echo, datagramEcho: r.datagramEcho };
      } catch (e) {
        return { status: null, streamEcho: '', datagramEcho: '', error: String(e).split('\n')[0] };
      } finally {
        await target.context.close();
      }
    },
    async close() {
      if (owned) await browser?.close();
      browser = undefined;
    },
  };
  return client;
}
