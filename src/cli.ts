#!/usr/bin/env node
// The demo server command line: a thin user of the embedding API.
import { Command, InvalidArgumentError, Option } from 'commander';
import { createServer } from './server';
import { PROFILES } from './profiles';
import { stderrLogger } from './log';

const NAME = 'h3-demo-server';
const USAGE = `usage: ${NAME} [--profile ${Object.keys(PROFILES).join('|')}] [--port <integer>] [--host <address>] [--cert <path> --key <path>]  (--help for details)`;

function parsePort(value: string): number {
  if (!/^[0-9]+$/.test(value) || Number(value) > 65535) {
    throw new InvalidArgumentError('expected an integer from 0 to 65535.');
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
    .option('--host <address>', 'local address to bind (IPv4 or IPv6)', '0.0.0.0')
    .option('--cert <path>', 'PEM certificate chain (default: the public demo certificate in certs/)')
    .option('--key <path>', 'PEM private key matching --cert (default: the public demo key)')
    .allowExcessArguments(false)
    .configureOutput({ outputError: (str, write) => write(str) })
    .showHelpAfterError(USAGE)
    .exitOverride((err) => process.exit(err.exitCode === 0 ? 0 : 2));
  program.parse(argv);
  const opts = program.opts<{ profile: string; port: number; host: string; cert?: string; key?: string }>();
  if ((opts.cert === undefined) !== (opts.key === undefined)) fail('--cert and --key must be given together');

  const logger = stderrLogger;
  const profile = PROFILES[opts.profile];
  const { options, handler, attach } = profile.create(logger);
  let server;
  try {
    server = createServer({ ...options, cert: opts.cert, key: opts.key, logger }, handler);
  } catch (e) {
    return fail((e as Error).message);
  }
  attach?.(server);
  let addr;
  try {
    addr = await server.listen(opts.port, opts.host);
  } catch (e) {
    return fail((e as Error).message);
  }
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  const spki = server.identity.spkiSha256;
  logger.info(`${NAME}: ${profile.title} listening on udp ${host}:${addr.port} (HTTP/3, ALPN h3)`);
  logger.info(`${NAME}: certificate ${server.identity.certPath} SPKI sha256 (base64): ${spki}`);
  logger.info(
    `${NAME}: chromium flags: --origin-to-force-quic-on=localhost:${addr.port} --ignore-certificate-errors-spki-list=${spki}`,
  );
  if (server.identity.isDemo) {
    logger.warn(`${NAME}: WARNING: demo identity in use; its private key is public. Never use it in production.`);
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

main(process.argv).catch((e) => fail(String(e?.message ?? e)));
