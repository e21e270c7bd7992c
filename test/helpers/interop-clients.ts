// The four independent HTTP/3 clients of the interop matrix, behind one
// interface: run a list of plain requests against an origin, and (where
// the client speaks it) open a WebTransport session, echo one stream and
// one datagram. Each adapter says precisely why it cannot do something.
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { b64, runClient } from './h3client';
import { runWt } from './wt-client';
import { launchChromium, Launched } from './chromium';
import { PYTHON, ROOT } from './paths';
import { runJsonProcess } from './process';

export interface InteropRequest {
  method: string;
  path: string;
  headers: [string, string][];
  bodyLen: number;
}

export interface InteropResponse {
  status: number | null;
  headers: Record<string, string>;
  body: string;
  /** The HTTP version the client reports it used, where it reports one. */
  protocol?: string;
  error?: string;
}

export interface WtOutcome {
  status: number | null;
  streamEcho: string;
  datagramEcho: string;
  error?: string;
}

export interface InteropClient {
  name: string;
  version: string;
  /** Why this client cannot run a request with these properties, or null. */
  cannot(req: InteropRequest): string | null;
  /** Why this client cannot do WebTransport, or null. */
  cannotWebTransport: string | null;
  run(port: number, reqs: InteropRequest[]): Promise<InteropResponse[]>;
  webTransport?(port: number, stream: string, datagram: string): Promise<WtOutcome>;
  close?(): Promise<void>;
}

function lowerHeaders(lines: [string, string][]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [n, v] of lines) {
    if (n.startsWith(':')) continue;
    out[n] = out[n] === undefined ? v : `${out[n]}, ${v}`;
  }
  return out;
}

// ---------------------------------------------------------------- aioquic

export function aioquicClient(): InteropClient {
  const version = execFileSync(PYTHON, ['-c', 'import importlib.metadata as m; print(m.version("aioquic"))']).toString().trim();
  return {
    name: 'aioquic',
    version: `aioquic ${version} (Python)`,
    cannot: () => null,
    cannotWebTransport: null,
    async run(port, reqs) {
      const result = await runClient(port, {
        timeout: 5,
        sequential: true,
        requests: reqs.map((r) => ({
          method: r.method,
          path: r.path,
          headers: r.headers,
          ...(r.bodyLen ? { body_b64: b64(Buffer.alloc(r.bodyLen, 0x78)) } : {}),
        })),
      });
      if (!result.connected) return reqs.map(() => ({ status: null, headers: {}, body: '', error: `handshake: ${result.handshake_error}` }));
      return result.responses.map((res) => ({
        status: res.status,
        headers: lowerHeaders(res.headers),
        body: res.body_text,
        protocol: 'h3', // aioquic speaks only HTTP/3 (ALPN h3)
        ...(res.error ? { error: res.error } : {}),
      }));
    },
    async webTransport(port, stream, datagram) {
      const r = await runWt(port, [
        { op: 'session', name: 's', path: '/wt' },
        { op: 'bidi', session: 's', name: 'b', data_b64: b64(stream), wait: true },
        { op: 'datagram', session: 's', data_b64: b64(datagram), count: 1, wait_ms: 2000 },
      ]);
      if (!r.connected) return { status: null, streamEcho: '', datagramEcho: '', error: r.error ?? 'not connected' };
      const [session, bidi, dg] = r.results;
      return {
        status: session?.status ?? null,
        streamEcho: bidi?.echo_b64 ? Buffer.from(bidi.echo_b64, 'base64').toString() : '',
        // wt_client.py counts echoes per session; one sent, one back.
        datagramEcho: dg?.echoed >= 1 ? datagram : '',
      };
    },
  };
}

// ---------------------------------------------------------------- quic-go

const QUICGO_DIR = path.join(ROOT, 'test', 'helpers', 'clients', 'quicgo');
export const QUICGO_BIN = path.join(QUICGO_DIR, '.bin', 'quicgo-interop');

function goModVersion(module: string): string {
  const mod = fs.readFileSync(path.join(QUICGO_DIR, 'go.mod'), 'utf8');
  return mod.match(new RegExp(`${module.replace(/[/.]/g, '\\$&')} (v\\S+)`))?.[1] ?? '?';
}

/** Builds the Go client unless an up-to-date binary exists (scripts/setup-go.sh does it ahead of time). */
export function buildQuicGo(): void {
  const files = fs.readdirSync(QUICGO_DIR).filter((f) => f.endsWith('.go') || f === 'go.mod' || f === 'go.sum');
  const sources = files.map((f) => fs.statSync(path.join(QUICGO_DIR, f)).mtimeMs);
  if (fs.existsSync(QUICGO_BIN) && fs.statSync(QUICGO_BIN).mtimeMs >= Math.max(...sources)) return;
  execFileSync('go', ['build', '-o', QUICGO_BIN, '.'], { cwd: QUICGO_DIR, stdio: 'inherit', timeout: 600_000 });
}

function runQuicGo(plan: unknown): Promise<any> {
  return runJsonProcess(QUICGO_BIN, [], plan, 'quicgo-interop');
}

