// The servers a bench run measures, each started pinned to the server core
// and stopped after its workloads: h3-node (this checkout or a baseline, the
// TypeScript or the native-handler path, or createSecureServer), Caddy
// (alone, or in front of Node http), Node http2 (its own API or its
// compatibility API).
import fs from 'node:fs';
import path from 'node:path';
import { ManagedProcess, runProcess, startProcess, StartOptions } from '../../test/helpers/process';
import type { H3NodeBuild } from './builds';
import { CERT, KEY, LOADCLIENT, ROOT, SERVER_CORE, WORK } from './config';

export interface Server {
  name: string;
  /** Whose CPU time and memory count as the server's. */
  pids: number[];
  processes: ManagedProcess[];
}

export interface H3NodeServer extends Server {
  port: number;
  launcher: ManagedProcess;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let nextPort = 19400 + Math.floor(Math.random() * 500);
const port = () => nextPort++;

/** Starts `cmd args...` under `taskset -c core` (taskset execs in place: the pid is the command's). */
export function startPinned(core: string, cmd: string, args: string[], options: StartOptions = {}): ManagedProcess {
  return startProcess('taskset', ['-c', core, cmd, ...args], { cwd: ROOT, label: path.basename(cmd), ...options });
}

/** Waits for the JSON "listening" line our launchers print on stdout. */
export async function listening(p: ManagedProcess, what: string): Promise<void> {
  try {
    await p.waitForJson((line) => 'listening' in line, 15_000);
  } catch {
    await p.stop({ signal: 'SIGKILL' });
    throw new Error(`${what} did not start (see bench/.work/${what}.stderr.log)`);
  }
}

export const stderrLog = (what: string) => path.join(WORK, `${what}.stderr.log`);

async function waitH3(p: number, urlPath = '/'): Promise<void> {
  for (let i = 0; i < 50; i++) {
    const r = await runProcess(LOADCLIENT, ['-url', `https://127.0.0.1:${p}${urlPath}`, '-requests', '1', '-timeout', '300ms'], { timeoutMs: 3000 });
    if (r.stdout.includes('"requests":1')) return;
    await sleep(100);
  }
  throw new Error(`no HTTP/3 answer on port ${p}`);
}

/**
 * bench/servers/h3-node.mjs of `build` with Profile `profile`, answered by
 * TypeScript or by the native bench handler (started the way that build's
 * design starts it: see builds.ts).
 */
export async function startH3Node(build: H3NodeBuild, profile: 'a' | 'b' | 'c', native: boolean, workers = 1, cores = SERVER_CORE, withDate = false): Promise<H3NodeServer> {
  const p = port();
  const args = [path.join(build.root, 'bench/servers/h3-node.mjs'), profile, String(p), ...(workers > 1 ? ['--workers', String(workers)] : []), ...(withDate ? ['--date'] : [])];
  let env: NodeJS.ProcessEnv = { H3_BENCH_NATIVE_HANDLER: '' };
  if (native) {
    if (build.native.kind === 'unavailable') throw new Error(`no native handler for h3-node ${build.name}: ${build.native.why}`);
    if (build.native.kind === 'environment') env = { H3_BENCH_NATIVE_HANDLER: profile };
    else args.push('--native', profile, ...(build.native.addon ? ['--addon', build.native.addon] : []));
  }
  const what = `h3-node-${profile}${native ? '-native' : ''}${withDate ? '-date' : ''}${workers > 1 ? `-${workers}-workers` : ''}${build.name === 'current' ? '' : `-${build.name.replace(/\s+/g, '-')}`}`;
  const launcher = startPinned(cores, process.execPath, args, { cwd: build.root, env, stdin: true, stderrFile: stderrLog(what), label: what });
  await listening(launcher, what);
  return { name: 'h3-node', pids: [launcher.pid], processes: [launcher], port: p, launcher };
}

/** With --workers: the running h3-node's worker stats (steering, per-worker connections and forwarded packets). */
export async function workerStats(s: H3NodeServer): Promise<WorkerStats | null> {
  const reply = s.launcher.nextLine('stdout');
  s.launcher.send('workers\n');
  return JSON.parse(await reply);
}

export interface WorkerStats {
  steering: string;
  steeringReason: string;
  restarts: number;
  workers: { connectionsAccepted: number; packetsForwarded: number; packetsReceivedForwarded: number; mailboxDrops: number }[];
}

/** The native counters of a running h3-node, through the launcher's stdin line protocol. */
export async function counters(s: H3NodeServer): Promise<Record<string, number>> {
  const reply = s.launcher.nextLine('stdout');
  s.launcher.send('counters\n');
  return JSON.parse(await reply);
}

export async function startCaddy(withNode: boolean): Promise<Server & { portA: number; portC: number }> {
  const portA = port();
  const portC = port();
  const nodePort = port();
  const processes: ManagedProcess[] = [];
  const env = {
    H3_BENCH_CADDY_A_PORT: String(portA),
    H3_BENCH_CADDY_C_PORT: String(portC),
    H3_BENCH_NODE_HTTP_PORT: String(nodePort),
    H3_BENCH_CERT: CERT,
    H3_BENCH_KEY: KEY,
    XDG_DATA_HOME: path.join(WORK, 'caddy-data'),
    XDG_CONFIG_HOME: path.join(WORK, 'caddy-config'),
  };
  if (withNode) {
    const node = startPinned(SERVER_CORE, process.execPath, ['bench/peers/node-http-c.mjs', String(nodePort)], { stderrFile: stderrLog('node-http-c') });
    await listening(node, 'node-http-c');
    processes.push(node);
  }
  const caddy = startPinned(SERVER_CORE, 'caddy', ['run', '--adapter', 'caddyfile', '--config', 'bench/peers/Caddyfile'], {
    env,
    stderrFile: stderrLog('caddy'),
  });
  processes.push(caddy);
  await waitH3(portA, '/login');
  return { name: withNode ? 'caddy+node-http' : 'caddy', pids: processes.map((p) => p.pid), processes, portA, portC };
}

export async function startNodeHttp2(profile: 'a' | 'c'): Promise<Server & { port: number }> {
  const p = port();
  const what = `node-http2-${profile}`;
  const child = startPinned(SERVER_CORE, process.execPath, ['bench/peers/node-http2.mjs', profile, String(p), CERT, KEY], { stderrFile: stderrLog(what) });
  await listening(child, what);
  return { name: 'node-http2', pids: [child.pid], processes: [child], port: p };
}

/**
 * bench/servers/boundary-floor.mjs: the real core with the least JavaScript
 * per request (decode the batch, one fixed answer per request through the
 * command writer): W6's floor for any API on this boundary.
 */
export async function startBoundaryFloor(build: H3NodeBuild, profile: 'a' | 'c'): Promise<Server & { port: number }> {
  const p = port();
  const what = `h3-node-floor-${profile}`;
  const child = startPinned(SERVER_CORE, process.execPath, ['bench/servers/boundary-floor.mjs', profile, String(p), CERT, KEY], {
    cwd: build.root,
    stderrFile: stderrLog(what),
    label: what,
  });
  await listening(child, what);
  return { name: 'h3-node (boundary floor)', pids: [child.pid], processes: [child], port: p };
}

/** Whether this checkout's build exports createSecureServer (the node:http2-compatible API). */
export function hasCreateSecureServer(build: H3NodeBuild): boolean {
  const index = path.join(build.root, 'dist/index.js');
  return fs.existsSync(index) && fs.readFileSync(index, 'utf8').includes('createSecureServer');
}

/** A launcher taking `<port> <cert> <key> [<file>]` (the compat servers, W8's), run in `root` (whose dist/ it loads). */
async function startWithFile(name: string, what: string, script: string, file?: string, root = ROOT, env?: NodeJS.ProcessEnv, extra: string[] = []): Promise<Server & { port: number }> {
  const p = port();
  const child = startPinned(SERVER_CORE, process.execPath, [script, String(p), CERT, KEY, ...(file ? [file] : []), ...extra], {
    cwd: root,
    env,
    stderrFile: stderrLog(what),
    label: what,
  });
  await listening(child, what);
  return { name, pids: [child.pid], processes: [child], port: p };
}

/** bench/servers/h3-node-compat.mjs: W1/W3's routes and W8's through createSecureServer (compat-app.mjs). */
export function startH3NodeCompat(build: H3NodeBuild, file?: string) {
  return startWithFile('h3-node (createSecureServer)', 'h3-node-compat', 'bench/servers/h3-node-compat.mjs', file, build.root);
}

/** The same listener with every answer's `date` and `content-length` left out: createServer's bytes (W1/W3's same-bytes row). */
export function startH3NodeCompatSameBytes(build: H3NodeBuild) {
  return startWithFile('h3-node (createSecureServer, no date or content-length)', 'h3-node-compat-same-bytes', 'bench/servers/h3-node-compat.mjs', undefined, build.root, { H3_BENCH_SAME_BYTES: '1' });
}

/** bench/servers/h3-node-fetch.mjs: W1/W3's routes as a fetch handler through serve({ fetch }). */
export function startH3NodeFetch(build: H3NodeBuild) {
  return startWithFile('h3-node (serve)', 'h3-node-fetch', 'bench/servers/h3-node-fetch.mjs', undefined, build.root);
}

/** bench/servers/h3-node-hono.mjs: W1's routes as a Hono app (a middleware, three routes) through serve({ fetch: app.fetch }). */
export function startH3NodeHono(build: H3NodeBuild) {
  return startWithFile('h3-node (serve, Hono app)', 'h3-node-hono', 'bench/servers/h3-node-hono.mjs', undefined, build.root);
}

/** bench/servers/fetch-floor.mjs: createSecureServer with one platform Request and Response per request, the floor under serve. */
export function startFetchFloor(build: H3NodeBuild) {
  return startWithFile('h3-node (fetch floor)', 'fetch-floor', 'bench/servers/fetch-floor.mjs', undefined, build.root);
}

/**
 * The Bun binary bench/setup.sh installs from npm (`bun@1.4.4`), or
 * H3_BENCH_BUN; undefined when neither is there (the Bun rows are then left
 * out, and the run says so).
 */
export function bunBinary(): string | undefined {
  const candidates = [process.env.H3_BENCH_BUN, path.join(WORK, 'bun/node_modules/bun/bin/bun.exe')];
  return candidates.find((c): c is string => !!c && fs.existsSync(c));
}

/** bench/peers/bun-fetch.mjs: the same fetch handler as serve's row, on Bun.serve({ http3: true }). */
export async function startBunFetch(): Promise<Server & { port: number }> {
  const bun = bunBinary();
  if (!bun) throw new Error('Bun is not installed (bash bench/setup.sh installs bun@1.4.4 under bench/.work/bun)');
  const p = port();
  const child = startPinned(SERVER_CORE, bun, ['bench/peers/bun-fetch.mjs', String(p), CERT, KEY], { stderrFile: stderrLog('bun-fetch'), label: 'bun-fetch' });
  await listening(child, 'bun-fetch');
  // Bun answers on TCP first; measure only once QUIC answers too.
  await waitH3(p, '/login');
  return { name: 'bun (Bun.serve, http3)', pids: [child.pid], processes: [child], port: p };
}

/** Whether the checkout has this launcher in bench/servers (a baseline commit may predate it). */
export function hasLauncher(build: H3NodeBuild, file: string): boolean {
  return fs.existsSync(path.join(build.root, 'bench', 'servers', file));
}

/** The same with the `initialWindow` option (W10: the option's effect, measured beside the default). */
export function startH3NodeCompatWithInitialWindow(build: H3NodeBuild, packets: number, file: string) {
  return startWithFile(`h3-node (createSecureServer, initialWindow ${packets})`, 'h3-node-compat-iw', 'bench/servers/h3-node-compat.mjs', file, build.root, {
    H3_BENCH_INITIAL_WINDOW: String(packets),
  });
}

/** bench/servers/h3-node-stream.mjs: W8 on the RequestStream interface under createSecureServer. */
export function startH3NodeStream(build: H3NodeBuild, file: string) {
  return startWithFile('h3-node (RequestStream)', 'h3-node-stream', 'bench/servers/h3-node-stream.mjs', file, build.root);
}

/**
 * bench/servers/h3-node-w8-native.mjs: W8 answered inside the I/O thread
 * (createSecureServer's core options, no JavaScript in the transfer), in the
 * addon variant built with the bench feature: the floor under W8's
 * createSecureServer row.
 */
export function startH3NodeW8Native(build: H3NodeBuild, file: string, addon: string) {
  return startWithFile('h3-node (native transfer, no JavaScript)', 'h3-node-w8-native', 'bench/servers/h3-node-w8-native.mjs', file, build.root, undefined, ['--addon', addon]);
}

/** node:http2's createSecureServer with its compatibility API, the same listener (compat-app.mjs). */
export function startNodeHttp2Compat(file?: string) {
  return startWithFile('node-http2 compat', 'node-http2-compat', 'bench/peers/node-http2-compat.mjs', file);
}

/** W8's Caddy: reverse proxy to Node http for POST /upload, file_server for GET /file (bench/peers/Caddyfile-w8). */
export async function startCaddyW8(file: string): Promise<Server & { port: number }> {
  const caddyPort = port();
  const nodePort = port();
  const node = startPinned(SERVER_CORE, process.execPath, ['bench/peers/node-http-upload.mjs', String(nodePort)], { stderrFile: stderrLog('node-http-upload') });
  await listening(node, 'node-http-upload');
  const caddy = startPinned(SERVER_CORE, 'caddy', ['run', '--adapter', 'caddyfile', '--config', 'bench/peers/Caddyfile-w8'], {
    env: {
      H3_BENCH_CADDY_W8_PORT: String(caddyPort),
      H3_BENCH_NODE_UPLOAD_PORT: String(nodePort),
      H3_BENCH_W8_DIR: path.dirname(file),
      H3_BENCH_W8_FILE: path.basename(file),
      H3_BENCH_CERT: CERT,
      H3_BENCH_KEY: KEY,
      XDG_DATA_HOME: path.join(WORK, 'caddy-data'),
      XDG_CONFIG_HOME: path.join(WORK, 'caddy-config'),
    },
    stderrFile: stderrLog('caddy-w8'),
  });
  const processes = [node, caddy];
  try {
    await waitH3(caddyPort, '/');
  } catch (e) {
    for (const p of processes) await p.stop({ signal: 'SIGKILL' });
    throw e;
  }
  return { name: 'caddy (proxy / file_server)', pids: processes.map((p) => p.pid), processes, port: caddyPort };
}

export async function stopServer(s: Server): Promise<void> {
  for (const p of s.processes) await p.stop({ killAfterMs: 3000 });
}
