// Starts servers for tests: in-process through the embedding API, or the
// built CLI as a child process whose stderr the test can read.
import { createServer, Http3SecureServer, Http3Server, RequestHandler, ServerOptions } from '../../src';
import type { Logger } from '../../src/lib/log';
import { CLI } from './paths';
import { makeWorkersApp, WorkersAppSettings } from './fixtures/workers-app';
import { Finished, ManagedProcess, RunOptions, runProcess } from './process';

export class MemoryLogger implements Logger {
  readonly lines: string[] = [];
  error(m: string) {
    this.lines.push(m);
  }
  warn(m: string) {
    this.lines.push(m);
  }
  info(m: string) {
    this.lines.push(m);
  }
}

export async function startServer(
  handler: RequestHandler | undefined,
  options: ServerOptions = {},
): Promise<{ server: Http3Server; port: number; logger: MemoryLogger }> {
  const logger = new MemoryLogger();
  const server = createServer({ logger, ...options }, handler);
  const { port } = await server.listen(0, '127.0.0.1');
  return { server, port, logger };
}

/** A server of test/helpers/fixtures/workers-app.ts on `settings.workers` workers: this thread is worker 0. */
export function startOnWorkers(settings: WorkersAppSettings & { app: 'compat' }): Promise<{ server: Http3SecureServer; port: number }>;
export function startOnWorkers(settings: WorkersAppSettings): Promise<{ server: Http3Server; port: number }>;
export async function startOnWorkers(settings: WorkersAppSettings): Promise<{ server: Http3Server | Http3SecureServer; port: number }> {
  process.env.H3_WORKERS_APP = JSON.stringify(settings);
  const server = makeWorkersApp(settings);
  if (server instanceof Http3SecureServer) {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
    return { server, port: server.address()!.port };
  }
  const { port } = await server.listen(0, '127.0.0.1');
  return { server, port };
}

/** A suite's title suffix for its run on workers. */
export function onWorkers(workers: number): string {
  return workers > 1 ? `, on ${workers} workers` : '';
}

/** The CLI as a child process: the port it printed, and its stderr, where it writes every diagnostic. */
export class CliProcess extends ManagedProcess {
  port = 0;

  /** Resolves with the first text on stderr matching `pattern` (see ManagedProcess.waitFor). */
  async waitForStderr(pattern: RegExp, timeoutMs = 10000): Promise<string> {
    return (await this.waitFor(pattern, { stream: 'stderr', timeoutMs }))[0];
  }
}

/** Spawns `node dist/cli.js args...` on an ephemeral port and waits for its startup line. */
export async function startCli(args: string[]): Promise<CliProcess> {
  const cli = new CliProcess(process.execPath, [CLI, '--port', '0', '--host', '127.0.0.1', ...args], { label: 'CLI' });
  try {
    cli.port = Number((await cli.waitFor(/listening on udp \S+:(\d+)/, { stream: 'stderr' }))[1]);
  } catch (e) {
    await cli.stop({ killAfterMs: 1000 });
    throw e;
  }
  return cli;
}

/** Runs the CLI to completion (for argument errors); returns exit code and output. */
export function runCli(args: string[], options: Pick<RunOptions, 'uid' | 'gid'> = {}): Promise<Finished> {
  return runProcess(process.execPath, [CLI, ...args], { ...options, timeoutMs: 10000 });
}
