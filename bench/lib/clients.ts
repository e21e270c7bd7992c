// The load clients, pinned to the client core: the quic-go HTTP/3 load
// client (bench/loadclient) and h2load for node:http2, each run charging the
// server's CPU time over the client's run; and one aioquic GET /stats.
import { ManagedProcess, runProcess } from '../../test/helpers/process';
import { CLIENT_CORE, CLK_TCK, LOADCLIENT, PYTHON } from './config';
import { cpuNanos, cpuTicks, statusKiB, withCores } from './procfs';
import { Server, startPinned } from './servers';

export interface Load {
  requests: number;
  errors: number;
  timeouts: number;
  seconds: number;
  rps: number;
  p50_ms: number;
  p90_ms: number;
  p99_ms: number;
  client_cpu_s?: number;
  idle_conns?: number;
  /** How busy each core was during the run, all processes of the machine included. */
  server_core_all?: number;
  client_core_all?: number;
  statuses?: Record<string, number>;
}

export interface Measured extends Load {
  server: string;
  cpu_us_per_req: number;
  /** With `exactCpu`: the same from the scheduler's nanosecond CPU time (procfs.cpuNanos) instead of clock ticks. */
  cpu_us_per_req_exact?: number;
  peak_rss_kib: number;
  client: string;
  /** With `counters` (h3-node): UDP receive and send calls over the run, per request (the native counters udpRecvCalls, udpSendCalls). */
  udp_recv_calls_per_req?: number;
  udp_send_calls_per_req?: number;
}

/** Server CPU per request to the nanosecond where the scheduler reported it (clock ticks are too coarse for a few percent). */
export function cpuPerRequest(m: Measured): number {
  return m.cpu_us_per_req_exact ?? m.cpu_us_per_req;
}

/** Starts a client on the client core (stop it, or await runToEnd). */
export function startClient(cmd: string, args: string[]): ManagedProcess {
  return startPinned(CLIENT_CORE, cmd, args);
}

/** Resolves with the client's stdout once it exits 0; rejects with its stderr's end otherwise. */
export async function runToEnd(client: ManagedProcess): Promise<string> {
  const r = await client.result();
  if (r.code !== 0) throw new Error(`${client.label} exited ${r.code ?? r.signal}: ${r.stderr.slice(-500)}`);
  return r.stdout;
}

export function runClient(cmd: string, args: string[], onStderrLine?: (line: string) => void): Promise<string> {
  const client = startClient(cmd, args);
  if (onStderrLine) client.onLine('stderr', onStderrLine);
  return runToEnd(client);
}

export interface H3LoadOptions {
  onStderrLine?: (line: string) => void;
  /** Also measure the server's CPU time to the nanosecond (cpu_us_per_req_exact). */
  exactCpu?: boolean;
  /** The server's native counters (h3-node): read just before and after the run for its UDP calls per request. */
  counters?: () => Promise<Record<string, number>>;
}

/** Runs the quic-go load client and charges the server's CPU over the run. */
export async function h3Load(server: Server, url: string, args: string[], options: H3LoadOptions = {}): Promise<Measured> {
  // Counters are read outside the CPU window: answering the read costs the server a little.
  const c0 = options.counters ? await options.counters() : undefined;
  const n0 = options.exactCpu ? cpuNanos(server.pids) : 0;
  const t0 = cpuTicks(server.pids);
  const cores = await withCores(() => runClient(LOADCLIENT, ['-url', url, ...args], options.onStderrLine));
  const t1 = cpuTicks(server.pids);
  const n1 = options.exactCpu ? cpuNanos(server.pids) : 0;
  const c1 = options.counters ? await options.counters() : undefined;
  const r = JSON.parse(cores.value) as Load;
  const perReq = (key: string) => (c0 && c1 && r.requests ? (c1[key] - c0[key]) / r.requests : NaN);
  return {
    ...(options.exactCpu && r.requests ? { cpu_us_per_req_exact: (n1 - n0) / 1e3 / r.requests } : {}),
    ...(c0 && c1 ? { udp_recv_calls_per_req: perReq('udpRecvCalls'), udp_send_calls_per_req: perReq('udpSendCalls') } : {}),
    ...r,
    server_core_all: cores.serverCore,
    client_core_all: cores.clientCore,
    server: server.name,
    client: 'quic-go h3',
    cpu_us_per_req: r.requests ? (((t1 - t0) / CLK_TCK) * 1e6) / r.requests : 0,
    peak_rss_kib: statusKiB(server.pids, 'VmHWM'),
  };
}

