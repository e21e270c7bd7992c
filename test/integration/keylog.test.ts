// TLS key log (SSLKEYLOGFILE): a loopback capture of a real request is
// decrypted by tshark with the key log the server wrote, and the HTTP/3
// HEADERS of /login are found in it. Without the key log tshark sees no
// HTTP/3 at all, so it is the key log that decrypts.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createServer, Http3Server } from '../../src';
import { withDevHooks } from '../../src/lib/dev-hooks';
import { handleProfileA } from '../../src/demo/profiles/profile-a';
import { startCapture, http3Frames, decodeFieldSections } from '../helpers/capture';
import { request } from '../helpers/clients/h3client';
import { MemoryLogger } from '../helpers/server';

const HEADERS = 0x1;
const KEYLOG_LINE = /^(CLIENT_HANDSHAKE_TRAFFIC_SECRET|SERVER_HANDSHAKE_TRAFFIC_SECRET|CLIENT_TRAFFIC_SECRET_0|SERVER_TRAFFIC_SECRET_0|EXPORTER_SECRET) [0-9a-f]{64} [0-9a-f]{64,96}$/;

describe('TLS key log (SSLKEYLOGFILE) decrypts a tshark capture', function () {
  this.timeout(60000);
  let dir: string;
  let server: Http3Server | undefined;
  const saved = process.env.SSLKEYLOGFILE;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3-keylog-'));
  });
  afterEach(async () => {
    if (saved === undefined) delete process.env.SSLKEYLOGFILE;
    else process.env.SSLKEYLOGFILE = saved;
    await server?.close();
    server = undefined;
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('with SSLKEYLOGFILE set, tshark decrypts the capture and finds the HEADERS of GET /login and its 200 answer', async () => {
    const keyLog = path.join(dir, 'keys.log');
    process.env.SSLKEYLOGFILE = keyLog;
    // No GSO: a capture on lo keeps a GSO run as one datagram, which tshark
    // cannot split, so an answer that left in one went undecoded (CI).
    server = createServer(withDevHooks({ logger: new MemoryLogger() }, { noGso: true }), handleProfileA);
    const { port } = await server.listen(0, '127.0.0.1');
    const pcap = path.join(dir, 'capture.pcapng');
    const capture = await startCapture(port, pcap);
    const res = await request(port, { path: '/login' });
    assert.equal(res.status, 200);
    await new Promise((r) => setTimeout(r, 300));
    await capture.stop();

    const lines = fs.readFileSync(keyLog, 'utf8').trim().split('\n');
    assert.equal(lines.length, 5, `one connection: five NSS key-log lines\n${lines.join('\n')}`);
    for (const l of lines) assert.match(l, KEYLOG_LINE);

    const frames = await http3Frames(pcap, port, keyLog);
    const headers = frames.filter((f) => f.type === HEADERS);
    const fromClient = headers.filter((f) => f.srcPort !== port);
    const fromServer = headers.filter((f) => f.srcPort === port);
    assert.equal(fromClient.length, 1, JSON.stringify(frames));
    assert.equal(fromServer.length, 1, JSON.stringify(frames));
    const [req, resp] = await decodeFieldSections([fromClient[0].payload, fromServer[0].payload]);
    assert.ok(Array.isArray(req) && Array.isArray(resp), JSON.stringify([req, resp]));
    assert.deepEqual(req.find(([n]) => n === ':path'), [':path', '/login']);
    assert.deepEqual(req.find(([n]) => n === ':method'), [':method', 'GET']);
    assert.deepEqual(resp.find(([n]) => n === ':status'), [':status', '200']);
    assert.deepEqual(resp.find(([n]) => n === 'set-cookie'), ['set-cookie', 'session=h3-demo-7b41e0']);

    // The same capture without the key log: nothing of HTTP/3 is readable.
    assert.deepEqual(await http3Frames(pcap, port), []);
  });

  it('appends: two connections add their lines to one existing file (keyLogFile option)', async () => {
    const keyLog = path.join(dir, 'keys.log');
    fs.writeFileSync(keyLog, '# earlier content stays\n');
    server = createServer({ logger: new MemoryLogger(), keyLogFile: keyLog }, handleProfileA);
    const { port } = await server.listen(0, '127.0.0.1');
    await request(port, { path: '/login' });
    await request(port, { path: '/secret' });
    const lines = fs.readFileSync(keyLog, 'utf8').trim().split('\n');
    assert.equal(lines[0], '# earlier content stays');
    assert.equal(lines.length, 1 + 2 * 5);
    for (const l of lines.slice(1)) assert.match(l, KEYLOG_LINE);
    // Two connections: two distinct client randoms.
    assert.equal(new Set(lines.slice(1).map((l) => l.split(' ')[1])).size, 2);
  });

  it('without SSLKEYLOGFILE nothing is written; keyLogFile: false overrides the environment', async () => {
    const keyLog = path.join(dir, 'keys.log');
    process.env.SSLKEYLOGFILE = keyLog;
    server = createServer({ logger: new MemoryLogger(), keyLogFile: false }, handleProfileA);
    const { port } = await server.listen(0, '127.0.0.1');
    assert.equal((await request(port, { path: '/login' })).status, 200);
    assert.equal(fs.existsSync(keyLog), false);
  });

  it('an unwritable key log path fails listen() with a one-line error', async () => {
    server = createServer({ logger: new MemoryLogger(), keyLogFile: path.join(dir, 'missing', 'keys.log') });
    await assert.rejects(server.listen(0, '127.0.0.1'), (e: Error) => {
      assert.match(e.message, /^cannot open the TLS key log file .*missing\/keys\.log/);
      assert.ok(!e.message.includes('\n'));
      return true;
    });
    server = undefined;
  });
});
