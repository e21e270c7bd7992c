// Workers (the `workers` option): one server on several cores. The thread
// that calls listen() is worker 0; it starts the others as worker threads,
// each running the application's module again (the main script, as
// `cluster` does, or `workerEntry`), and in each the first server that
// listens becomes that worker: its own I/O thread and its own SO_REUSEPORT
// socket on the same port, in one native worker group. The group steers a
// packet to the worker owning its connection ID (native/core/src/workers.rs)
// and holds the counters every worker adds to. A worker that dies is started
// again; only its connections are lost.
import { fileURLToPath } from 'node:url';
import { isMainThread, MessageChannel, MessagePort, Worker, workerData } from 'node:worker_threads';
import { addon, NativeGroupStats } from '../native/binding';
import type { Logger } from './log';

/** How packets reach the worker that owns their connection. */
export const WORKER_STEERINGS = ['auto', 'forwarding'] as const;
export type WorkerSteering = (typeof WORKER_STEERINGS)[number];

export interface WorkerOptions {
  /**
   * Serve on this many workers (default 1): each its own JavaScript thread
   * running the application and its own I/O thread and socket on the port.
   * See the README, "Every core", for when more than one pays off.
   */
  workers?: number;
  /**
   * The module each added worker runs (a path or file: URL); it must create
   * the same server and call listen(). Default: the main script
   * (process.argv[1]), run with the same arguments, as `cluster` does.
   */
  workerEntry?: string | URL;
  /**
   * 'auto' (the default): the kernel steers each packet to its worker by an
   * eBPF program where it allows (root or CAP_BPF), else workers forward
   * packets they do not own; 'forwarding': always forward.
   */
  workerSteering?: WorkerSteering;
}

/** What a worker thread is told: which group, which place, where to listen. */
interface Assignment {
  group: number;
  index: number;
  count: number;
  port: number;
  host: string;
  control: MessagePort;
}

type ToPrimary = { type: 'listening' } | { type: 'error'; message: string } | { type: 'closed' };
type ToWorker = { type: 'close'; graceful: boolean };

const DATA_KEY = '__h3nodeWorker';
/** A worker that dies after it served is started again after this pause. */
const RESTART_DELAY_MS = 100;
/** A closing worker that has not exited this long after its close is stopped. */
const CLOSE_GRACE_MS = 5000;
/** A worker that has not listened this long after it started fails the primary's listen(). */
const LISTEN_DEADLINE_MS = 30_000;

let unclaimed: Assignment | undefined = isMainThread ? undefined : (workerData as Record<string, Assignment> | null)?.[DATA_KEY];

/** True unless this thread is a worker h3-node started (like cluster.isPrimary). */
export const isPrimary = unclaimed === undefined;
/** This thread's worker index: 0 in the primary, 1 to workers - 1 in the others. */
export const workerIndex = unclaimed?.index ?? 0;

/** In a worker thread, the first server to listen takes the worker's place; later ones listen as usual. */
export function claimWorkerPlace(): WorkerPlace | undefined {
  const a = unclaimed;
  unclaimed = undefined;
  return a && new WorkerPlace(a);
}

/** The worker side: listens where the primary says, reports, closes when told. */
export class WorkerPlace {
  constructor(private readonly a: Assignment) {}

  get group(): number {
    return this.a.group;
  }
  get index(): number {
    return this.a.index;
  }
  get port(): number {
    return this.a.port;
  }
  get host(): string {
    return this.a.host;
  }

  failed(e: unknown): void {
    this.send({ type: 'error', message: (e as Error).message ?? String(e) });
  }

  /** Listening: tell the primary, and close when it says. */
  listening(close: (graceful: boolean) => Promise<void>): void {
    this.a.control.on('message', (m: ToWorker) => {
      if (m.type !== 'close') return;
      close(m.graceful).finally(() => {
        this.send({ type: 'closed' });
        this.a.control.close();
      });
    });
    this.send({ type: 'listening' });
  }

  private send(m: ToPrimary): void {
    this.a.control.postMessage(m);
  }
}

/** The primary side: starts workers 1..count-1, restarts those that die, closes them all. */
export class WorkerPool {
  private readonly threads = new Map<number, { worker: Worker; control: MessagePort; served: boolean }>();
  private readonly exited = new Map<number, () => void>();
  private closing: Promise<void> | undefined;
  private resolveReady!: () => void;
  private rejectReady!: (e: Error) => void;
  private waiting: number;
  /** Workers started again after dying. */
  restarts = 0;
  /** Resolves once every worker listens; rejects if one cannot. */
  readonly ready: Promise<void>;

