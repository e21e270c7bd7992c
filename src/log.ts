// Diagnostics: one line per event on stderr (the spec's "diagnostic output"),
// never part of a response.

export interface Logger {
  error(message: string): void;
  warn(message: string): void;
  info(message: string): void;
}

export const stderrLogger: Logger = {
  error: (m) => process.stderr.write(`${m}\n`),
  warn: (m) => process.stderr.write(`${m}\n`),
  info: (m) => process.stderr.write(`${m}\n`),
};

export const silentLogger: Logger = { error() {}, warn() {}, info() {} };
