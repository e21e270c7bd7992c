// Progress and results go to stdout as the run goes.
export function log(msg: string) {
  process.stdout.write(`${msg}\n`);
}
