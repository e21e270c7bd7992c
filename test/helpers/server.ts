// Starts servers for tests: in-process through the embedding API, or the
// built CLI as a child process whose stderr the test can read.
import { ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { createServer, Http3Server, RequestHandler, ServerOptions } from '../../src';
import type { Logger } from '../../src/lib/log';

const ROOT = path.resolve(__dirname, '..', '..');
export const CLI = path.join(ROOT, 'dist', 'cli.js');

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

export interface CliProcess {
  child: ChildProcess;
  port: number;
  stderr: () => string;
  waitForStderr(pattern: RegExp, timeoutMs?: number): Promise<string>;
  stop(): Promise<number | null>;
}

/** Spawns `node dist/cli.js args...` on an ephemeral port and waits for its startup line. */
export async function startCli(args: string[]): Promise<CliProcess> {
  const child = spawn(process.execPath, [CLI, '--port', '0', '--host', '127.0.0.1', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr!.on('data', (d) => (err += d));
  const waitForStderr = (pattern: RegExp, timeoutMs = 10000) =>
    new Promise<string>((resolve, reject) => {
      const started = Date.now();
      const poll = () => {
        const m = err.match(pattern);
        if (m) return resolve(m[0]);
        if (child.exitCode !== null) return reject(new Error(`CLI exited ${child.exitCode}: ${err}`));
        if (Date.now() - started > timeoutMs) return reject(new Error(`timed out waiting for ${pattern}; stderr: ${err}`));
        setTimeout(poll, 20);
      };
      poll();
    });
  const line = await waitForStderr(/listening on udp \S+:(\d+)/);
  const port = Number(line.match(/:(\d+)$/)![1]);
  return {
    child,
    port,
    stderr: () => err,
    waitForStderr,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve(child.exitCode);
        child.once('exit', (code) => resolve(code));
        child.kill('SIGTERM');
      }),
  };
}

/** Runs the CLI to completion (for argument errors); returns exit code and output. */
export function runCli(args: string[], timeoutMs = 10000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
