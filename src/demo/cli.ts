// The demo server command line: a thin user of the embedding API. src/cli.ts
// runs it (the package's bin).
import { Command, InvalidArgumentError, Option } from 'commander';
import { createServer } from '../lib/server';
import { CONGESTION_CONTROLS, initialWindowRange, RETRY_MODES } from '../lib/transport-options';
import type { CongestionControl, RetryMode } from '../lib/transport-options';
import { withDevHooks } from '../lib/dev-hooks';
import { DEMO_IDENTITY_WARNING } from '../lib/identity';
import { PROFILES } from './profiles';
import { isPrimary } from '../lib/workers';
import {
  addObservabilityOptions,
  checkObservability,
  loggerFor,
  ObservabilityOptions,
  serverOptionsFor,
  startAfterListen,
  startBeforeListen,
} from './cli-observability';

const NAME = 'h3-demo-server';
const USAGE = `usage: ${NAME} [--profile ${Object.keys(PROFILES).join('|')}] [--port <integer>] [--host <address>] [--cert <path> --key <path>] [--log-format text|json] [--quiet|--verbose] [--qlog-dir <dir>] [--metrics-port <port>] [--demo-page <port>]  (--help for details)`;

function parsePort(value: string): number {
  if (!/^[0-9]+$/.test(value) || Number(value) > 65535) {
    throw new InvalidArgumentError('expected an integer from 0 to 65535.');
  }
  return Number(value);
}

/** The limit flags (docs/reliability.md): each maps to the ServerOptions field of the same name. */
const LIMIT_FLAGS = [
  ['--max-connections <n>', 'maxConnections', 'concurrent connections (default 10000)'],
  ['--max-streams-per-connection <n>', 'maxStreamsPerConnection', 'client request streams per connection (default 128)'],
  ['--idle-timeout-ms <ms>', 'idleTimeoutMs', 'QUIC idle timeout (default 30000)'],
  ['--handshake-timeout-ms <ms>', 'handshakeTimeoutMs', 'drop connections whose handshake takes longer (default 10000)'],
  ['--request-timeout-ms <ms>', 'requestTimeoutMs', 'answer 503 for a handler silent this long; 0 = off (default 30000)'],
] as const;

function parseCount(value: string): number {
  if (!/^[0-9]+$/.test(value) || Number(value) > 0xffffffff) {
    throw new InvalidArgumentError('expected a non-negative integer.');
  }
  return Number(value);
}

function fail(message: string): never {
  process.stderr.write(`${NAME}: error: ${message}\n${USAGE}\n`);
  process.exit(2);
}

