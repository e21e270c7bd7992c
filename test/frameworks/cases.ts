// The requests every framework test sends, and what each answer must be,
// whatever carried it (HTTP/1.1, HTTP/2, HTTP/3; Node, aioquic, quic-go,
// Chromium). Clients turn what they received into a FetchResult.
import v8 from 'node:v8';
import vm from 'node:vm';
import assert from 'node:assert/strict';
import { COOKIES, STATIC_TEXT, STREAM_BODY, STREAM_CHUNKS, STREAM_DELAY_MS } from './apps/common';
import type { ClientRequest, ClientResponse } from '../helpers/clients/adapter';
import { patternSha256 } from '../helpers/pattern';

export type CaseName = 'hello' | 'json' | 'cookie' | 'whoami' | 'static' | 'throw' | 'stream' | 'upload';

/** A case's request: what every client sends (test/helpers/clients/adapter.ts), with the case's name. */
export interface FetchRequest extends ClientRequest {
  name: CaseName;
}

export type FetchResult = ClientResponse;

export const JSON_BODY = { name: 'h3-node', list: [1, 2, 3], nested: { ok: true, text: 'Grüße' } };
export const COOKIE_HEADER = `a=${COOKIES.a.value}; token=${COOKIES.token.value}`;

export function request(name: CaseName, uploadBytes = 0): FetchRequest {
  switch (name) {
    case 'hello':
      return { name, method: 'GET', path: '/hello', headers: [] };
    case 'json':
      return { name, method: 'POST', path: '/json', headers: [['content-type', 'application/json']], body: JSON.stringify(JSON_BODY) };
    case 'cookie':
      return { name, method: 'GET', path: '/cookie', headers: [] };
    case 'whoami':
      return { name, method: 'GET', path: '/whoami', headers: [['cookie', COOKIE_HEADER]] };
    case 'static':
      return { name, method: 'GET', path: '/static/hello.txt', headers: [] };
    case 'throw':
      return { name, method: 'GET', path: '/throw', headers: [] };
    case 'stream':
      return { name, method: 'GET', path: '/stream', headers: [] };
    case 'upload':
      return { name, method: 'POST', path: '/upload', headers: [['content-type', 'application/octet-stream']], uploadBytes };
  }
}

/** Every case but the upload, in a fixed order. */
export const SMALL_CASES: CaseName[] = ['hello', 'json', 'cookie', 'whoami', 'static', 'throw', 'stream'];

export function headerValues(res: FetchResult, name: string): string[] {
  return res.headers.filter(([n]) => n.toLowerCase() === name).map(([, v]) => v);
}

function header(res: FetchResult, name: string): string | undefined {
  const v = headerValues(res, name);
  return v.length ? v.join(', ') : undefined;
}

function context(res: FetchResult): string {
  return JSON.stringify({ ...res, body: res.body.slice(0, 400), chunks: res.chunks.length }, null, 1);
}

/** The Set-Cookie lines must carry both cookies, values byte for byte (case, '+', '/', '='). */
export function checkSetCookies(lines: string[], ctx = ''): void {
  const byName = new Map(lines.map((l) => [l.split('=')[0], l]));
  for (const [name, c] of Object.entries(COOKIES)) {
    const line = byName.get(name);
    assert.ok(line, `no Set-Cookie for ${name} in ${JSON.stringify(lines)} ${ctx}`);
    assert.equal(line.split(';')[0], `${name}=${c.value}`, `${name}'s value changed: ${line}`);
    const attrs = line.split(';').slice(1).map((a) => a.trim().toLowerCase());
    assert.ok(attrs.includes('path=/'), line);
    assert.equal(attrs.includes('httponly'), c.line.includes('HttpOnly'), line);
  }
}

/** What the /whoami JSON must say once the cookie header `a=1; token=...` reached the app (in any split or order). */
export function checkWhoami(res: FetchResult, framework: string): void {
  const got = JSON.parse(res.body);
  assert.equal(got.framework, framework);
  assert.deepEqual(got.cookies, { a: COOKIES.a.value, token: COOKIES.token.value }, context(res));
  const raw = String(got.raw)
    .split(/;\s*/)
    .sort();
  assert.deepEqual(raw, COOKIE_HEADER.split('; ').sort(), `raw cookie header ${got.raw}`);
}

export interface CheckOptions {
  /** The client cannot see Set-Cookie lines (a browser's fetch); the cookie jar is checked elsewhere. */
  noSetCookie?: boolean;
}