export function quicGoClient(): InteropClient {
  buildQuicGo();
  return {
    name: 'quic-go',
    version: `quic-go ${goModVersion('github.com/quic-go/quic-go')} http3 client, webtransport-go ${goModVersion('github.com/quic-go/webtransport-go')} (Go)`,
    cannot: () => null,
    cannotWebTransport: null,
    async run(port, reqs) {
      const r = await runQuicGo({
        base: `https://127.0.0.1:${port}`,
        requests: reqs.map((q) => ({ method: q.method, path: q.path, headers: q.headers, body_len: q.bodyLen })),
      });
      return r.responses.map((x: any) => ({
        status: x.error && !x.status ? null : x.status,
        headers: x.headers ?? {},
        body: x.body ?? '',
        protocol: x.proto === 'HTTP/3.0' ? 'h3' : x.proto,
        ...(x.error ? { error: x.error } : {}),
      }));
    },
    async webTransport(port, stream, datagram) {
      const r = await runQuicGo({ base: `https://127.0.0.1:${port}`, requests: [], webtransport: { path: '/wt', stream, datagram } });
      const w = r.webtransport;
      return { status: w.status || null, streamEcho: w.stream_echo, datagramEcho: w.datagram_echo, ...(w.error ? { error: w.error } : {}) };
    },
  };
}

// ---------------------------------------------------------------- ngtcp2

export const NGTCP2_CLIENT = '/usr/bin/gtlsclient';

function ngtcp2Version(): string {
  try {
    return execFileSync('dpkg-query', ['-W', '-f=${Version}', 'ngtcp2-client']).toString().trim();
  } catch {
    return '?';
  }
}

/** One request per process: the example client sends the same method and body on every URI it is given. */
function ngtcp2Request(port: number, req: InteropRequest): Promise<InteropResponse> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ngtcp2-'));
  const args = ['--exit-on-all-streams-close', '--no-quic-dump', '--no-http-dump', '--timeout=5s', `--download=${dir}`];
  if (req.method !== 'GET') args.push('-m', req.method);
  if (req.bodyLen) {
    const body = path.join(dir, 'request-body');
    fs.writeFileSync(body, Buffer.alloc(req.bodyLen, 0x78));
    args.push('-d', body);
  }
  args.push('127.0.0.1', String(port), `https://127.0.0.1:${port}${req.path}`);
  return new Promise((resolve) => {
    execFile(NGTCP2_CLIENT, args, { timeout: 15000, maxBuffer: 16 << 20 }, (error, stdout, stderr) => {
      const text = `${stdout}\n${stderr}`;
      // The example client speaks only HTTP/3 (ALPN h3).
      const res: InteropResponse = { status: null, headers: {}, body: '', protocol: 'h3' };
      // Debug lines: `http: stream 0x0 [name: value]`.
      for (const m of text.matchAll(/^http: stream 0x0 \[([^:\]]+|:[a-z]+): (.*)\]$/gm)) {
        if (m[1] === ':status') res.status = Number(m[2]);
        else res.headers[m[1]] = res.headers[m[1]] === undefined ? m[2] : `${res.headers[m[1]]}, ${m[2]}`;
      }
      // --download names the file after the path's last segment.
      const file = path.join(dir, path.basename(req.path) || 'index.html');
      if (fs.existsSync(file)) res.body = fs.readFileSync(file, 'utf8');
      if (res.status === null) res.error = error ? `${error.message.split('\n')[0]}` : 'no response';
      fs.rmSync(dir, { recursive: true, force: true });
      resolve(res);
    });
  });
}

export function ngtcp2Client(): InteropClient {
  return {
    name: 'ngtcp2',
    version: `ngtcp2 example client gtlsclient ${ngtcp2Version()} (Debian ngtcp2-client, C, nghttp3)`,
    cannot: (req) =>
      req.headers.length > 0
        ? 'the example client has no option to add request header fields (no authorization, no cookie)'
        : null,
    cannotWebTransport: 'the example client only sends GET/POST requests to URIs: no extended CONNECT, no WebTransport streams or datagrams',
    async run(port, reqs) {
      const out: InteropResponse[] = [];
      for (const r of reqs) out.push(await ngtcp2Request(port, r));
      return out;
    },
  };
}

// ---------------------------------------------------------------- Chromium

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

const FETCH_SCRIPT = `async (reqs) => {
  const out = [];
  for (const r of reqs) {
    const init = { method: r.method, headers: r.headers, credentials: r.credentials, redirect: 'follow', cache: 'no-store' };
    if (r.bodyLen) init.body = 'x'.repeat(r.bodyLen);
    try {
      const res = await fetch(r.path, init);
      const headers = {};
      res.headers.forEach((v, k) => (headers[k] = v));
      const body = await res.text();
      // Chromium adds the Resource Timing entry after the body, in a later
      // task: wait up to 2 s for it (CI once read none for a whole page).
      const name = new URL(r.path, location.href).href;
      let entries = performance.getEntriesByName(name);
      for (let t = 0; !entries.length && t < 200; t++) {
        await new Promise((ok) => setTimeout(ok, 10));
        entries = performance.getEntriesByName(name);
      }
      out.push({ status: res.status, headers, body, redirected: res.redirected, finalUrl: res.url,
        protocol: entries.length ? entries[entries.length - 1].nextHopProtocol : undefined, cookie: document.cookie });
    } catch (e) {
      out.push({ status: null, headers: {}, body: '', error: String(e) });
    }
  }
  return out;
}`;

