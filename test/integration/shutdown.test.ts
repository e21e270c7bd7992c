// Shutdown and startup failures of the CLI, beyond
// test/integration/cli.test.ts: both signals with a request in flight (GOAWAY seen by the
// client, the request finishes, exit 0 within 5 s), and identity files that
// exist but cannot be read (permission denied, a directory).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { b64, runClient } from '../helpers/clients/h3client';
import { runCli, startCli } from '../helpers/server';

const CERT = path.resolve(__dirname, '..', '..', 'certs', 'demo-cert.pem');
const KEY = path.resolve(__dirname, '..', '..', 'certs', 'demo-key.pem');

/** Runs the CLI to its exit, as an unprivileged user when we are root (root reads any file). */
function runCliAs(args: string[]): Promise<{ code: number | null; stderr: string }> {
  const asNobody = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};
  return runCli(['--port', '0', '--host', '127.0.0.1', ...args], asNobody);
}

describe('CLI shutdown with requests in flight', function () {
  this.timeout(30000);

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`${signal}: GOAWAY reaches the client, the in-flight upload finishes with 200, exit 0 within 5 s`, async () => {
      const cli = await startCli(['--profile', 'c']);
      // 25 chunks 100 ms apart: 2.4 s of upload, well inside the 3 s drain
      // deadline, and the signal comes 1.2 s in (the Python client needs a
      // few hundred ms to start and connect on a busy machine).
      const chunks = Array(25).fill(b64('x'.repeat(10)));
      const upload = runClient(cli.port, {
        timeout: 10,
        requests: [{ method: 'POST', path: '/', body_chunks_b64: chunks, chunk_delay_ms: 100 }],
      });
      await new Promise((r) => setTimeout(r, 1200)); // the upload is under way
      const started = Date.now();
      cli.signal(signal);
      const result = await upload;
      const code = await cli.exited;
      const took = Date.now() - started;
      assert.ok(result.connected && result.responses.length === 1, `client: ${JSON.stringify(result)}`);
      assert.equal(result.responses[0].status, 200, JSON.stringify(result.responses[0]));
      assert.equal(result.responses[0].body_text, '250\n');
      assert.equal(result.goaway, 4, 'GOAWAY names the first request stream not served (stream 0 was)');
      assert.equal(code, 0);
      assert.ok(took < 5000, `took ${took} ms`);
      assert.match(cli.stderr(), new RegExp(`${signal} received, closing`));
    });
  }
});

describe('CLI identity files that cannot be read', function () {
  this.timeout(30000);
  let dir: string;

  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3-unreadable-'));
    fs.chmodSync(dir, 0o755);
    for (const [name, from] of [['cert.pem', CERT], ['key.pem', KEY]]) {
      fs.copyFileSync(from, path.join(dir, name));
      fs.chmodSync(path.join(dir, name), 0o000);
    }
    fs.mkdirSync(path.join(dir, 'a-directory'));
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  const cases: [string, () => string[], RegExp][] = [
    ['a certificate without read permission', () => ['--cert', path.join(dir, 'cert.pem'), '--key', KEY], /cannot read certificate .*cert\.pem: EACCES/],
    ['a key without read permission', () => ['--cert', CERT, '--key', path.join(dir, 'key.pem')], /cannot read private key .*key\.pem: EACCES/],
    ['a certificate path that is a directory', () => ['--cert', path.join(dir, 'a-directory'), '--key', KEY], /cannot read certificate .*a-directory: EISDIR/],
    ['a missing key', () => ['--cert', CERT, '--key', path.join(dir, 'missing.pem')], /cannot read private key .*missing\.pem: ENOENT/],
  ];
  for (const [what, args, pattern] of cases) {
    it(`${what}: one-line error, exit 2`, async () => {
      const { code, stderr } = await runCliAs(['--profile', 'a', ...args()]);
      assert.equal(code, 2);
      const lines = stderr.trim().split('\n');
      assert.equal(lines.length, 2, stderr);
      assert.match(lines[0], pattern);
      assert.match(lines[1], /^usage: h3-demo-server/);
    });
  }
});
