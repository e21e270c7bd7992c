// W9: WebTransport echo on one session, through the application
// API (createSecureServer's sessions, bench/servers/h3-node-wt-app.mjs),
// through the native echo (Profile B), and through webtransport-go's echo
// server (bench/wtpeer), in the same run: bidirectional-stream echo MB/s,
// and datagram round trips per second with 16 in flight. The client is
// bench/wtpeer (webtransport-go) on the client core. Server CPU is charged
// over each client run, so a client-paced figure can be judged by the
// server's CPU per MB or per round trip. The application API runs twice:
// through its W3C shape (web streams) and through its Node-stream shape
// (a stream's toDuplex(), the session's datagramDuplex()). One more row, the boundary floor
// (bench/servers/wt-floor.mjs: the same sessions, every datagram and chunk
// written straight back through the command writer, no web streams), says
// how much of the application API's distance to the native echo is the
// crossing and how much the W3C shape above it; it is not an API.
import path from 'node:path';
import { runClient } from './clients';
import { CERT, KEY, Params, ROOT, SERVER_CORE } from './config';
import { log } from './log';
import { cpuNanos, withCores } from './procfs';
import { check, Check, median } from './report';
import { listening, Server, startPinned, stderrLog, stopServer } from './servers';

export const WTPEER = path.join(ROOT, 'bench/wtpeer/wtpeer');
export const W9_APP = 'h3-node (application API)';
export const W9_DUPLEX = 'h3-node (application API, Node Duplex)';
export const W9_NATIVE = 'h3-node (native echo, Profile B)';
export const W9_GO = 'webtransport-go';
export const W9_FLOOR = 'h3-node (boundary floor, no web streams)';
const W9_SERVERS = [W9_APP, W9_DUPLEX, W9_FLOOR, W9_NATIVE, W9_GO];

export interface W9Row {
  server: string;
  mode: 'stream' | 'datagram';
  round: number;
  /** MB/s (stream) or round trips per second (datagram). */
  rate: number;
  /** Server CPU (all threads) per MB echoed, or per 1,000 round trips, in ms. */
  server_cpu_ms_per_unit: number;
  server_core_all: number;
  client_core_all: number;
  error?: string;
}

let nextPort = 20400 + Math.floor(Math.random() * 400);

async function start(server: string): Promise<Server & { port: number }> {
  const port = nextPort++;
  const what = server === W9_APP ? 'w9-app' : server === W9_DUPLEX ? 'w9-duplex' : server === W9_FLOOR ? 'w9-floor' : server === W9_NATIVE ? 'w9-native' : 'w9-go';
  const [cmd, args] =
    server === W9_APP || server === W9_DUPLEX
      ? [process.execPath, ['bench/servers/h3-node-wt-app.mjs', String(port), CERT, KEY, server === W9_DUPLEX ? 'duplex' : 'web']]
      : server === W9_FLOOR
        ? [process.execPath, ['bench/servers/wt-floor.mjs', String(port), CERT, KEY]]
        : server === W9_NATIVE
        ? [process.execPath, ['bench/servers/h3-node.mjs', 'b', String(port)]]
        : [WTPEER, ['server', '-port', String(port), '-cert', CERT, '-key', KEY]];
  const p = startPinned(SERVER_CORE, cmd, args, {
    stderrFile: stderrLog(what),
    label: what,
    stdin: server === W9_NATIVE,
    env: { H3_BENCH_NATIVE_HANDLER: '' },
  });
  await listening(p, what);
  return { name: server, pids: [p.pid], processes: [p], port };
}

