// Draws the benchmark result as one self-contained SVG (no dependencies):
// left, req/s per server for W1 and W3; right, every target check as a bar
// where the dashed line is the target and green means met.
import type { Check } from './lib/report';

interface Row {
  workload: string;
  variant: string;
  rps: number;
}

interface Result {
  date: string;
  mode: string;
  taskset: { server_core: string; client_core: string };
  rows: Row[];
  checks: Check[];
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor((s.length - 1) / 2)] : 0;
}

const COLORS: Record<string, string> = {
  'h3-node (TypeScript)': '#1f77b4',
  'h3-node (native)': '#6baed6',
  caddy: '#ff7f0e',
  'caddy -> node http': '#ff7f0e',
  'node-http2 (h2load)': '#2ca02c',
  'h3-node (createSecureServer)': '#9467bd',
  'node-http2 compat (h2load)': '#98df8a',
};

function checkLabel(c: Check): string {
  const f = (v: number) =>
    c.unit === 'yes' ? (v >= 1 ? 'yes' : 'no') : c.unit === 'x' ? `${v.toFixed(2)}x` : c.unit === 'B' ? `${Math.round(v)} B` : c.unit === '/req' ? `${v.toFixed(2)}/req` : `${v.toFixed(1)} ${c.unit}`;
  return `${f(c.value)} (target ${c.kind === 'min' ? '≥' : '≤'} ${f(c.target)})`;
}

export function renderChart(result: Result): string {
  const W = 1280;
  const out: string[] = [];
  const text = (x: number, y: number, s: string, attrs = '') =>
    out.push(`<text x="${x}" y="${y}" font-family="sans-serif" ${attrs.includes('font-size') ? '' : 'font-size="12" '}${attrs}>${esc(s)}</text>`);

  // Left panel: req/s per server.
  const groups = ['W1', 'W3'].map((w) => {
    const variants = [...new Set(result.rows.filter((r) => r.workload === w).map((r) => r.variant))];
    return {
      w,
      bars: variants.map((v) => ({ v, rps: median(result.rows.filter((r) => r.workload === w && r.variant === v).map((r) => r.rps)) })),
    };
  });
  const maxRps = Math.max(1, ...groups.flatMap((g) => g.bars.map((b) => b.rps)));
  const lx = 20;
  const labelW = 150;
  const barW = 300;
  let y = 70;
  text(lx, 50, 'req/s (median), higher is better', 'font-weight="bold"');
  for (const g of groups) {
    text(lx, y, g.w === 'W1' ? 'W1  GET /login, 1 conn × 20 streams' : 'W3  POST 4096 B, 1 conn × 20 streams', 'font-weight="bold"');
    y += 8;
    for (const b of g.bars) {
      const w = (b.rps / maxRps) * barW;
      text(lx, y + 14, b.v);
      out.push(`<rect x="${lx + labelW}" y="${y + 3}" width="${w.toFixed(1)}" height="15" fill="${COLORS[b.v] ?? '#999'}"/>`);
      text(lx + labelW + w + 5, y + 15, `${Math.round(b.rps).toLocaleString('en-US')}`);
      y += 22;
    }
    y += 18;
  }
  const leftBottom = y;

  // Right panel: targets.
  const rx = 560;
  const rLabel = 240;
  const rBar = 200;
  let ry = 70;
  text(rx, 50, 'targets: bar = how far past the target (dashed line); green = met, red = missed, grey = extra view', 'font-weight="bold"');
  const scale = 2; // the bar's full width is 2x the target
  for (const c of result.checks) {
    const score = c.unit === 'yes' ? c.value : c.kind === 'min' ? c.value / c.target : c.value > 0 ? c.target / c.value : 2;
    const w = Math.max(2, Math.min(score / scale, 1) * rBar);
    text(rx, ry + 13, `${c.id}  ${c.what}`);
    out.push(`<rect x="${rx + rLabel}" y="${ry + 2}" width="${w.toFixed(1)}" height="15" fill="${c.pass ? '#2ca02c' : c.extra ? '#aaaaaa' : '#d62728'}"/>`);
    text(rx + rLabel + rBar + 8, ry + 14, checkLabel(c), 'font-size="11"');
    ry += 22;
  }
  const tx = rx + rLabel + rBar / scale;
  out.push(`<line x1="${tx}" y1="58" x2="${tx}" y2="${ry}" stroke="#333" stroke-dasharray="4,3"/>`);
  const H = Math.max(leftBottom, ry) + 56;

  const head = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="20" y="24" font-family="sans-serif" font-size="16" font-weight="bold">${esc(
      `h3-node benchmark, ${result.mode} run, ${result.date.slice(0, 16).replace('T', ' ')} UTC — server on core ${result.taskset.server_core}, client on core ${result.taskset.client_core}`,
    )}</text>`,
  ];
  const foot = [
    'Same machine, same run, same quic-go HTTP/3 load client for every HTTP/3 server; node:http2 is loaded with h2load (HTTP/2).',
    'Ratios are what counts; absolute numbers are noisy on a shared machine. capacity/core = inverse of server CPU per request.',
  ]
    .map((line, i) => `<text x="20" y="${H - 30 + 14 * i}" font-family="sans-serif" font-size="11" fill="#555">${esc(line)}</text>`)
    .join('\n');
  return [...head, ...out, foot, '</svg>', ''].join('\n');
}

// Redraw a chart from a results file:
//   node --import tsx bench/chart.ts bench/results/<date>.json
if (require.main === module && process.argv[2]) {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const fs = require('node:fs') as typeof import('node:fs');
  const file = process.argv[2];
  fs.writeFileSync(file.replace(/\.json$/, '.svg'), renderChart(JSON.parse(fs.readFileSync(file, 'utf8'))));
}