async function main(argv: string[]): Promise<void> {
  const program = new Command()
    .name(NAME)
    .description(
      'HTTP/3 demo server (QUIC + TLS 1.3 on UDP). Profiles:\n' +
        Object.values(PROFILES)
          .map((p) => `  ${p.name}  ${p.title}`)
          .join('\n'),
    )
    .addOption(new Option('--profile <name>', 'demo profile to serve').choices(Object.keys(PROFILES)).default('a'))
    .option('--port <integer>', 'UDP port to listen on, 0-65535 (0 picks a free port)', parsePort, 4433)
    .option('--host <address>', 'local address to bind, IPv4 or IPv6; :: takes both (0.0.0.0 where the host has no IPv6)', '::')
    .option('--cert <path>', 'PEM certificate chain (default: the public demo certificate in certs/)')
    .option('--key <path>', 'PEM private key matching --cert (default: the public demo key)')
    .option('--workers <integer>', 'serve on this many workers, each a thread with its own I/O thread and socket on the port (1-64)', integerFrom(1, 64), 1);
  for (const [flag, , help] of LIMIT_FLAGS) program.option(flag, help, parseCount);
  const initialWindow = initialWindowRange();
  program
    .addOption(new Option('--cc <name>', 'congestion control').choices([...CONGESTION_CONTROLS]).default('cubic'))
    .option('--no-pacing', "send each loop turn's packets at once instead of at the times quiche's pacer gives them")
    .option(
      '--initial-window <packets>',
      `congestion window a connection starts with, ${initialWindow.min}-${initialWindow.max} packets (default ${initialWindow.default}, RFC 9002)`,
      integerFrom(initialWindow.min, initialWindow.max),
    )
    .addOption(
      new Option('--retry <mode>', 'address validation: Retry always, never, or once 128 handshakes are under way at once').choices([...RETRY_MODES]).default('auto'),
    );
  // Fault injection for the test suite (test/integration/logging.test.ts): a request for
  // this path panics inside the native core. Not in --help: no user needs it.
  program.addOption(new Option('--dev-panic-on-path <path>').hideHelp());
  addObservabilityOptions(program)
    .allowExcessArguments(false)
    .configureOutput({ outputError: (str, write) => write(str) })
    .showHelpAfterError(USAGE)
    .exitOverride((err) => process.exit(err.exitCode === 0 ? 0 : 2));
  program.parse(argv);
  const opts = program.opts<
    {
      profile: string;
      port: number;
      host: string;
      cert?: string;
      key?: string;
      cc: CongestionControl;
      pacing: boolean;
      initialWindow?: number;
      retry: RetryMode;
      workers: number;
      devPanicOnPath?: string;
    } & ObservabilityOptions
  >();
  if ((opts.cert === undefined) !== (opts.key === undefined)) fail('--cert and --key must be given together');
  const combination = checkObservability(opts, opts.profile);
  if (combination) fail(combination);

  const logger = loggerFor(opts);
  const profile = PROFILES[opts.profile];
  const { options, handler, attach, stats } = profile.create(logger);
  const limits: Record<string, number> = {};
  const given = opts as unknown as Record<string, number | undefined>;
  for (const [, key] of LIMIT_FLAGS) if (given[key] !== undefined) limits[key] = given[key]!;
  let server;
  try {
    const serverOptions = {
      ...options,
      ...serverOptionsFor(opts),
      ...limits,
      congestionControl: opts.cc,
      pacing: opts.pacing,
      initialWindow: opts.initialWindow,
      retry: opts.retry,
      workers: opts.workers,
      cert: opts.cert,
      key: opts.key,
      logger,
      warnDemoIdentity: false,
    };
    const panicOnPath = opts.devPanicOnPath;
    server = createServer(panicOnPath === undefined ? serverOptions : withDevHooks(serverOptions, { panicOnPath }), handler);
  } catch (e) {
    return fail((e as Error).message);
  }
  attach?.(server);
  if (!isPrimary) {
    // An added worker (--workers): it serves; the primary prints, answers
    // signals and runs the metrics endpoint and demo page for the server.
    await server.listen(opts.port, opts.host);
    return;
  }
  let addr;
  let metrics;
  let demoPage;
  try {
    metrics = await startBeforeListen(server, opts, Boolean(options.webtransport));
    addr = await server.listen(opts.port, opts.host);
    demoPage = await startAfterListen(server, opts, addr.port, stats);
  } catch (e) {
    return fail((e as Error).message);
  }
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  const spki = server.identity.spkiSha256;
  logger.info(`${NAME}: ${profile.title} listening on udp ${host}:${addr.port} (HTTP/3, ALPN h3${familyNote(opts.host, addr.family)})`);
  if (opts.workers > 1) logger.info(`${NAME}: ${opts.workers} workers, packets steered by ${workerSteeringNote(server)}`);
  logger.info(`${NAME}: certificate ${server.identity.certPath} SPKI sha256 (base64): ${spki}`);
  logger.info(
    `${NAME}: chromium flags: --origin-to-force-quic-on=localhost:${addr.port} --ignore-certificate-errors-spki-list=${spki}`,
  );
  if (metrics) logger.info(`${NAME}: Prometheus metrics at ${metrics.url}`);
  if (demoPage) {
    logger.info(
      `${NAME}: Profile B demo page at ${demoPage.url} ; open it with: chromium --origin-to-force-quic-on=127.0.0.1:${addr.port} --ignore-certificate-errors-spki-list=${spki} ${demoPage.url}`,
    );
  }
  if (opts.qlogDir) logger.info(`${NAME}: writing one qlog file per connection to ${opts.qlogDir}`);
  if (process.env.SSLKEYLOGFILE) logger.warn(`${NAME}: TLS key log on: secrets are appended to ${process.env.SSLKEYLOGFILE} (SSLKEYLOGFILE)`);
  if (server.identity.isDemo) {
    logger.warn(`${NAME}: ${DEMO_IDENTITY_WARNING}`);
  }

  let signals = 0;
  const onSignal = (sig: NodeJS.Signals) => {
    signals += 1;
    if (signals > 1) process.exit(130);
    logger.info(`${NAME}: ${sig} received, closing (GOAWAY, finishing in-flight requests)`);
    server.close().then(() => process.exit(0));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}

/** Runs the demo server from `argv` (process.argv's shape) until SIGINT or SIGTERM; exits 2 on a usage error. */
export function runCli(argv: string[]): void {
  main(argv).catch((e) => fail(String(e?.message ?? e)));
}

/** How the workers' packets are steered, for the startup line. */
function workerSteeringNote(server: { workerStats(): { steering: string; steeringReason: string } | undefined }): string {
  const stats = server.workerStats();
  if (!stats) return 'nothing';
  return stats.steering === 'ebpf' ? 'connection ID in the kernel (eBPF)' : `forwarding between workers (${stats.steeringReason})`;
}

/** A parser for an integer flag within [min, max] (--workers, --initial-window). */
function integerFrom(min: number, max: number): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!/^\d+$/.test(value) || n < min || n > max) throw new InvalidArgumentError(`must be an integer from ${min} to ${max}`);
    return n;
  };
}

/** What the wildcard bind covers: `::` takes IPv4 and IPv6 clients, or fell back to IPv4 alone. */
function familyNote(requested: string, family: string): string {
  if (requested !== '::') return '';
  return family === 'IPv6' ? '; IPv4 and IPv6' : '; IPv4 only: this host has no IPv6';
}
