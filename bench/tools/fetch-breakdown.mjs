// Where serve()'s fetch path spends its JavaScript, step by step, without
// a network: each piece the adapter (src/lib/fetch-adapter.ts) and a
// handler do for one W1 request (GET /login: six request fields, a
// string response with two fields), timed alone over many iterations on
// the Node that runs this file. The steps are the platform's own objects
// (URL, Headers, Request, Response, web streams, AbortController), so the
// figures say what each costs on that Node's undici, whatever the adapter
// makes of them.
//   node bench/tools/fetch-breakdown.mjs            (or .nodes/<major>/.../node)
const N = Number(process.env.N ?? 50_000);
const URL_TEXT = 'https://127.0.0.1:4433/login';
const FIELDS = [
  ['user-agent', 'quic-go HTTP/3'],
  ['accept-encoding', 'gzip'],
  ['accept', '*/*'],
  ['x-bench', '1'],
  ['cookie', 'a=b'],
  ['host', '127.0.0.1:4433'],
];

async function time(name, f) {
  for (let i = 0; i < N / 5; i++) await f(i); // warm-up: JIT, pools
  if (globalThis.gc) globalThis.gc();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) await f(i);
  const us = Number(process.hrtime.bigint() - t0) / 1e3 / N;
  console.log(`${name.padEnd(58)} ${us.toFixed(2).padStart(7)} us`);
  return us;
}

const headersOf = () => {
  const h = new Headers();
  for (const [n, v] of FIELDS) h.append(n, v);
  return h;
};

async function readAll(response) {
  const reader = response.body.getReader();
  const chunks = [];
  for (;;) {
    const r = await reader.read();
    if (r.done) return chunks;
    chunks.push(r.value);
  }
}

console.log(`Node ${process.version}, ${N} iterations each (one W1 request's pieces)`);
await time('nothing (an await per iteration: the loop itself)', async () => {});
await time('new URL(url).href', () => new URL(URL_TEXT).href);
await time('new Headers() + 6 append', () => headersOf());
const h = headersOf();
await time('new Request(url, { method, headers })', () => new Request(URL_TEXT, { method: 'GET', headers: h }));
await time('... with a signal (AbortController made per request)', () => new Request(URL_TEXT, { method: 'GET', headers: h, signal: new AbortController().signal }));
await time('new AbortController() alone', () => new AbortController());
await time('new Response(string, { headers: 2 fields })', () => new Response('login succeeded\n', { headers: { 'content-type': 'text/plain', 'set-cookie': 'session=x' } }));
const makeResponse = () => new Response('login succeeded\n', { headers: { 'content-type': 'text/plain', 'set-cookie': 'session=x' } });
await time('... and its body read with getReader() to the end', async () => readAll(makeResponse()));
await time('... and its body read with arrayBuffer()', async () => makeResponse().arrayBuffer());
const r = makeResponse();
await time('response.headers.forEach + getSetCookie()', () => {
  const out = {};
  r.headers.forEach((v, n) => (out[n] = v));
  return r.headers.getSetCookie();
});
await time('a setImmediate promise (the adapter\'s end-of-turn race)', () => new Promise((resolve) => setImmediate(resolve)));
await time('Promise.race of a resolved promise and a pending one', () => Promise.race([Promise.resolve(1), new Promise(() => {})]));
