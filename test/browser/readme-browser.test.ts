// The README's browser commands, run as written: the Chromium flags, URLs
// and the Profile B DevTools snippet are read from README.md (only the port
// the test chose and the SPKI placeholder are filled in), the server is the
// CLI with its default bind, and the browser goes to `localhost`, which
// Chromium resolves to ::1 first.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import { AddressInfo } from 'node:net';
import path from 'node:path';
import { launchChromiumWithArgs, Launched } from '../helpers/chromium';
import { CLI } from '../helpers/paths';
import { ManagedProcess, startProcess } from '../helpers/process';

const README = fs.readFileSync(path.join(__dirname, '..', '..', 'README.md'), 'utf8');
const README_PORT = '4433';

/** The text of a README section, from its heading to the next heading of the same or a higher level. */
function section(heading: string): string {
  const start = README.indexOf(`\n${heading}`);
  assert.ok(start >= 0, `README has no section ${heading}`);
  const level = heading.match(/^#+/)![0];
  const rest = README.slice(start + heading.length + 1);
  const end = rest.search(new RegExp(`\\n#{1,${level.length}} `));
  return end < 0 ? rest : rest.slice(0, end);
}

/** The fenced code blocks of `lang` in a section, in order. */
function blocks(text: string, lang: string): string[] {
  return [...text.matchAll(new RegExp('```' + lang + '\\n([\\s\\S]*?)```', 'g'))].map((m) => m[1]);
}

/** A README `chromium ...` command: its flags and the URL it opens. */
function chromiumCommand(block: string): { flags: string[]; url: string } {
  const line = block.replace(/\\\n\s*/g, ' ').split('\n').find((l) => l.startsWith('chromium '));
  assert.ok(line, `no chromium command in:\n${block}`);
  const words = line.split(/ (?=--|https?:)/).slice(1);
  return { flags: words.filter((w) => w.startsWith('--')), url: words.find((w) => /^https?:/.test(w))!.trim() };
}

interface Cli {
  child: ManagedProcess;
  port: number;
  spki: string;
  stderr: () => string;
}

/** `node dist/cli.js <args> --port 0` with no --host: the default bind. */
async function startDefaultCli(args: string[]): Promise<Cli> {
  const child = startProcess(process.execPath, [CLI, ...args, '--port', '0'], { label: 'CLI' });
  await child.waitFor(/WARNING: demo identity/, { stream: 'stderr' }); // the last startup line
  const err = child.stderr();
  const port = Number(err.match(/listening on udp \S+:(\d+)/)?.[1]);
  const spki = err.match(/SPKI sha256 \(base64\): (\S+)/)?.[1];
  assert.ok(port && spki, err);
  return { child, port, spki, stderr: () => child.stderr() };
}

async function stop(cli: Cli | undefined): Promise<void> {
  await cli?.child.stop();
}

/** The README's flags for this run: its port replaced, its SPKI placeholder filled in. */
function flagsFor(flags: string[], port: number, spki: string): string[] {
  return flags.map((f) => f.replaceAll(`:${README_PORT}`, `:${port}`).replace(/<the SPKI hash[^>]*>/, spki));
}

describe('README browser commands, as written, against the default bind (headless Chromium)', function () {
  this.timeout(90000);
  let cli: Cli | undefined;
  let chrome: Launched | undefined;
  let page: http.Server | undefined;

  afterEach(async () => {
    await chrome?.close();
    chrome = undefined;
    page?.close();
    page = undefined;
    await stop(cli);
    cli = undefined;
  });

  it('Quick start: the Profile A login page over HTTP/3 at https://localhost', async () => {
    const quickStart = section('## Quick start');
    assert.match(quickStart, /node dist\/cli\.js --profile a\b/);
    const command = chromiumCommand(blocks(quickStart, 'sh').find((b) => b.includes('chromium '))!);
    assert.match(command.url, /^https:\/\/localhost:4433\//);
    cli = await startDefaultCli(['--profile', 'a']);
    assert.match(cli.stderr(), /listening on udp \[::\]:\d+/);
    chrome = await launchChromiumWithArgs(flagsFor(command.flags, cli.port, cli.spki));
    const tab = await chrome.browser.newPage();
    const response = await tab.goto(command.url.replace(`:${README_PORT}`, `:${cli.port}`));
    assert.equal(response?.status(), 200);
    assert.equal(await tab.evaluate(() => document.body.innerText), 'login succeeded\n');
    await tab.close();
  });

  it('Profile B: the DevTools snippet opens a session from a localhost page; its stream and datagram are echoed; /stats counts them', async () => {
    const profileB = section('## Profile B');
    const shBlock = blocks(profileB, 'sh').find((b) => b.includes('chromium ') && b.includes('--profile b'))!;
    assert.ok(shBlock, 'Profile B has a chromium command');
    const command = chromiumCommand(shBlock);
    const snippet = blocks(profileB, 'js').find((b) => b.includes('new WebTransport('));
    assert.ok(snippet, 'Profile B has a DevTools snippet');
    const statsUrl = profileB.match(/`(https:\/\/localhost:4433\/stats)`/)?.[1];
    assert.ok(statsUrl, 'Profile B names its /stats URL');

    cli = await startDefaultCli(['--profile', 'b']);
    // The README prints a real hash for the demo certificate: it must be the one the server prints.
    const readmeSpki = command.flags.find((f) => f.startsWith('--ignore-certificate-errors-spki-list='))!.split('=').slice(1).join('=');
    assert.equal(readmeSpki, cli.spki);
    // "serve any page on http://localhost": the README's page URL, on a port of ours.
    page = http.createServer((_q, r) => r.end('<!doctype html><title>devtools</title>'));
    await new Promise<void>((r) => page!.listen(0, '::', r));
    const pagePort = (page.address() as AddressInfo).port;
    const pageUrl = new URL(command.url);
    assert.equal(pageUrl.hostname, 'localhost');
    pageUrl.port = String(pagePort);

    chrome = await launchChromiumWithArgs(flagsFor(command.flags, cli.port, cli.spki));
    const tab = await chrome.browser.newPage();
    await tab.goto(pageUrl.href);
    // The snippet as written (top-level await, as the console allows), inside
    // an async function; then what the snippet leaves to the reader: the
    // stream's echo it decoded, and the datagram echoed back.
    const script = `(async () => {
${snippet.replaceAll(`:${README_PORT}`, `:${cli.port}`)}
const echoed = new TextDecoder().decode(value);
const { value: datagram } = await wt.datagrams.readable.getReader().read();
return { echoed, datagram: Array.from(datagram) };
})()`;
    const result = (await tab.evaluate(script)) as { echoed: string; datagram: number[] };
    assert.deepEqual(result, { echoed: 'hi', datagram: [1, 2, 3] });

    const statsTab = await chrome.browser.newPage();
    const stats = await statsTab.goto(statsUrl.replace(`:${README_PORT}`, `:${cli.port}`));
    assert.equal(stats?.status(), 200);
    const doc = JSON.parse(await statsTab.evaluate(() => document.body.innerText));
    assert.deepEqual(doc.usage, { sessions: 1, streams: 1, datagrams: 1 });
    assert.equal(doc.occupancy.sessions, 1);
  });
});