export async function h2Load(server: Server, url: string, n: number, bodyFile?: string): Promise<Measured> {
  const n0 = cpuNanos(server.pids);
  const t0 = cpuTicks(server.pids);
  const args = ['-n', String(n), '-c', '1', '-m', '20', ...(bodyFile ? ['-d', bodyFile] : []), url];
  const cores = await withCores(() => runClient('h2load', args));
  const out = cores.value;
  const t1 = cpuTicks(server.pids);
  const n1 = cpuNanos(server.pids);
  const finished = out.match(/finished in ([\d.]+)(m?s), ([\d.]+) req\/s/);
  const reqs = out.match(/requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout/);
  const rtime = out.match(/time for request:\s+[\d.]+u?m?s\s+[\d.]+u?m?s\s+([\d.]+)(u?m?s)/);
  if (!finished || !reqs) throw new Error(`cannot parse h2load output:\n${out}`);
  const ok = Number(reqs[1]);
  const toMs = (v: string, unit: string) => Number(v) * (unit === 's' ? 1000 : unit === 'us' ? 0.001 : 1);
  return {
    requests: ok,
    errors: Number(reqs[2]) + Number(reqs[3]),
    timeouts: Number(reqs[4]),
    seconds: toMs(finished[1], finished[2]) / 1000,
    rps: Number(finished[3]),
    // h2load reports the mean time per request, not percentiles.
    p50_ms: rtime ? toMs(rtime[1], rtime[2]) : 0,
    p90_ms: 0,
    p99_ms: 0,
    server: server.name,
    server_core_all: cores.serverCore,
    client_core_all: cores.clientCore,
    client: 'h2load (HTTP/2, mean latency)',
    cpu_us_per_req: ok ? (((t1 - t0) / CLK_TCK) * 1e6) / ok : 0,
    ...(ok ? { cpu_us_per_req_exact: (n1 - n0) / 1e3 / ok } : {}),
    peak_rss_kib: statusKiB(server.pids, 'VmHWM'),
  };
}

export interface Transfer {
  server: string;
  direction: 'upload' | 'download';
  proto: 'h3' | 'h2';
  bytes: number;
  seconds: number;
  mb_per_s: number;
  /** Until the response's header section arrived (connection set-up and the request's round trip). */
  head_seconds: number;
  client_cpu_s: number;
  /** Server CPU time (scheduler nanoseconds, all threads of all its processes) per GiB moved. */
  cpu_s_per_gib: number;
  rss_before_kib: number;
  rss_peak_kib: number;
  /** Peak minus before: what the transfer held in memory at its worst. */
  rss_growth_kib: number;
  server_core_all: number;
  client_core_all: number;
  /** Set when the transfer failed (the figures above are then NaN). */
  error?: string;
}

/**
 * W8: one transfer of `bytes` on one connection (loadclient -mode), charging
 * the server's CPU over the client's run and sampling its RSS meanwhile.
 * The peak is the largest sample, or VmHWM when VmHWM rose during the
 * transfer (it catches a spike between two samples); with several processes
 * (Caddy + Node) their peaks are summed.
 */