async function measure(s: Server & { port: number }, mode: W9Row['mode'], round: number, P: Params): Promise<W9Row> {
  const url = `https://127.0.0.1:${s.port}/echo`;
  const args =
    mode === 'stream' ? ['stream', '-url', url, '-bytes', String(P.w9Bytes)] : ['datagram', '-url', url, '-duration', `${P.w9Seconds}s`, '-window', '16'];
  const n0 = cpuNanos(s.pids);
  try {
    const out = await withCores(() => runClient(WTPEER, args));
    const cpuMs = (cpuNanos(s.pids) - n0) / 1e6;
    const r = JSON.parse(out.value) as { mb_per_s?: number; bytes?: number; per_s?: number; round_trips?: number; error?: string };
    if (r.error) throw new Error(r.error);
    const rate = mode === 'stream' ? r.mb_per_s! : r.per_s!;
    const units = mode === 'stream' ? r.bytes! / 1e6 : r.round_trips! / 1000;
    return { server: s.name, mode, round, rate, server_cpu_ms_per_unit: cpuMs / units, server_core_all: out.serverCore, client_core_all: out.clientCore };
  } catch (e) {
    return { server: s.name, mode, round, rate: NaN, server_cpu_ms_per_unit: NaN, server_core_all: NaN, client_core_all: NaN, error: (e as Error).message.split('\n')[0] };
  }
}

/** Every server, every round: one stream echo and one datagram run each. */
export async function runW9(P: Params): Promise<W9Row[]> {
  const rows: W9Row[] = [];
  for (let round = 1; round <= P.w9Rounds; round++) {
    for (const server of W9_SERVERS) {
      const s = await start(server);
      try {
        for (const mode of ['stream', 'datagram'] as const) {
          const row = await measure(s, mode, round, P);
          rows.push(row);
          log(
            `  W9 ${mode.padEnd(8)} ${server.padEnd(34)} ` +
              (row.error
                ? `FAILED: ${row.error}`
                : `${row.rate.toFixed(mode === 'stream' ? 1 : 0).padStart(8)} ${mode === 'stream' ? 'MB/s' : 'round trips/s'}, server CPU ${row.server_cpu_ms_per_unit.toFixed(2)} ms per ${mode === 'stream' ? 'MB' : '1,000'}; cores busy: server ${(100 * row.server_core_all).toFixed(0)}%, client ${(100 * row.client_core_all).toFixed(0)}%`),
          );
        }
      } finally {
        await stopServer(s);
      }
    }
  }
  return rows;
}

const med = (rows: W9Row[], server: string, mode: W9Row['mode'], key: 'rate' | 'server_cpu_ms_per_unit' | 'client_core_all') =>
  median(rows.filter((r) => r.server === server && r.mode === mode && !r.error).map((r) => r[key]));

