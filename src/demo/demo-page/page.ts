// The Profile B demo page: one self-contained HTML document (no external
// scripts, styles or fonts, so it works offline and in CI). Buttons open a
// WebTransport session, streams and datagrams against the Profile B server;
// the counters of `/stats` are polled from the page's own origin and drawn
// as tiles and a chart. The browser script is plain ES2020 in a string: it
// runs in the page, not in Node.

export interface PageConfig {
  /** UDP port of the Profile B HTTP/3 server. */
  wtPort: number;
  /** The server's SPKI SHA-256 (base64), shown in the Chromium hint. */
  spki: string;
}

export function renderPage(config: PageConfig): string {
  const json = JSON.stringify(config).replace(/</g, '\\u003c');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>h3-node · Profile B live</title>
<style>
  :root { --bg:#0f172a; --panel:#111c33; --line:#1e2b47; --text:#e2e8f0; --muted:#8a9bb8;
          --s1:#38bdf8; --s2:#a78bfa; --s3:#34d399; --s4:#fbbf24; --s5:#f472b6; }
  * { box-sizing: border-box; }
  body { margin:0; font:14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; background:var(--bg); color:var(--text); }
  main { max-width: 1040px; margin: 0 auto; padding: 24px 28px 28px; }
  header { display:flex; align-items:baseline; justify-content:space-between; gap:16px; margin-bottom:18px; }
  h1 { font-size:20px; margin:0; font-weight:650; letter-spacing:.2px; }
  h1 small { color:var(--muted); font-weight:400; font-size:14px; margin-left:8px; }
  .status { display:flex; align-items:center; gap:8px; color:var(--muted); font-size:13px; }
  .dot { width:10px; height:10px; border-radius:50%; background:#475569; box-shadow:0 0 0 3px #47556933; }
  .dot.open { background:#22c55e; box-shadow:0 0 0 3px #22c55e33; }
  .dot.error { background:#ef4444; box-shadow:0 0 0 3px #ef444433; }
  .panel { background:var(--panel); border:1px solid var(--line); border-radius:12px; padding:16px; }
  .buttons { display:flex; flex-wrap:wrap; gap:10px; margin-bottom:16px; }
  button { font:inherit; font-weight:550; color:var(--text); background:#1d2a47; border:1px solid #2c3d63; border-radius:8px;
           padding:9px 14px; cursor:pointer; }
  button:hover:not(:disabled) { background:#26365a; }
  button:disabled { opacity:.45; cursor:default; }
  button.primary { background:#0369a1; border-color:#0284c7; }
  button.primary:hover:not(:disabled) { background:#0477b5; }
  button.danger { background:#3b1d2a; border-color:#6b2a3f; }
  .tiles { display:grid; grid-template-columns:repeat(5, 1fr); gap:10px; margin-bottom:16px; }
  .tile { background:var(--panel); border:1px solid var(--line); border-radius:12px; padding:12px 14px; }
  .tile .label { color:var(--muted); font-size:12px; display:flex; align-items:center; gap:6px; }
  .tile .label i { width:9px; height:9px; border-radius:2px; display:inline-block; }
  .tile .label i.dash { width:14px; height:0; border-radius:0; border-top:2px dashed currentColor; }
  .tile .value { font-size:26px; font-weight:650; font-variant-numeric:tabular-nums; margin-top:2px; }
  .tile .value small { font-size:13px; color:var(--muted); font-weight:450; }
  .grid { display:grid; grid-template-columns: minmax(0, 1.7fr) minmax(0, 1fr); gap:16px; }
  canvas { width:100%; height:260px; display:block; }
  h2 { font-size:13px; text-transform:uppercase; letter-spacing:.08em; color:var(--muted); margin:0 0 10px; font-weight:600; }
  #log { font:12px/1.7 ui-monospace, "SFMono-Regular", Menlo, monospace; height:260px; overflow:auto; margin:0; color:#cbd5e1; }
  #log div { white-space:nowrap; overflow:hidden; text-overflow:ellipsis; }
  #log time { color:#64748b; margin-right:8px; }
  #log .ok { color:#86efac; } #log .err { color:#fca5a5; }
  footer { color:var(--muted); font-size:12px; margin-top:14px; line-height:1.9; }
  code { background:#1d2a47; padding:1px 5px; border-radius:4px; }
</style>
</head>
<body>
<main>
  <header>
    <h1>h3-node <small>Profile B · WebTransport live</small></h1>
    <div class="status"><span id="dot" class="dot"></span><span id="status">no session</span></div>
  </header>
  <div class="buttons">
    <button id="open" class="primary">Open session</button>
    <button id="bidi" disabled>Bidirectional stream</button>
    <button id="uni" disabled>Unidirectional stream</button>
    <button id="dgram" disabled>Send 10 datagrams</button>
    <button id="close" class="danger" disabled>Close session</button>
  </div>
  <div class="tiles">
    <div class="tile"><div class="label"><i class="dash" style="color:var(--s1)"></i>sessions open</div><div class="value" id="t-sessions">–</div></div>
    <div class="tile"><div class="label"><i class="dash" style="color:var(--s2)"></i>peer streams open</div><div class="value" id="t-streams">–</div></div>
    <div class="tile"><div class="label"><i style="background:var(--s3)"></i>sessions ever</div><div class="value" id="t-usage-sessions">–</div></div>
    <div class="tile"><div class="label"><i style="background:var(--s4)"></i>streams ever</div><div class="value" id="t-usage-streams">–</div></div>
    <div class="tile"><div class="label"><i style="background:var(--s5)"></i>datagrams ever</div><div class="value" id="t-usage-datagrams">–</div></div>
  </div>
  <div class="grid">
    <div class="panel"><h2>/stats over time</h2><canvas id="chart" width="640" height="260"></canvas></div>
    <div class="panel"><h2>activity</h2><pre id="log"></pre></div>
  </div>
  <footer>WebTransport to <code id="target"></code> · counters from the server's <code>/stats</code>, every 0.5 s<br>
    Chromium flags for this server: <code id="flags"></code></footer>
</main>
<script>
const CONFIG = ${json};
${BROWSER_SCRIPT}
</script>
</body>
</html>
`;
}

const BROWSER_SCRIPT = String.raw`
'use strict';
const $ = (id) => document.getElementById(id);
const origin = 'https://' + location.hostname + ':' + CONFIG.wtPort;
const url = origin + '/wt';
$('target').textContent = url;
$('flags').textContent = '--origin-to-force-quic-on=' + location.hostname + ':' + CONFIG.wtPort +
  ' --ignore-certificate-errors-spki-list=' + CONFIG.spki;
const enc = new TextEncoder();
const dec = new TextDecoder();
let wt = null;
let streamNo = 0;

function log(text, cls) {
  const line = document.createElement('div');
  const time = document.createElement('time');
  time.textContent = new Date().toLocaleTimeString('en-GB');
  line.append(time, text);
  line.title = text;
  if (cls) line.className = cls;
  $('log').appendChild(line);
  $('log').scrollTop = $('log').scrollHeight;
  return line;
}

// Datagram echoes are counted on one line per burst rather than a line each.
let echoLine = null;
let echoCount = 0;

function setSession(state, text) {
  $('dot').className = 'dot' + (state === 'open' ? ' open' : state === 'error' ? ' error' : '');
  $('status').textContent = text;
  document.body.dataset.session = state;
  for (const id of ['bidi', 'uni', 'dgram', 'close']) $(id).disabled = state !== 'open';
  $('open').disabled = state === 'open' || state === 'opening';
}

async function readAll(readable) {
  const reader = readable.getReader();
  let out = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return out;
    out += dec.decode(value, { stream: true });
  }
}

async function watchIncoming(session) {
  const incoming = session.incomingUnidirectionalStreams.getReader();
  for (;;) {
    const { value, done } = await incoming.read();
    if (done) return;
    readAll(value).then((text) => log('uni answer: "' + text + '"', 'ok'));
  }
}

async function watchDatagrams(session) {
  const reader = session.datagrams.readable.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    document.body.dataset.echoedDatagrams = String(Number(document.body.dataset.echoedDatagrams || 0) + 1);
    echoCount += 1;
    const text = 'datagrams echoed: ' + echoCount + ' of 10';
    if (echoLine && echoLine === $('log').lastElementChild) echoLine.lastChild.textContent = text;
    else echoLine = log(text, 'ok');
  }
}

async function action(name, fn) {
  try { await fn(); } catch (e) { log(name + ' failed: ' + (e && e.message || e), 'err'); }
  const done = Number(document.body.dataset.actions || 0) + 1;
  document.body.dataset.actions = String(done);
}

$('open').onclick = () => action('open session', async () => {
  setSession('opening', 'connecting…');
  const session = new WebTransport(url);
  session.closed.then(
    (info) => { if (wt === session) { wt = null; setSession('closed', 'session closed (code ' + info.closeCode + ')'); log('session closed'); } },
    (e) => { if (wt === session) { wt = null; setSession('error', 'session failed'); log('session failed: ' + e.message, 'err'); } },
  );
  try { await session.ready; } catch (e) { setSession('error', 'cannot connect'); throw e; }
  wt = session;
  setSession('open', 'session open · ' + url);
  log('session open', 'ok');
  watchIncoming(session).catch(() => {});
  watchDatagrams(session).catch(() => {});
});

$('bidi').onclick = () => action('bidirectional stream', async () => {
  const n = ++streamNo;
  const s = await wt.createBidirectionalStream();
  const w = s.writable.getWriter();
  await w.write(enc.encode('bidi #' + n));
  await w.close();
  const echo = await readAll(s.readable);
  log('bidi echo: "' + echo + '"', 'ok');
});

$('uni').onclick = () => action('unidirectional stream', async () => {
  const n = ++streamNo;
  const s = await wt.createUnidirectionalStream();
  const w = s.getWriter();
  await w.write(enc.encode('uni #' + n));
  await w.close();
  log('uni sent: "uni #' + n + '"');
});

$('dgram').onclick = () => action('datagrams', async () => {
  const w = wt.datagrams.writable.getWriter();
  echoCount = 0;
  echoLine = null;
  log('sending 10 datagrams');
  for (let i = 1; i <= 10; i++) await w.write(enc.encode('datagram ' + i));
  w.releaseLock();
});

$('close').onclick = () => action('close session', async () => {
  const session = wt;
  wt = null;
  session.close({ closeCode: 0, reason: 'closed from the demo page' });
  await session.closed.catch(() => {});
  setSession('closed', 'session closed');
  log('session closed by the page');
});

// ---- /stats, polled from this page's origin, as tiles and a chart ----
const SERIES = [
  // Drawn in this order: totals solid, then what is open now dashed on top.
  { key: (d) => d.usage.sessions, color: '#34d399', label: 'sessions ever' },
  { key: (d) => d.usage.streams, color: '#fbbf24', label: 'streams ever' },
  { key: (d) => d.usage.datagrams, color: '#f472b6', label: 'datagrams ever' },
  { key: (d) => d.occupancy.sessions, color: '#38bdf8', label: 'sessions open', dash: [6, 4] },
  { key: (d) => d.occupancy.peer_streams, color: '#a78bfa', label: 'peer streams open', dash: [6, 4] },
];
const WINDOW_MS = 60000;
const MIN_SPAN_MS = 10000;
const history = [];

function showTiles(d) {
  $('t-sessions').innerHTML = d.occupancy.sessions + ' <small>/ ' + d.occupancy.sessions_cap + '</small>';
  $('t-streams').innerHTML = d.occupancy.peer_streams + ' <small>/ ' + d.occupancy.peer_streams_cap + '</small>';
  $('t-usage-sessions').textContent = d.usage.sessions;
  $('t-usage-streams').textContent = d.usage.streams;
  $('t-usage-datagrams').textContent = d.usage.datagrams;
}

function draw() {
  const canvas = $('chart');
  const ratio = window.devicePixelRatio || 1;
  const w = canvas.clientWidth, h = canvas.clientHeight;
  if (canvas.width !== w * ratio) { canvas.width = w * ratio; canvas.height = h * ratio; }
  const g = canvas.getContext('2d');
  g.setTransform(ratio, 0, 0, ratio, 0, 0);
  g.clearRect(0, 0, w, h);
  const left = 34, right = 8, top = 8, bottom = 22;
  const now = Date.now();
  // The time axis grows with the history up to a minute, so a fresh page
  // does not squeeze its first seconds into a corner.
  const span = history.length ? Math.min(WINDOW_MS, Math.max(MIN_SPAN_MS, now - history[0].t)) : MIN_SPAN_MS;
  let max = 4;
  for (const p of history) for (const s of SERIES) max = Math.max(max, s.key(p.doc));
  const step = Math.pow(10, Math.floor(Math.log10(max)));
  max = Math.ceil(max / step) * step;
  const x = (t) => left + (w - left - right) * (1 - (now - t) / span);
  const y = (v) => top + (h - top - bottom) * (1 - v / max);
  g.font = '11px system-ui, sans-serif';
  g.fillStyle = '#8a9bb8';
  g.strokeStyle = '#1e2b47';
  g.lineWidth = 1;
  for (let i = 0; i <= 4; i++) {
    const v = (max * i) / 4;
    g.beginPath(); g.moveTo(left, y(v)); g.lineTo(w - right, y(v)); g.stroke();
    g.fillText(String(Math.round(v)), 4, y(v) + 4);
  }
  const tick = span > 30000 ? 15 : span > 15000 ? 5 : 2;
  for (let s = 0; s * 1000 <= span; s += tick) g.fillText(s === 0 ? 'now' : '-' + s + ' s', x(now - s * 1000) - (s === 0 ? 22 : 12), h - 6);
  g.save();
  g.beginPath(); g.rect(left, 0, w - left - right + 1, h); g.clip();
  for (const s of SERIES) {
    g.strokeStyle = s.color;
    g.lineWidth = 2;
    g.setLineDash(s.dash || []);
    g.beginPath();
    history.forEach((p, i) => {
      const px = x(p.t), py = y(s.key(p.doc));
      if (i === 0) g.moveTo(px, py);
      else { g.lineTo(px, y(s.key(history[i - 1].doc))); g.lineTo(px, py); }
    });
    if (history.length) g.lineTo(x(now), y(s.key(history[history.length - 1].doc)));
    g.stroke();
  }
  g.restore();
}

async function poll() {
  try {
    const res = await fetch('/stats', { cache: 'no-store' });
    const doc = await res.json();
    history.push({ t: Date.now(), doc });
    while (history.length > 2 && history[1].t < Date.now() - WINDOW_MS) history.shift();
    showTiles(doc);
    document.body.dataset.stats = JSON.stringify(doc);
  } catch (e) {
    $('status').textContent = 'cannot read /stats: ' + e.message;
  }
  draw();
}
setSession('closed', 'no session');
poll();
setInterval(poll, 500);
`;