export async function transfer(
  server: Server,
  url: string,
  direction: Transfer['direction'],
  proto: Transfer['proto'],
  bytes: number,
  timeoutS: number,
  /** A download read with UDP_GRO (loadclient `-gro`, gro_linux.go). */
  gro = false,
): Promise<Transfer> {
  // A server that dies mid-transfer must fail this row, not the run: /proc reads then give NaN.
  const read = <T>(f: () => T, fallback: T) => {
    try {
      return f();
    } catch {
      return fallback;
    }
  };
  const kib = (pid: number, key: 'VmRSS' | 'VmHWM') => read(() => statusKiB([pid], key), NaN);
  const before = server.pids.map((p) => kib(p, 'VmRSS'));
  const hwm0 = server.pids.map((p) => kib(p, 'VmHWM'));
  const peak = [...before];
  const sample = () => server.pids.forEach((p, i) => (peak[i] = Math.max(peak[i], kib(p, 'VmRSS'))));
  const timer = setInterval(sample, 20);
  const n0 = cpuNanos(server.pids);
  const args = ['-url', url, '-mode', direction, '-proto', proto, '-bytes', String(bytes), '-timeout', `${timeoutS}s`, ...(gro ? ['-gro'] : [])];
  let out: { value: string; serverCore: number; clientCore: number } | undefined;
  let error: string | undefined;
  try {
    out = await withCores(() => runClient(LOADCLIENT, args));
  } catch (e) {
    error = (e as Error).message.split('\n')[0];
  }
  const n1 = read(() => cpuNanos(server.pids), NaN);
  clearInterval(timer);
  sample();
  server.pids.forEach((p, i) => {
    const hwm = kib(p, 'VmHWM');
    if (hwm > hwm0[i]) peak[i] = Math.max(peak[i], hwm);
  });
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const r = out ? (JSON.parse(out.value) as { seconds: number; mb_per_s: number; client_cpu_s: number; head_seconds?: number }) : undefined;
  return {
    server: server.name,
    direction,
    proto,
    bytes,
    seconds: r?.seconds ?? NaN,
    mb_per_s: r?.mb_per_s ?? NaN,
    head_seconds: r?.head_seconds ?? NaN,
    client_cpu_s: r?.client_cpu_s ?? NaN,
    cpu_s_per_gib: r ? (n1 - n0) / 1e9 / (bytes / 1024 ** 3) : NaN,
    rss_before_kib: sum(before),
    rss_peak_kib: sum(peak),
    rss_growth_kib: sum(peak) - sum(before),
    server_core_all: out?.serverCore ?? NaN,
    client_core_all: out?.clientCore ?? NaN,
    ...(error ? { error } : {}),
  };
}

/** One GET /stats with the body, on aioquic (the load client discards bodies); null when it fails. */
export async function fetchStats(port: number): Promise<{ usage?: { datagrams?: number } } | null> {
  const r = await runProcess(PYTHON, ['-c', STATS_GET, String(port)], { timeoutMs: 10_000 });
  try {
    return JSON.parse(r.stdout);
  } catch {
    return null;
  }
}

const STATS_GET = `
import asyncio, json, ssl, sys
from aioquic.asyncio.client import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived
from aioquic.quic.configuration import QuicConfiguration
class C(QuicConnectionProtocol):
    def __init__(s, *a, **k):
        super().__init__(*a, **k); s.h3 = H3Connection(s._quic); s.body = bytearray(); s.done = asyncio.get_running_loop().create_future()
    def quic_event_received(s, e):
        for ev in s.h3.handle_event(e):
            if isinstance(ev, DataReceived):
                s.body.extend(ev.data)
                if ev.stream_ended and not s.done.done(): s.done.set_result(None)
async def main(port):
    cfg = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN); cfg.verify_mode = ssl.CERT_NONE
    async with connect("127.0.0.1", port, configuration=cfg, create_protocol=C) as c:
        sid = c._quic.get_next_available_stream_id()
        c.h3.send_headers(sid, [(b":method", b"GET"), (b":scheme", b"https"), (b":authority", b"127.0.0.1"), (b":path", b"/stats")], end_stream=True)
        c.transmit(); await asyncio.wait_for(c.done, 5); sys.stdout.write(c.body.decode())
asyncio.run(main(int(sys.argv[1])))
`;
