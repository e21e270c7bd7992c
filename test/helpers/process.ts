// One way to run child processes, for the tests and the bench harness alike:
// start a server (the CLI, a launcher script, a peer) and wait for its
// startup line, or run a client or script to its end; collect what it
// prints; stop it (a signal, then SIGKILL past a deadline).
//
// Every process started here stays in one registry until it has exited, so
// none outlives its test (test/helpers/mocha/process-cleanup.ts stops what a test
// left running) or the bench run (stopAll), and none outlives this process.
import { spawn, ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export type Stream = 'stdout' | 'stderr';

export interface StartOptions {
  /** Working directory; this process's own by default. */
  cwd?: string;
  /** Variables set on top of this process's environment. */
  env?: NodeJS.ProcessEnv;
  /** Keep the child's stdin open for send(); otherwise it reads nothing. */
  stdin?: boolean;
  /** Names the process in error messages (the command's file name by default). */
  label?: string;
  /** Also write what the process prints on stderr to this file. */
  stderrFile?: string;
  /** Also write what the process prints on stdout and stderr to this file, as it comes (a build log to follow). */
  outputFile?: string;
  /** Run as this user and group (the tests use it to drop root's privileges). */
  uid?: number;
  gid?: number;
}

export interface RunOptions extends StartOptions {
  /** Written to stdin, which is then closed. */
  input?: string;
  /** SIGKILL after this long (no limit by default). */
  timeoutMs?: number;
}

export interface Finished {
  /** The exit code, or null when a signal ended the process. */
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface StopOptions {
  signal?: NodeJS.Signals;
  /** SIGKILL when the process has not exited this long after the signal. */
  killAfterMs?: number;
}

/**
 * 'test' for a process started while a mocha test (or its beforeEach) runs:
 * the cleanup hook stops it when that test ends. 'run' otherwise: it is
 * stopped at the latest when the whole run ends.
 */
export type Scope = 'test' | 'run';

const live = new Set<ManagedProcess>();
let scopeOfNewProcesses: Scope = 'run';

/** Called by the mocha root hooks around each test. */
export function setScopeOfNewProcesses(scope: Scope): void {
  scopeOfNewProcesses = scope;
}

type Waiter = () => void;

export class ManagedProcess {
  readonly child: ChildProcess;
  readonly label: string;
  readonly scope: Scope;
  /** Resolves with the exit code (null when a signal ended it) once the process has exited and all its output is read. */
  readonly exited: Promise<number | null>;
  private readonly text: Record<Stream, string> = { stdout: '', stderr: '' };
  private readonly partial: Record<Stream, string> = { stdout: '', stderr: '' };
  private readonly lineListeners: Record<Stream, Array<(line: string) => void>> = { stdout: [], stderr: [] };
  /** Woken on new output and on exit. */
  private readonly waiters = new Set<Waiter>();
  private finished?: Finished;
  private failure?: Error;

  constructor(command: string, args: string[], options: StartOptions = {}) {
    this.label = options.label ?? path.basename(command);
    this.scope = scopeOfNewProcesses;
    this.child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env ? { ...process.env, ...options.env } : process.env,
      stdio: [options.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      ...(options.uid !== undefined ? { uid: options.uid } : {}),
      ...(options.gid !== undefined ? { gid: options.gid } : {}),
    });
    live.add(this);
    if (options.stderrFile) this.child.stderr!.pipe(fs.createWriteStream(options.stderrFile));
    if (options.outputFile) {
      const file = fs.createWriteStream(options.outputFile);
      for (const stream of [this.child.stdout!, this.child.stderr!]) stream.pipe(file, { end: false });
      this.child.on('close', () => file.end());
    }
    for (const stream of ['stdout', 'stderr'] as const) {
      this.child[stream]!.setEncoding('utf8');
      this.child[stream]!.on('data', (chunk: string) => this.received(stream, chunk));
    }
    this.exited = new Promise((resolve) => {
      const settle = (code: number | null, signal: NodeJS.Signals | null) => {
        if (this.finished) return;
        for (const stream of ['stdout', 'stderr'] as const) if (this.partial[stream]) this.emitLine(stream, this.partial[stream]);
        this.finished = { code, signal, stdout: this.text.stdout, stderr: this.text.stderr };
        live.delete(this);
        this.wake();
        resolve(code);
      };
      this.child.on('close', settle);
      this.child.on('error', (e) => {
        // Spawning failed (no such command, no permission): there is no process to wait for.
        if (this.child.pid !== undefined) return;
        this.failure = new Error(`cannot run ${command}: ${e.message}`);
        settle(null, null);
      });
    });
  }

  get pid(): number {
    return this.child.pid!;
  }

  get running(): boolean {
    return this.finished === undefined;
  }

  /** The exit code, null while running or when a signal ended it. */
  get exitCode(): number | null {
    return this.finished?.code ?? null;
  }

  stdout(): string {
    return this.text.stdout;
  }

  stderr(): string {
    return this.text.stderr;
  }

  /** Calls `listener` with every complete line the process prints on `stream` from now on. */
  onLine(stream: Stream, listener: (line: string) => void): void {
    this.lineListeners[stream].push(listener);
  }

  /** Writes to the child's stdin (started with `stdin: true`). */
  send(text: string): void {
    this.child.stdin!.write(text);
  }

  signal(signal: NodeJS.Signals): void {
    if (this.running) this.child.kill(signal);
  }

  /**
   * Resolves with the first match of `pattern` in what the process printed on
   * `stream` (both, each on its own, by default), including what it printed
   * before the call. Rejects when the process exits first or after `timeoutMs`.
   */
  waitFor(pattern: RegExp, { stream, timeoutMs = 10_000 }: { stream?: Stream; timeoutMs?: number } = {}): Promise<RegExpMatchArray> {
    const streams: Stream[] = stream ? [stream] : ['stderr', 'stdout'];
    return this.until(`${pattern}`, timeoutMs, () => {
      for (const s of streams) {
        const m = this.text[s].match(pattern);
        if (m) return m;
      }
      return undefined;
    });
  }

  /** Resolves with the first line on stdout that is a JSON object `accept` takes, including lines printed before the call. */
  waitForJson<T = Record<string, unknown>>(accept: (value: T) => boolean = () => true, timeoutMs = 15_000): Promise<T> {
    return this.until('a JSON line on stdout', timeoutMs, () => {
      for (const line of this.completeLines('stdout')) {
        const value = parseJsonObject<T>(line);
        if (value !== undefined && accept(value)) return value;
      }
      return undefined;
    });
  }

  /** Resolves with the next complete line printed on `stream` after the call. */
  nextLine(stream: Stream = 'stdout', timeoutMs = 10_000): Promise<string> {
    let line: string | undefined;
    this.onceLine(stream, (l) => (line = l));
    return this.until(`a line on ${stream}`, timeoutMs, () => line);
  }

  /**
   * Sends `signal` (SIGTERM by default) unless the process has exited, and
   * resolves with its exit code; SIGKILL when it has not exited after
   * `killAfterMs`.
   */
  async stop({ signal = 'SIGTERM', killAfterMs = 10_000 }: StopOptions = {}): Promise<number | null> {
    if (!this.running) return this.exitCode;
    this.child.kill(signal);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), killAfterMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Everything the process printed and how it ended, once it has exited. */
  async result(): Promise<Finished> {
    await this.exited;
    if (this.failure) throw this.failure;
    return this.finished!;
  }

  private received(stream: Stream, chunk: string): void {
    this.text[stream] += chunk;
    if (this.lineListeners[stream].length) {
      const lines = (this.partial[stream] + chunk).split('\n');
      this.partial[stream] = lines.pop()!;
      for (const line of lines) this.emitLine(stream, line);
    }
    this.wake();
  }

  private emitLine(stream: Stream, line: string): void {
    for (const listener of [...this.lineListeners[stream]]) listener(line);
  }

  private onceLine(stream: Stream, listener: (line: string) => void): void {
    // Lines are split only for streams with listeners: start from here.
    if (this.lineListeners[stream].length === 0) this.partial[stream] = this.text[stream].slice(this.text[stream].lastIndexOf('\n') + 1);
    const once = (line: string) => {
      this.lineListeners[stream] = this.lineListeners[stream].filter((l) => l !== once);
      listener(line);
    };
    this.lineListeners[stream].push(once);
  }

  private completeLines(stream: Stream): string[] {
    const text = this.text[stream];
    return text.slice(0, text.lastIndexOf('\n') + 1).split('\n');
  }

  private wake(): void {
    for (const waiter of [...this.waiters]) waiter();
  }

  /** Resolves with `found()`'s first defined value, re-checked on every output; rejects on exit or timeout. */
  private until<T>(what: string, timeoutMs: number, found: () => T | undefined): Promise<T> {
    return new Promise((resolve, reject) => {
      const done = () => {
        this.waiters.delete(check);
        clearTimeout(timer);
      };
      const check = () => {
        const value = found();
        if (value !== undefined) {
          done();
          resolve(value);
        } else if (!this.running) {
          done();
          reject(this.failure ?? new Error(`${this.label} exited ${this.describeExit()} before ${what}; ${this.outputTail()}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what} from ${this.label}; ${this.outputTail()}`));
      }, timeoutMs);
      this.waiters.add(check);
      check();
    });
  }

  private describeExit(): string {
    return this.finished?.signal ? `on ${this.finished.signal}` : String(this.finished?.code);
  }

  private outputTail(): string {
    const tail = (s: string) => (s.length > 2000 ? `...${s.slice(-2000)}` : s);
    return `stderr: ${tail(this.text.stderr.trim())}${this.text.stdout.trim() ? `; stdout: ${tail(this.text.stdout.trim())}` : ''}`;
  }
}

function parseJsonObject<T>(line: string): T | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    return JSON.parse(line) as T;
  } catch {
    return undefined;
  }
}