/** W9's targets: the application API against webtransport-go, by rate; CPU per unit shown beside it. */
export function w9Checks(rows: W9Row[]): Check[] {
  const rateOf = (mode: W9Row['mode'], a: string, b: string) => med(rows, a, mode, 'rate') / med(rows, b, mode, 'rate');
  const ratio = (mode: W9Row['mode'], over = W9_GO) => rateOf(mode, W9_APP, over);
  const cpuRatio = (mode: W9Row['mode'], of = W9_APP) => med(rows, W9_GO, mode, 'server_cpu_ms_per_unit') / med(rows, of, mode, 'server_cpu_ms_per_unit');
  return [
    check('W9', 'stream echo MB/s, application API vs webtransport-go', ratio('stream'), 'min', 1.5),
    check('W9', 'datagram round trips/s, application API vs webtransport-go', ratio('datagram'), 'min', 1.5),
    check('W9', 'stream echo MB/s, application API vs the native echo', ratio('stream', W9_NATIVE), 'min', 0.7),
    check('W9', 'datagram round trips/s, application API vs the native echo', ratio('datagram', W9_NATIVE), 'min', 0.7),
    // The same application API through its Node-stream shape (toDuplex(),
    // datagramDuplex()): no web stream promise per chunk or datagram.
    check('W9', 'stream echo MB/s, application API through Node Duplexes vs webtransport-go', rateOf('stream', W9_DUPLEX, W9_GO), 'min', 1.5),
    check('W9', 'datagram round trips/s, application API through Node Duplexes vs webtransport-go', rateOf('datagram', W9_DUPLEX, W9_GO), 'min', 1.5),
    check('W9', 'stream echo MB/s, application API through Node Duplexes vs the native echo', rateOf('stream', W9_DUPLEX, W9_NATIVE), 'min', 0.7),
    check('W9', 'datagram round trips/s, application API through Node Duplexes vs the native echo', rateOf('datagram', W9_DUPLEX, W9_NATIVE), 'min', 0.7),
    { ...check('W9', 'stream echo: server CPU per MB, webtransport-go over the application API', cpuRatio('stream'), 'min', 1.5), extra: true },
    { ...check('W9', 'datagrams: server CPU per round trip, webtransport-go over the application API', cpuRatio('datagram'), 'min', 1.5), extra: true },
    { ...check('W9', 'stream echo: server CPU per MB, webtransport-go over the application API through Node Duplexes', cpuRatio('stream', W9_DUPLEX), 'min', 1.5), extra: true },
    { ...check('W9', 'datagrams: server CPU per round trip, webtransport-go over the application API through Node Duplexes', cpuRatio('datagram', W9_DUPLEX), 'min', 1.5), extra: true },
    // How far the 1.5x above is from what no JavaScript at all reaches.
    { ...check('W9', 'stream echo: server CPU per MB, webtransport-go over the native echo', cpuRatio('stream', W9_NATIVE), 'min', 1.5), extra: true },
    { ...check('W9', 'datagrams: server CPU per round trip, webtransport-go over the native echo', cpuRatio('datagram', W9_NATIVE), 'min', 1.5), extra: true },
    // Where the distance to the native echo lies: the boundary floor beside
    // the native echo is the crossing's share; the application API beside
    // the floor is the web streams' share.
    { ...check('W9', 'stream echo MB/s, boundary floor vs the native echo', rateOf('stream', W9_FLOOR, W9_NATIVE), 'min', 0.7), extra: true },
    { ...check('W9', 'datagram round trips/s, boundary floor vs the native echo', rateOf('datagram', W9_FLOOR, W9_NATIVE), 'min', 0.7), extra: true },
    { ...check('W9', 'stream echo MB/s, application API vs the boundary floor', rateOf('stream', W9_APP, W9_FLOOR), 'min', 0.7), extra: true },
    { ...check('W9', 'datagram round trips/s, application API vs the boundary floor', rateOf('datagram', W9_APP, W9_FLOOR), 'min', 0.7), extra: true },
  ];
}

export function w9Table(P: Params, rows: W9Row[]): string[] {
  const lines = [
    `W9: WebTransport echo on one session (client: webtransport-go, bench/wtpeer), median of ${P.w9Rounds} round(s): ${P.w9Bytes / 1024 / 1024} MiB on one bidirectional stream; datagrams (64 bytes, 16 in flight) for ${P.w9Seconds} s`,
    '| server | stream MB/s | server CPU ms/MB | client core busy | datagram round trips/s | server CPU ms/1,000 | client core busy | failed |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const server of W9_SERVERS) {
    const failed = rows.filter((r) => r.server === server && r.error).length;
    lines.push(
      `| ${server} | ${med(rows, server, 'stream', 'rate').toFixed(1)} | ${med(rows, server, 'stream', 'server_cpu_ms_per_unit').toFixed(2)} | ${(100 * med(rows, server, 'stream', 'client_core_all')).toFixed(0)}% | ` +
        `${med(rows, server, 'datagram', 'rate').toFixed(0)} | ${med(rows, server, 'datagram', 'server_cpu_ms_per_unit').toFixed(2)} | ${(100 * med(rows, server, 'datagram', 'client_core_all')).toFixed(0)}% | ${failed} |`,
    );
  }
  for (const r of rows.filter((x) => x.error)) lines.push(`- W9 ${r.mode} ${r.server} round ${r.round} failed: ${r.error}`);
  return lines;
}