  constructor(
    readonly group: number,
    readonly count: number,
    private readonly entry: string,
    private readonly port: number,
    private readonly host: string,
    private readonly logger: Logger,
  ) {
    this.waiting = count - 1;
    this.ready = new Promise<void>((resolve, reject) => {
      this.resolveReady = resolve;
      this.rejectReady = reject;
    });
    // A failure is also reported through whoever awaits it; this keeps an
    // unawaited one from ending the process.
    this.ready.catch(() => {});
    if (this.waiting === 0) this.resolveReady();
  }

  start(): void {
    for (let i = 1; i < this.count; i++) this.spawn(i);
  }

  stats(): NativeGroupStats | null {
    return addon().workerGroupStats(this.group);
  }

  private spawn(index: number): void {
    const { port1, port2 } = new MessageChannel();
    const assignment: Assignment = { group: this.group, index, count: this.count, port: this.port, host: this.host, control: port2 };
    let worker: Worker;
    try {
      const options = {
        argv: process.argv.slice(2),
        workerData: { [DATA_KEY]: assignment },
        transferList: [port2],
      };
      worker = isTypeScript(this.entry)
        ? new Worker(tsxBootstrap(this.entry), { ...options, eval: true })
        : new Worker(this.entry, options);
    } catch (e) {
      this.rejectReady(new Error(`cannot start worker ${index}: ${(e as Error).message}`));
      return;
    }
    const thread = { worker, control: port1, served: false };
    this.threads.set(index, thread);
    // An entry that never makes the server (or never listens) would leave
    // listen() waiting for ever.
    const deadline = setTimeout(() => {
      if (!thread.served) {
        this.rejectReady(new Error(`worker ${index} did not listen within ${LISTEN_DEADLINE_MS / 1000} s: does ${this.entry} create the server and call listen()?`));
      }
    }, LISTEN_DEADLINE_MS);
    deadline.unref();
    port1.on('message', (m: ToPrimary) => {
      if (m.type === 'listening' && !thread.served) {
        thread.served = true;
        clearTimeout(deadline);
        if (--this.waiting === 0) this.resolveReady();
      } else if (m.type === 'error') {
        this.rejectReady(new Error(`worker ${index}: ${m.message}`));
      }
    });
    worker.on('error', (e) => this.logger.error(`h3-node: worker ${index}: ${e.stack ?? e}`));
    worker.on('exit', (code) => {
      port1.close();
      this.threads.delete(index);
      const done = this.exited.get(index);
      if (done) return done();
      if (this.closing) return;
      if (!thread.served) {
        // Never listened: starting it again would fail the same way.
        this.rejectReady(new Error(`worker ${index} exited (code ${code}) before it listened`));
        return;
      }
      this.logger.warn(`h3-node: worker ${index} exited (code ${code}); starting it again`);
      this.restarts += 1;
      setTimeout(() => {
        if (!this.closing) this.spawn(index);
      }, RESTART_DELAY_MS);
    });
  }

  /** Closes every worker (graceful: each drains as the primary does). */
  close(graceful: boolean): Promise<void> {
    this.closing ??= Promise.all(
      [...this.threads].map(
        ([index, t]) =>
          new Promise<void>((resolve) => {
            const timer = setTimeout(() => void t.worker.terminate(), CLOSE_GRACE_MS);
            this.exited.set(index, () => {
              clearTimeout(timer);
              resolve();
            });
            // Closed: whatever else the application left running in the
            // thread (timers, other servers) does not keep it.
            t.control.on('message', (m: ToPrimary) => {
              if (m.type === 'closed') void t.worker.terminate();
            });
            t.control.postMessage({ type: 'close', graceful } satisfies ToWorker);
          }),
      ),
    ).then(() => addon().releaseWorkerGroup(this.group));
    return this.closing;
  }
}

/** The worker count an option gives, checked (a one-line TypeError otherwise). */
export function workerCount(n: unknown): number {
  if (n === undefined) return 1;
  if (!Number.isInteger(n) || (n as number) < 1 || (n as number) > 64) {
    throw new TypeError(`workers must be an integer from 1 to 64, got ${JSON.stringify(n)}`);
  }
  return n as number;
}

/** The module added workers run. */
export function workerEntryPath(entry: string | URL | undefined): string {
  if (entry === undefined) {
    if (!process.argv[1]) throw new TypeError('workers needs workerEntry when there is no main script');
    return process.argv[1];
  }
  return entry instanceof URL || entry.startsWith('file:') ? fileURLToPath(entry) : entry;
}

function isTypeScript(entry: string): boolean {
  return /\.[cm]?ts$/.test(entry);
}

/**
 * A TypeScript entry (tests, apps run with tsx) loads through tsx's require
 * hook: in Node 20 a worker's `--import tsx` does not reach its first module
 * (ERR_UNKNOWN_FILE_EXTENSION), so the worker starts from a bootstrap.
 */
function tsxBootstrap(entry: string): string {
  const at = JSON.stringify(entry);
  return `require(require.resolve('tsx/cjs', { paths: [${at}] })); require(${at});`;
}