/** Asserts that `res` is the right answer of `framework`'s app to case `req`. */
export function checkCase(req: FetchRequest, framework: string, res: FetchResult, options: CheckOptions = {}): void {
  const ctx = context(res);
  assert.equal(res.error, undefined, `${req.name}: client error ${ctx}`);
  const type = header(res, 'content-type') ?? '';
  switch (req.name) {
    case 'hello':
      assert.equal(res.status, 200, ctx);
      assert.equal(res.body, `hello from ${framework}`);
      assert.match(type, /^text\/plain/, ctx);
      break;
    case 'json':
      assert.equal(res.status, 200, ctx);
      assert.match(type, /^application\/json/, ctx);
      assert.deepEqual(JSON.parse(res.body), { received: JSON_BODY, framework });
      break;
    case 'cookie':
      assert.equal(res.status, 200, ctx);
      if (!options.noSetCookie) {
        const lines = headerValues(res, 'set-cookie');
        assert.equal(lines.length, 2, `two Set-Cookie lines expected: ${ctx}`);
        checkSetCookies(lines, ctx);
      }
      break;
    case 'whoami':
      assert.equal(res.status, 200, ctx);
      checkWhoami(res, framework);
      break;
    case 'static':
      assert.equal(res.status, 200, ctx);
      assert.equal(res.body, STATIC_TEXT);
      assert.match(type, /^text\/plain/, ctx);
      break;
    case 'throw':
      assert.equal(res.status, 500, ctx);
      break;
    case 'stream': {
      assert.equal(res.status, 200, ctx);
      assert.equal(res.bodyBytes, STREAM_BODY.length, ctx);
      assert.equal(res.body, STREAM_BODY);
      checkStreamed(res);
      break;
    }
    case 'upload':
      assert.equal(res.status, 200, ctx);
      assert.deepEqual(JSON.parse(res.body), { bytes: req.uploadBytes, sha256: patternSha256(req.uploadBytes ?? 0) });
      break;
  }
}

/**
 * The /stream body came in pieces over time, not in one piece at the end:
 * the first body bytes arrived at least half the server's total pause
 * before the last ones.
 */
export function checkStreamed(res: FetchResult): void {
  const spread = (STREAM_CHUNKS - 1) * STREAM_DELAY_MS;
  assert.ok(res.chunks.length >= 2, `/stream body arrived in ${res.chunks.length} piece(s)`);
  const first = res.chunks[0].t;
  const last = res.chunks[res.chunks.length - 1].t;
  assert.ok(last - first >= spread / 2, `/stream: first body bytes at ${first} ms, last at ${last} ms (server pauses ${spread} ms in all)`);
}

/** A full garbage collection, through V8's own gc() made reachable at run time (no --expose-gc on mocha's command line). */
const fullGc: () => void = (() => {
  v8.setFlagsFromString('--expose-gc');
  return vm.runInNewContext('gc') as () => void;
})();

/**
 * Samples this process's memory until stopped and says how far
 * `arrayBuffers` (where Buffers live) rose above where it started: the
 * peak as sampled every 20 ms, garbage included, and the peak of what is
 * still reachable, sampled after a full collection every 250 ms. The apps
 * run in the test process, so an upload they (or the server under them)
 * held whole would be reachable at once, at least its size. The first
 * figure depends on when V8 collects: on Node 26.12.1, with no forced
 * collection, 62-112 MiB of chunks already consumed waited for one during
 * a 100 MiB upload, on node:http2's own path as on this one (Node 20
 * stayed under 60 MiB); the reachable figure was at most 6.5 MiB on every
 * path. So the check is on what is reachable: an upload held whole shows
 * there, garbage does not (the self-check in frameworks-tcp.test.ts).
 */
export function watchMemory(): () => { arrayBuffersRise: number; liveArrayBuffersRise: number; rssRise: number } {
  fullGc();
  const base = process.memoryUsage();
  let peakArrayBuffers = base.arrayBuffers;
  let peakLive = base.arrayBuffers;
  let peakRss = base.rss;
  const sample = setInterval(() => {
    const m = process.memoryUsage();
    peakArrayBuffers = Math.max(peakArrayBuffers, m.arrayBuffers);
    peakRss = Math.max(peakRss, m.rss);
  }, 20);
  const live = setInterval(() => {
    // The second collection finishes the first one's sweep of ArrayBuffer
    // backing stores, which V8 frees on a background thread: after one, a
    // busy CI machine read 60.7 MiB "reachable" during a streamed 100 MiB
    // upload (Hono over HTTP/1.1, Node 26.12.1); after two, 0.0-0.3 MiB on
    // every path here, against up to 6.5 MiB after one.
    fullGc();
    fullGc();
    peakLive = Math.max(peakLive, process.memoryUsage().arrayBuffers);
  }, 250);
  return () => {
    clearInterval(sample);
    clearInterval(live);
    return { arrayBuffersRise: peakArrayBuffers - base.arrayBuffers, liveArrayBuffersRise: peakLive - base.arrayBuffers, rssRise: peakRss - base.rss };
  };
}

/** An upload of `bytes` was not held whole: reachable Buffers rose by less than 60% of it (checked from 32 MiB up). */
export function checkNotBuffered(bytes: number, rise: { liveArrayBuffersRise: number }): void {
  if (bytes < 32 * 1024 * 1024) return;
  assert.ok(
    rise.liveArrayBuffersRise < bytes * 0.6,
    `reachable Buffers rose by ${(rise.liveArrayBuffersRise / 1048576).toFixed(1)} MiB during a ${(bytes / 1048576).toFixed(0)} MiB upload`,
  );
}
