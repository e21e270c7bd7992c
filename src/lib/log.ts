// Diagnostics: one line per event on stderr (the spec's "diagnostic output"),
// never part of a response. Text lines by default; `json` writes one JSON
// object per line for log shippers. Levels: `quiet` keeps errors and
// warnings, `normal` adds the informational lines, `verbose` adds debug
// lines (connections opened and closed, each answered request).

export interface Logger {
  error(message: string): void;
  warn(message: string): void;
  info(message: string): void;
  /** Present only on verbose loggers; call it as `logger.debug?.(...)`. */
  debug?(message: string): void;
}

export type LogFormat = 'text' | 'json';
export type LogVerbosity = 'quiet' | 'normal' | 'verbose';

export const LOG_FORMATS: readonly LogFormat[] = ['text', 'json'];

const RANK = { error: 0, warn: 1, info: 2, debug: 3 } as const;
const THRESHOLD: Record<LogVerbosity, number> = { quiet: RANK.warn, normal: RANK.info, verbose: RANK.debug };

type Level = keyof typeof RANK;

// Lines logged while one event batch is handled (Profile C logs one per
// request) leave in one stderr write when the batch's synchronous work ends,
// not one write system call per line. Bounded: past 64 KiB it writes at once;
// and on exit whatever is pending is written before the process ends.
const PENDING_MAX = 64 * 1024;
let pending = '';
let flushQueued = false;
let exitHooked = false;

function flushStderr(): void {
  flushQueued = false;
  if (pending === '') return;
  const out = pending;
  pending = '';
  process.stderr.write(out);
}

function writeStderr(line: string): void {
  pending += line;
  if (pending.length >= PENDING_MAX) return flushStderr();
  if (!exitHooked) {
    exitHooked = true;
    process.on('exit', flushStderr);
  }
  if (!flushQueued) {
    flushQueued = true;
    queueMicrotask(flushStderr);
  }
}

/** A logger writing one line per message to `write` (stderr by default). */
export function createLogger(
  options: { format?: LogFormat; verbosity?: LogVerbosity; write?: (line: string) => void } = {},
): Logger {
  const format = options.format ?? 'text';
  const threshold = THRESHOLD[options.verbosity ?? 'normal'];
  const write = options.write ?? writeStderr;
  const line = (level: Level, message: string) => {
    if (RANK[level] > threshold) return;
    // A message never spans lines: a stack trace becomes one line too.
    if (format === 'json') {
      write(`${JSON.stringify({ time: new Date().toISOString(), level, msg: message })}\n`);
    } else {
      write(`${message.replace(/\r?\n/g, ' | ')}\n`);
    }
  };
  const logger: Logger = {
    error: (m) => line('error', m),
    warn: (m) => line('warn', m),
    info: (m) => line('info', m),
  };
  // Only a verbose logger has debug(): callers write `logger.debug?.(...)`,
  // which then skips building the message at all.
  if (threshold >= RANK.debug) logger.debug = (m) => line('debug', m);
  return logger;
}

export const stderrLogger: Logger = createLogger();

export const silentLogger: Logger = { error() {}, warn() {}, info() {} };
