// The command line: option validation, the startup lines, and the
// CONNECTION_CLOSE diagnostic, read from a spawned `node dist/cli.js`.
import assert from 'node:assert/strict';
import { runClient } from '../helpers/clients/h3client';
import { runCli, startCli } from '../helpers/server';

describe('CLI (node dist/cli.js)', function () {
  this.timeout(30000);

  for (const bad of ['70000', '-1', '4.5', 'abc', '65536', '']) {
    it(`--port ${JSON.stringify(bad)} exits non-zero with a one-line error and the usage`, async () => {
      const { code, stderr } = await runCli(['--profile', 'a', `--port=${bad}`]);
      assert.notEqual(code, 0);
      const lines = stderr.trim().split('\n');
      assert.equal(lines.length, 2, stderr);
      assert.match(lines[0], /error: .*--port/);
      assert.match(lines[1], /^usage: h3-demo-server/);
    });
  }

  it('--port with its value missing exits non-zero with a one-line error and the usage', async () => {
    const { code, stderr } = await runCli(['--profile', 'a', '--port']);
    assert.notEqual(code, 0);
    assert.match(stderr, /error: option '--port <integer>' argument missing\nusage: /);
  });

  it('an unknown profile is rejected the same way', async () => {
    const { code, stderr } = await runCli(['--profile', 'z']);
    assert.notEqual(code, 0);
    assert.match(stderr, /error: .*'z'.*\nusage: /);
  });

  for (const bad of ['0', '65', '1.5', 'two']) {
    it(`--workers ${bad} exits 2 with a one-line error naming the range`, async () => {
      const { code, stderr } = await runCli(['--profile', 'a', '--workers', bad]);
      assert.equal(code, 2);
      assert.match(stderr, /error: option '--workers <integer>' argument '.*' is invalid\. must be an integer from 1 to 64\nusage: /);
    });
  }

  it('--help explains every option', async () => {
    const { code, stdout } = await runCli(['--help']);
    assert.equal(code, 0);
    for (const opt of ['--profile', '--port', '--host', '--cert', '--key', '--workers', '--cc', '--no-pacing', '--initial-window', '--retry', '--help']) assert.ok(stdout.includes(opt), opt);
  });

  it('a port already in use ends with a one-line error and a non-zero exit', async () => {
    const first = await startCli(['--profile', 'a']);
    try {
      const { code, stderr } = await runCli(['--profile', 'a', '--host', '127.0.0.1', '--port', String(first.port)]);
      assert.notEqual(code, 0);
      assert.match(stderr, /error: UDP port \d+ on 127\.0\.0\.1 is already in use/);
    } finally {
      await first.stop();
    }
  });

  it('port 0 binds an ephemeral port; startup prints address, port, profile, SPKI hash and the demo warning', async () => {
    const cli = await startCli(['--profile', 'a']);
    try {
      assert.ok(cli.port > 0 && cli.port < 65536);
      // Each startup line is its own write; wait for the last one before reading them all.
      await cli.waitForStderr(/WARNING: demo identity/);
      const err = cli.stderr();
      assert.match(err, /Profile A .* listening on udp 127\.0\.0\.1:\d+/);
      assert.match(err, /SPKI sha256 \(base64\): [A-Za-z0-9+/]{43}=/);
      assert.match(err, /WARNING: demo identity .* Never use it in production/);
      const res = await runClient(cli.port, { requests: [{ path: '/login' }] });
      assert.equal(res.responses[0].status, 200);
    } finally {
      assert.equal(await cli.stop(), 0);
    }
  });

  it('logs one line when a client closes with CONNECTION_CLOSE, with cid, peer, code and reason', async () => {
    const cli = await startCli(['--profile', 'a']);
    try {
      await runClient(cli.port, { requests: [{ path: '/login' }], close: { error_code: 0x10c, reason: 'bye now' } });
      const line = await cli.waitForStderr(/connection closed by peer \(CONNECTION_CLOSE\).*\n/);
      assert.match(line, /cid=[0-9a-f]{40} peer=127\.0\.0\.1:\d+ error_code=0x10c \(application\) reason="bye now"/);
      assert.equal(cli.stderr().match(/closed by peer/g)?.length, 1);
    } finally {
      await cli.stop();
    }
  });

  it('does not log a peer close when the client vanishes without CONNECTION_CLOSE', async () => {
    const cli = await startCli(['--profile', 'a']);
    try {
      const res = await runClient(cli.port, { requests: [{ path: '/login' }], close: null });
      assert.equal(res.responses[0].status, 200);
      await new Promise((r) => setTimeout(r, 500));
      assert.doesNotMatch(cli.stderr(), /closed by peer/);
    } finally {
      await cli.stop();
    }
  });
});

describe('CLI identity errors and signals', function () {
  this.timeout(30000);

  it('an unreadable certificate, a non-PEM file, and a key that does not match end with a one-line error', async () => {
    const fs = await import('node:fs');
    const os = await import('node:os');
    const path = await import('node:path');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3-identity-'));
    const crypto = await import('node:crypto');
    const other = crypto.generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ type: 'pkcs8', format: 'pem' });
    fs.writeFileSync(path.join(dir, 'other-key.pem'), other);
    fs.writeFileSync(path.join(dir, 'junk.pem'), 'not a certificate');
    const cert = path.resolve(__dirname, '..', '..', 'certs', 'demo-cert.pem');
    const cases: [string[], RegExp][] = [
      [['--cert', path.join(dir, 'missing.pem'), '--key', path.join(dir, 'other-key.pem')], /cannot read certificate .*missing\.pem: ENOENT/],
      [['--cert', path.join(dir, 'junk.pem'), '--key', path.join(dir, 'other-key.pem')], /is not a PEM X\.509 certificate/],
      [['--cert', cert, '--key', path.join(dir, 'other-key.pem')], /does not match certificate/],
      [['--cert', cert], /--cert and --key must be given together/],
    ];
    try {
      for (const [args, pattern] of cases) {
        const { code, stderr } = await runCli(['--profile', 'a', '--port', '0', ...args]);
        assert.notEqual(code, 0, args.join(' '));
        const lines = stderr.trim().split('\n');
        assert.match(lines[0], pattern);
        assert.equal(lines.length, 2, stderr);
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('SIGTERM closes gracefully and exits 0 within 5 s', async () => {
    const cli = await startCli(['--profile', 'a']);
    await runClient(cli.port, { requests: [{ path: '/login' }], close: null });
    const started = Date.now();
    const code = await cli.stop();
    assert.equal(code, 0);
    assert.ok(Date.now() - started < 5000, `took ${Date.now() - started} ms`);
  });

  it('a second signal exits at once, even with a request in flight', async () => {
    const cli = await startCli(['--profile', 'c']);
    // A slow upload keeps a request in flight, so the first signal's graceful close waits.
    const upload = runClient(cli.port, {
      timeout: 3,
      requests: [{ method: 'POST', path: '/', body_chunks_b64: Array(20).fill(Buffer.from('x').toString('base64')), chunk_delay_ms: 200 }],
    });
    await new Promise((r) => setTimeout(r, 1000));
    const started = Date.now();
    cli.signal('SIGINT');
    await new Promise((r) => setTimeout(r, 100));
    cli.signal('SIGINT');
    const code = await cli.exited;
    assert.notEqual(code, 0);
    assert.ok(Date.now() - started < 1500, `took ${Date.now() - started} ms`);
    await upload.catch(() => undefined);
  });
});
