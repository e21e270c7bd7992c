// The CLI's observability options: log format and level, qlog,
// Prometheus metrics and the Profile B demo page. Kept apart from cli.ts so
// that file stays the thin argument-to-API mapping it is.
import { Command, InvalidArgumentError, Option } from 'commander';
import { createLogger, LOG_FORMATS, LogFormat, Logger } from '../lib/log';
import { startMetrics, MetricsEndpoint } from '../lib/metrics';
import { serveDemoPage, DemoPage } from './demo-page';
import type { Http3Server, ServerOptions } from '../lib/server';
import type { WebTransportStats } from './webtransport-stats';

export interface ObservabilityOptions {
  logFormat: LogFormat;
  quiet?: boolean;
  verbose?: boolean;
  qlogDir?: string;
  metricsPort?: number;
  metricsHost: string;
  demoPage?: number;
}

function parseTcpPort(value: string): number {
  if (!/^[0-9]+$/.test(value) || Number(value) > 65535) {
    throw new InvalidArgumentError('expected an integer from 0 to 65535.');
  }
  return Number(value);
}

export function addObservabilityOptions(program: Command): Command {
  return program
    .addOption(new Option('--log-format <format>', 'diagnostics on stderr: one text line or one JSON object per event').choices([...LOG_FORMATS]).default('text'))
    .addOption(new Option('--quiet', 'only errors and warnings on stderr').conflicts('verbose'))
    .option('--verbose', 'also debug lines: connections opened/closed, every response')
    .option('--qlog-dir <dir>', 'write one qlog file (JSON-SEQ, <server CID>.sqlog) per connection here')
    .option('--metrics-port <integer>', 'serve Prometheus metrics at http://<metrics-host>:<port>/metrics (off by default)', parseTcpPort)
    .option('--metrics-host <address>', 'address for the metrics endpoint', '127.0.0.1')
    .option('--demo-page <port>', 'with --profile b: serve a live WebTransport page at http://127.0.0.1:<port>/', parseTcpPort)
    .addHelpText('after', '\nEnvironment:\n  SSLKEYLOGFILE=<path>      append TLS secrets (NSS key log format) for Wireshark/tshark');
}

/** Checks combinations; returns a one-line error or undefined. */
export function checkObservability(opts: ObservabilityOptions, profile: string): string | undefined {
  if (opts.demoPage !== undefined && profile !== 'b') return '--demo-page needs --profile b (it drives WebTransport)';
  return undefined;
}

export function loggerFor(opts: ObservabilityOptions): Logger {
  return createLogger({ format: opts.logFormat, verbosity: opts.quiet ? 'quiet' : opts.verbose ? 'verbose' : 'normal' });
}

/** Server options that come from these flags. */
export function serverOptionsFor(opts: ObservabilityOptions): ServerOptions {
  return opts.qlogDir ? { qlogDir: opts.qlogDir } : {};
}

/** Starts what must be there before listen (metrics see every connection). */
export async function startBeforeListen(
  server: Http3Server,
  opts: ObservabilityOptions,
  webtransport: boolean,
): Promise<MetricsEndpoint | undefined> {
  if (opts.metricsPort === undefined) return undefined;
  return startMetrics(server, { port: opts.metricsPort, host: opts.metricsHost, webtransport });
}

export async function startAfterListen(
  server: Http3Server,
  opts: ObservabilityOptions,
  udpPort: number,
  stats: WebTransportStats | undefined,
): Promise<DemoPage | undefined> {
  if (opts.demoPage === undefined || !stats) return undefined;
  return serveDemoPage({ port: opts.demoPage, wtPort: udpPort, spki: server.identity.spkiSha256, stats });
}
