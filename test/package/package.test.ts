// The installable package: scripts/pack.sh (npm pack) makes a tarball that
// installs into a fresh project with no Rust toolchain on PATH, carries the
// prebuilt addon, serves HTTP/3 from the typed API and from its `bin`, and
// type-checks against its .d.ts. npm fetches commander and prom-client from
// the npm registry as for any install.
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { request } from '../helpers/clients/h3client';
import { ROOT } from '../helpers/paths';
import { ManagedProcess, startProcess } from '../helpers/process';
import { PREBUILT_PLATFORMS } from '../../src/native/binding';

const PKG_VERSION = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')).version as string;

const run = promisify(execFile);

// PATH without any directory that holds a Rust toolchain.
const NO_RUST_PATH = (process.env.PATH ?? '')
  .split(path.delimiter)
  .filter((d) => d && !fs.existsSync(path.join(d, 'cargo')) && !fs.existsSync(path.join(d, 'rustc')))
  .join(path.delimiter);
const ENV = { ...process.env, PATH: NO_RUST_PATH, CARGO_HOME: '/nonexistent', RUSTUP_HOME: '/nonexistent' };

const stop = (child: ManagedProcess) => child.stop();

describe('installable package (npm pack -> npm install without Rust)', function () {
  this.timeout(180000);
  let dir: string;
  let project: string;
  let tarball: string;
  let platformTarball: string;
  const children: ManagedProcess[] = [];

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3-package-'));
    project = path.join(dir, 'app');
    fs.mkdirSync(project);
    const { stdout } = await run('bash', [path.join(ROOT, 'scripts', 'pack.sh'), dir], { cwd: ROOT });
    const tarballs = stdout.trim().split('\n');
    tarball = tarballs.at(-1)!;
    platformTarball = tarballs.find((t) => t.endsWith(`h3-node-linux-x64-gnu-${PKG_VERSION}.tgz`))!;
    assert.ok(fs.existsSync(tarball), tarball);
    assert.ok(platformTarball && fs.existsSync(platformTarball), `no linux-x64-gnu package among ${tarballs.join(', ')}`);
    fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true }));
    assert.notEqual(spawnSync('sh', ['-c', 'command -v cargo || command -v rustc'], { env: ENV }).status, 0, 'no Rust on PATH');
    await run('npm', ['install', '--no-audit', '--no-fund', tarball, platformTarball], { cwd: project, env: ENV });
  });
  after(async () => {
    await Promise.all(children.map(stop));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('carries the prebuilt addon, the declarations, the demo identity, a bin entry and the Node engine range', async () => {
    const pkgDir = path.join(project, 'node_modules', 'h3-node');
    const pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8'));
    assert.equal(pkg.engines.node, '>=22.12.0');
    assert.equal(pkg.bin['h3-demo-server'], 'dist/cli.js');
    assert.equal(pkg.types, 'dist/index.d.ts');
    const addon = fs.readdirSync(path.join(pkgDir, 'dist', 'native')).filter((f) => f.endsWith('.node'));
    assert.deepEqual(addon, [], 'the main package carries no addon');
    assert.deepEqual(Object.keys(pkg.optionalDependencies).sort(), PREBUILT_PLATFORMS.map((p) => `h3-node-${p}`).sort());
    for (const v of Object.values(pkg.optionalDependencies)) assert.equal(v, pkg.version);
    const platformDir = path.join(project, 'node_modules', 'h3-node-linux-x64-gnu');
    const platformPkg = JSON.parse(fs.readFileSync(path.join(platformDir, 'package.json'), 'utf8'));
    assert.deepEqual([platformPkg.os, platformPkg.cpu, platformPkg.libc], [['linux'], ['x64'], ['glibc']]);
    assert.deepEqual(fs.readdirSync(platformDir).filter((f) => f.endsWith('.node')), ['h3core.linux-x64-gnu.node']);
    for (const f of ['dist/index.d.ts', 'dist/demo/index.d.ts', 'certs/demo-cert.pem', 'certs/demo-key.pem', 'deploy/quic-lb-nft.sh']) {
      assert.ok(fs.existsSync(path.join(pkgDir, f)), f);
    }
    assert.ok(fs.existsSync(path.join(project, 'node_modules', '.bin', 'h3-demo-server')));
    // Nothing from the source tree or the build rides along.
    for (const f of ['src', 'native', 'target', 'test', 'Cargo.toml']) assert.ok(!fs.existsSync(path.join(pkgDir, f)), f);
  });

  it('exports h3-node and h3-node/demo only: internal modules, dev hooks included, are not reachable by path', async () => {
    const probe = `
const ok = (id) => { try { require(id); return 'loads'; } catch (e) { return e.code; } };
console.log(JSON.stringify({
  main: ok('h3-node'), demo: ok('h3-node/demo'), pkg: ok('h3-node/package.json'),
  devHooks: ok('h3-node/dist/lib/dev-hooks'), server: ok('h3-node/dist/server'), binding: ok('h3-node/dist/native/binding.js'), cert: ok('h3-node/certs/demo-key.pem'),
}));`;
    const out = await run(process.execPath, ['-e', probe], { cwd: project, env: ENV });
    assert.deepEqual(JSON.parse(out.stdout), {
      main: 'loads',
      demo: 'loads',
      pkg: 'loads',
      devHooks: 'ERR_PACKAGE_PATH_NOT_EXPORTED',
      server: 'ERR_PACKAGE_PATH_NOT_EXPORTED',
      binding: 'ERR_PACKAGE_PATH_NOT_EXPORTED',
      cert: 'ERR_PACKAGE_PATH_NOT_EXPORTED',
    });
  });

  it('on a platform without an addon package, require fails at once with one line naming it, the prebuilt ones and the way to build', async () => {
    const probe = (arch: string) =>
      run(process.execPath, ['-e', `Object.defineProperty(process, 'arch', { value: '${arch}' }); require('h3-node')`], { cwd: project, env: ENV }).then(
        () => assert.fail('require succeeded'),
        (e: { stderr: string }) => e.stderr.split('\n').find((l) => l.startsWith('Error: '))!,
      );
    const riscv = await probe('riscv64');
    assert.match(riscv, /^Error: h3-node: no prebuilt addon for linux-riscv64-gnu \(prebuilt: linux-x64-gnu, linux-arm64-gnu, linux-x64-musl, linux-arm64-musl, darwin-arm64, darwin-x64\); build it from source .*"Build from source"$/);
    // arm64 is a prebuilt platform, but its package is not installed here (npm installs only the one that fits).
    assert.match(await probe('arm64'), /^Error: h3-node: the addon for linux-arm64-gnu is not installed \(package h3-node-linux-arm64-gnu, an optional dependency/);
  });

  it("the README's Express and Fastify snippet, as written, serves from the installed package (aioquic)", async function () {
    this.timeout(180000);
    const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const snippet = /```js\n(import fs from 'node:fs';\nimport express from 'express';[\s\S]*?)```/.exec(readme)?.[1];
    assert.ok(snippet, "README's framework snippet");
    await run('npm', ['install', '--no-audit', '--no-fund', 'express@5', 'fastify@5'], { cwd: project, env: ENV });
    fs.copyFileSync(path.join(ROOT, 'certs', 'demo-cert.pem'), path.join(project, 'cert.pem'));
    fs.copyFileSync(path.join(ROOT, 'certs', 'demo-key.pem'), path.join(project, 'key.pem'));
    // Its ports moved to free ones (ports 4433 and 4434 may be taken on a test machine).
    const [expressPort, fastifyPort] = [20000 + Math.floor(Math.random() * 20000), 0].map((p, i, all) => p || all[0] + 1);
    const script = snippet.replace('.listen(4433)', `.listen(${expressPort})`).replace('port: 4434', `port: ${fastifyPort}`);
    assert.notEqual(script, snippet);
    fs.writeFileSync(path.join(project, 'readme-frameworks.mjs'), `${script}\nconsole.log('ready');\n`);
    const child = startProcess(process.execPath, ['readme-frameworks.mjs'], { cwd: project, env: ENV });
    children.push(child);
    await child.waitFor(/ready/, { timeoutMs: 20000 });
    for (const port of [expressPort, fastifyPort]) {
      const res = await request(port, { path: '/hello' });
      assert.equal(res.status, 200, `port ${port}: ${JSON.stringify(res)}`);
      assert.equal(res.body_text, 'hello');
    }
  });

  it('a script using createServer from the installed package answers an HTTP/3 request (aioquic)', async () => {
    fs.writeFileSync(
      path.join(project, 'serve.js'),
      `const { createServer } = require('h3-node');
const server = createServer((req, res) => res.text(200, 'hello from the installed package: ' + req.path + '\\n'));
server.listen(0, '127.0.0.1').then((a) => console.log('port=' + a.port));
process.on('SIGTERM', () => server.close().then(() => process.exit(0)));
`,
    );
    const child = startProcess(process.execPath, ['serve.js'], { cwd: project, env: ENV });
    children.push(child);
    const port = Number((await child.waitFor(/port=(\d+)/, { timeoutMs: 15000 }))[1]);
    const res = await request(port, { path: '/from-npm' });
    assert.equal(res.status, 200);
    assert.equal(res.body_text, 'hello from the installed package: /from-npm\n');
    assert.equal(await stop(child), 0);
  });

  it('the bin entry runs the demo server (Profile A /login over HTTP/3)', async () => {
    const bin = path.join(project, 'node_modules', '.bin', 'h3-demo-server');
    const child = startProcess(bin, ['--profile', 'a', '--port', '0', '--host', '127.0.0.1'], { cwd: project, env: ENV });
    children.push(child);
    const port = Number((await child.waitFor(/listening on udp 127\.0\.0\.1:(\d+)/, { timeoutMs: 15000 }))[1]);
    const res = await request(port, { path: '/login' });
    assert.equal(res.status, 200);
    assert.equal(res.body_text, 'login succeeded\n');
    assert.equal(await stop(child), 0);
  });

  it('its declarations type-check a TypeScript consumer (tsc --strict)', async () => {
    fs.writeFileSync(
      path.join(project, 'check.ts'),
      `import { createServer, ServerOptions, H3Request, H3Response, startMetrics } from 'h3-node';
const options: ServerOptions = { port: 0, qlogDir: '/tmp/q', keyLogFile: false, webtransport: true };
const server = createServer(options, (req: H3Request, res: H3Response) => res.text(200, req.path));
void startMetrics(server, { port: 0 });
// @ts-expect-error: an unknown option is a type error
createServer({ notAnOption: 1 });
`,
    );
    const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    await run(process.execPath, [
      tsc,
      '--noEmit',
      '--strict',
      '--module',
      'commonjs',
      '--moduleResolution',
      'node',
      '--target',
      'ES2022',
      '--typeRoots',
      path.join(ROOT, 'node_modules', '@types'),
      '--types',
      'node',
      'check.ts',
    ], { cwd: project, env: ENV }).catch((e) => assert.fail(`tsc: ${e.stdout}${e.stderr}`));
  });
});