/**
 * Puts a blank document on the server's own origin, so every fetch is
 * same-origin and WebTransport runs in a secure context. The document itself
 * is supplied by the browser's request interception (only that one URL), so
 * no profile needs a page; everything the cases fetch goes to the server.
 */
async function openOriginPage(page: Page, port: number) {
  const url = `https://127.0.0.1:${port}/interop-page`;
  await page.route(url, (route) => route.fulfill({ status: 200, contentType: 'text/html', body: '<!doctype html><title>interop</title>' }));
  await page.goto(url);
}

export function chromiumClient(): InteropClient & { start(ports: number[], spki: string): Promise<void> } {
  let chrome: Launched | undefined;
  const client = {
    name: 'Chromium',
    version: 'Chromium',
    async start(ports: number[], spki: string) {
      chrome = await launchChromium(ports.map((p) => `127.0.0.1:${p}`), spki);
      client.version = `Chromium ${chrome.browser.version()} headless (Debian chromium, playwright-core)`;
    },
    cannot: () => null,
    cannotWebTransport: null,
    async run(port: number, reqs: InteropRequest[]): Promise<InteropResponse[]> {
      // A fresh context per batch: no cookie carries over between cases.
      const context = await chrome!.browser.newContext();
      const page = await context.newPage();
      try {
        await openOriginPage(page, port);
        // Redirects are followed by fetch(); the 302 itself is seen through
        // the browser's network events.
        const redirects = new Map<string, { status: number; headers: Record<string, string> }>();
        page.on('requestfinished', async (request) => {
          const from = request.redirectedFrom();
          if (!from) return;
          const res = await from.response();
          if (res) redirects.set(new URL(from.url()).pathname, { status: res.status(), headers: await res.allHeaders() });
        });
        const results: InteropResponse[] = [];
        for (const r of reqs) {
          // Credentials travel only as the case's own headers; the cookie
          // case sends the cookie the browser got from /login.
          const cookie = r.headers.find(([n]) => n === 'cookie');
          if (cookie) {
            await context.addCookies([{ name: cookie[1].split('=')[0], value: cookie[1].split('=')[1], domain: '127.0.0.1', path: '/', secure: true }]);
          }
          const headers = Object.fromEntries(r.headers.filter(([n]) => n !== 'cookie'));
          const [x] = (await page.evaluate(`(${FETCH_SCRIPT})(${JSON.stringify([{ ...r, headers, credentials: cookie ? 'include' : r.path === '/login' ? 'same-origin' : 'omit' }])})`)) as any[];
          // The 302 itself arrives through an async network-event handler;
          // on a busy machine it can land well after fetch() resolved.
          for (let waited = 0; x.redirected && !redirects.has(r.path) && waited < 3000; waited += 20) {
            await new Promise((res) => setTimeout(res, 20));
          }
          // Chromium never says which protocol it used unless Resource Timing has it.
          x.protocol ??= 'unreported';
          const hop = redirects.get(r.path);
          if (hop) {
            // What the server answered to this request: the redirect itself.
            results.push({ status: hop.status, headers: hop.headers, body: '', protocol: x.protocol, ...(x.error ? { error: x.error } : {}) });
          } else {
            const headers: Record<string, string> = { ...x.headers };
            // set-cookie is hidden from fetch(); the cookie jar shows it arrived.
            if (x.cookie && r.path === '/login') headers['set-cookie'] = x.cookie;
            results.push({ status: x.status, headers, body: x.body, protocol: x.protocol, ...(x.error ? { error: x.error } : {}) });
          }
        }
        return results;
      } finally {
        await context.close();
      }
    },
    async webTransport(port: number, stream: string, datagram: string): Promise<WtOutcome> {
      const context = await chrome!.browser.newContext();
      const page = await context.newPage();
      try {
        await openOriginPage(page, port);
        const r = (await page.evaluate(
          `(${WT_SCRIPT})(${JSON.stringify(`https://127.0.0.1:${port}/wt`)}, ${JSON.stringify(stream)}, ${JSON.stringify(datagram)})`,
        )) as { echo: string; datagramEcho: string };
        // The session opened (wt.ready resolved), which only a 2xx answer allows.
        return { status: 200, streamEcho: r.echo, datagramEcho: r.datagramEcho };
      } catch (e) {
        return { status: null, streamEcho: '', datagramEcho: '', error: String(e).split('\n')[0] };
      } finally {
        await context.close();
      }
    },
    async close() {
      await chrome?.close();
    },
  };
  return client;
}