/** Starts `command args...`; see ManagedProcess for waiting on it and stopping it. */
export function startProcess(command: string, args: string[], options: StartOptions = {}): ManagedProcess {
  return new ManagedProcess(command, args, options);
}

/** Runs `command args...` to its end (SIGKILL past `timeoutMs`); resolves with its exit and output, whatever the exit code. */
export async function runProcess(command: string, args: string[], options: RunOptions = {}): Promise<Finished> {
  const { input, timeoutMs, ...start } = options;
  const p = startProcess(command, args, { ...start, stdin: start.stdin || input !== undefined });
  if (input !== undefined) {
    // A child that exits without reading its input must not fail the run with EPIPE.
    p.child.stdin!.on('error', () => undefined);
    p.child.stdin!.end(input);
  }
  const timer = timeoutMs === undefined ? undefined : setTimeout(() => p.signal('SIGKILL'), timeoutMs);
  try {
    return await p.result();
  } finally {
    clearTimeout(timer);
  }
}

/**
 * How every external test client speaks (aioquic scripts, the quic-go
 * programs): an optional JSON plan on stdin, one JSON result on stdout.
 * Resolves with stdout parsed as JSON; a process that prints no valid JSON
 * rejects with its exit code and stderr, named by `label`.
 */
export async function runJsonProcess<T>(command: string, args: string[], input?: unknown, label = command): Promise<T> {
  const r = await runProcess(command, args, { label, ...(input !== undefined ? { input: JSON.stringify(input) } : {}) });
  try {
    return JSON.parse(r.stdout) as T;
  } catch {
    throw new Error(`${label} exited ${r.code}: ${r.stderr.trim() || r.stdout.trim()}`);
  }
}

/** Stops every process still running (of one scope, or all): SIGTERM, SIGKILL after `killAfterMs`. */
export async function stopAll(scope?: Scope, killAfterMs = 3000): Promise<void> {
  await Promise.all([...live].filter((p) => scope === undefined || p.scope === scope).map((p) => p.stop({ killAfterMs })));
}

// Last resort when this process exits with children still running (an
// uncaught error, process.exit): they must not keep ports and cores.
process.on('exit', () => {
  for (const p of live) p.child.kill('SIGKILL');
});
