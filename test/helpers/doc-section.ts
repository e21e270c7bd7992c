// Generated parts of a hand-written document: each test that generates one
// owns the lines between `<!-- name:start -->` and `<!-- name:end -->`, so
// several generators (and the prose around them) share one file.
import fs from 'node:fs';

/** Replaces section `name` of `file` with `lines` (appends it when the file has none). */
export function writeDocSection(file: string, name: string, lines: string[]): void {
  // Tracked docs change only when asked (H3_UPDATE_DOCS=1 npm test): a plain
  // test run leaves the work tree as it found it.
  if (process.env.H3_UPDATE_DOCS !== '1') return;
  const start = `<!-- ${name}:start -->`;
  const end = `<!-- ${name}:end -->`;
  const text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  const block = [start, ...lines, end].join('\n');
  const a = text.indexOf(start);
  const b = text.indexOf(end);
  const next = a >= 0 && b > a ? text.slice(0, a) + block + text.slice(b + end.length) : `${text.replace(/\n*$/, '\n\n')}${block}\n`;
  fs.writeFileSync(file, next);
}

/** Below a matrix: the numbered notes its cells point to, then the clients that ran, each with its version. */
export function notesAndClients(notes: readonly string[], clients: readonly { name: string; version: string }[]): string[] {
  return [
    ...(notes.length ? ['Notes:', '', ...notes.map((n, i) => `${i + 1}. ${n}`), ''] : []),
    'Clients:',
    '',
    ...clients.map((c) => `- **${c.name}**: ${c.version}`),
    '',
  ];
}
