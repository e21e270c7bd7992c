// Diagnostics: one line per event on stderr; `--log-format json` gives one
// JSON object per line; `--quiet` keeps warnings and errors, `--verbose`
// adds connection and response lines.
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { createLogger } from '../../src/lib/log';
import { runClient } from '../helpers/clients/h3client';
import { CLI } from '../helpers/paths';
import { startProcess } from '../helpers/process';
import { runCli, startCli } from '../helpers/server';

function freeUdpPort(): Promise<number> {
  return new Promise((resolve) => {
    const s = dgram.createSocket('udp4');
    s.bind(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

describe('logging: formats and levels', function () {
  this.timeout(30000);

  it('createLogger keeps each message on one line and filters by level', () => {
    const lines: string[] = [];
    const write = (l: string) => lines.push(l);
    const text = createLogger({ write });
    text.error('handler error on GET /x: Error: boom\n    at a (f.ts:1:1)\n    at b (f.ts:2:2)');
    assert.equal(text.debug, undefined, 'no debug() below verbose, so messages are not even built');
    assert.deepEqual(lines, ['handler error on GET /x: Error: boom |     at a (f.ts:1:1) |     at b (f.ts:2:2)\n']);

    lines.length = 0;
    const json = createLogger({ write, format: 'json', verbosity: 'quiet' });
    json.info('hidden when quiet');
    json.warn('a "quoted"\nwarning');
    assert.equal(lines.length, 1);
    assert.ok(lines[0].endsWith('\n') && lines[0].indexOf('\n') === lines[0].length - 1);
    const rec = JSON.parse(lines[0]);
    assert.equal(rec.level, 'warn');
    assert.equal(rec.msg, 'a "quoted"\nwarning');
    assert.ok(!Number.isNaN(Date.parse(rec.time)));

    lines.length = 0;
    createLogger({ write, verbosity: 'verbose' }).debug!('shown when verbose');
    assert.deepEqual(lines, ['shown when verbose\n']);
  });

  it('--log-format json: every stderr line is a JSON object, including the startup lines and the peer-close diagnostic', async () => {
    const cli = await startCli(['--profile', 'a', '--log-format', 'json']);
    try {
      await runClient(cli.port, { requests: [{ path: '/login' }], close: { error_code: 0x10c, reason: 'bye' } });
      await cli.waitForStderr(/connection closed by peer/);
    } finally {
      assert.equal(await cli.stop(), 0);
    }
    const lines = cli.stderr().trim().split('\n');
    const records = lines.map((l) => JSON.parse(l));
    for (const r of records) {
      assert.deepEqual(Object.keys(r), ['time', 'level', 'msg']);
      assert.ok(['error', 'warn', 'info', 'debug'].includes(r.level));
    }
    assert.ok(records.some((r) => r.level === 'info' && /listening on udp 127\.0\.0\.1:\d+/.test(r.msg)));
    assert.ok(records.some((r) => r.level === 'warn' && /demo identity in use/.test(r.msg)));
    const close = records.find((r) => /connection closed by peer/.test(r.msg));
    assert.match(close.msg, /error_code=0x10c \(application\) reason="bye"/);
  });

  it('--log-format json: a native panic (fault injection) is logged as one JSON record carrying its message, no plain-text line', async () => {
    const cli = await startCli(['--profile', 'a', '--log-format', 'json', '--dev-panic-on-path', '/panic']);
    try {
      const victim = await runClient(cli.port, { timeout: 5, requests: [{ path: '/panic' }] });
      assert.equal(victim.connection_terminated?.error_code, 0x102); // H3_INTERNAL_ERROR
      await cli.waitForStderr(/internal error during HTTP\/3 processing/);
    } finally {
      assert.equal(await cli.stop(), 0);
    }
    const lines = cli.stderr().trim().split('\n');
    const records = lines.map((l) => {
      try {
        return JSON.parse(l);
      } catch {
        assert.fail(`stderr line is not JSON: ${l}`);
      }
    });
    const panic = records.filter((r) => /internal error during HTTP\/3 processing/.test(r.msg));
    assert.equal(panic.length, 1);
    assert.equal(panic[0].level, 'error');
    assert.match(panic[0].msg, /\(panic at \S+\.rs:\d+: fault injection: request for the configured panic path\)$/);
  });

  it('--quiet prints only the warning; --verbose adds connection and response lines', async () => {
    const port = await freeUdpPort();
    const quiet = startProcess(process.execPath, [CLI, '--profile', 'a', '--host', '127.0.0.1', '--port', String(port), '--quiet']);
    const start = Date.now();
    let res;
    // The quiet server prints no startup line: poll it with requests until it answers.
    while (Date.now() - start < 10000) {
      res = await runClient(port, { requests: [{ path: '/login' }], timeout: 1 });
      if (res.connected) break;
    }
    assert.equal(res?.responses[0].status, 200);
    await quiet.stop();
    const err = quiet.stderr();
    assert.deepEqual(err.trim().split('\n'), [
      'h3-demo-server: WARNING: demo identity in use; its private key is public. Never use it in production.',
    ]);

    const cli = await startCli(['--profile', 'a', '--verbose']);
    try {
      await runClient(cli.port, { requests: [{ path: '/nope' }] });
      await cli.waitForStderr(/connection closed by peer/);
    } finally {
      await cli.stop();
    }
    assert.match(cli.stderr(), /^connection open: cid=[0-9a-f]{40} peer=127\.0\.0\.1:\d+$/m);
    assert.match(cli.stderr(), /^response 404 to GET \/nope \(connection \d+\)$/m);
  });

  it('--quiet and --verbose together are refused with a one-line error', async () => {
    const { code, stderr: err } = await runCli(['--quiet', '--verbose']);
    assert.equal(code, 2);
    assert.match(err, /error: option '--quiet' cannot be used with option '--verbose'\nusage: /);
  });
});
