// The library never serves the public demo identity silently: without
// `cert` and `key`, listen() logs the CLI's warning; with an identity of the
// application's own, nothing. The CLI says it once, after its startup lines.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createServer } from '../../src';
import { request } from '../helpers/clients/h3client';
import { MemoryLogger, startCli } from '../helpers/server';

const WARNING = /WARNING: demo identity in use; its private key is public\. Never use it in production\./;

describe('the demo identity is never used silently', function () {
  this.timeout(30000);

  it('createServer() without cert/key warns once at listen(), in the CLI\'s words, and still serves', async () => {
    const logger = new MemoryLogger();
    const server = createServer({ logger }, (_req, res) => res.text(200, 'ok\n'));
    assert.equal(logger.lines.filter((l) => WARNING.test(l)).length, 0, 'nothing before listen()');
    const { port } = await server.listen(0, '127.0.0.1');
    try {
      assert.deepEqual(logger.lines.filter((l) => WARNING.test(l)), [
        'h3-node: WARNING: demo identity in use; its private key is public. Never use it in production. Pass cert and key to createServer for your own.',
      ]);
      assert.equal((await request(port, { path: '/' })).status, 200);
    } finally {
      await server.close();
    }
  });

  it('an identity of its own: no warning', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3-identity-'));
    try {
      const [cert, key] = [path.join(dir, 'cert.pem'), path.join(dir, 'key.pem')];
      execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
        '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1', '-keyout', key, '-out', cert], { stdio: 'ignore' });
      const logger = new MemoryLogger();
      const server = createServer({ logger, cert, key }, (_req, res) => res.text(200, 'own\n'));
      const { port } = await server.listen(0, '127.0.0.1');
      try {
        assert.equal((await request(port, { path: '/' })).body_text, 'own\n');
        assert.deepEqual(logger.lines.filter((l) => /demo identity/.test(l)), []);
      } finally {
        await server.close();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the CLI prints the warning exactly once, as its last startup line', async () => {
    const cli = await startCli(['--profile', 'a']);
    try {
      await cli.waitForStderr(WARNING);
      await new Promise((r) => setTimeout(r, 300));
      const lines = cli.stderr().trim().split('\n');
      assert.equal(lines.filter((l) => WARNING.test(l)).length, 1, cli.stderr());
      assert.match(lines.at(-1)!, /^h3-demo-server: WARNING: demo identity/);
    } finally {
      await cli.stop();
    }
  });
});
