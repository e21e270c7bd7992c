// qlog: `qlogDir` / `--qlog-dir` writes one JSON-SEQ file per connection
// from quiche's qlog support, named after the server's connection ID.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createServer, Http3Server } from '../../src';
import { handleProfileA } from '../../src/demo/profiles/profile-a';
import { request } from '../helpers/clients/h3client';
import { MemoryLogger, startCli } from '../helpers/server';

const RS = '\x1e';

/** RFC 7464 JSON text sequences: each record is RS, JSON, LF. */
function parseJsonSeq(text: string): any[] {
  assert.ok(text.startsWith(RS), 'a JSON-SEQ file starts with the record separator');
  return text
    .split(RS)
    .slice(1)
    .map((record, i) => {
      assert.ok(record.endsWith('\n'), `record ${i} ends with LF`);
      return JSON.parse(record);
    });
}

function checkTrace(file: string, cid: string): string[] {
  const [header, ...events] = parseJsonSeq(fs.readFileSync(file, 'utf8'));
  assert.equal(header.file_schema, 'urn:ietf:params:qlog:file:sequential');
  assert.equal(header.serialization_format, 'JSON-SEQ');
  assert.equal(header.trace.vantage_point.type, 'server');
  assert.ok(header.title.includes(cid));
  let last = -1;
  for (const e of events) {
    assert.equal(typeof e.name, 'string');
    assert.ok(e.time >= last, 'event times do not go back');
    last = e.time;
  }
  return events.map((e) => e.name);
}

describe('qlog, one file per connection', function () {
  this.timeout(30000);
  let dir: string;
  let server: Http3Server | undefined;

  beforeEach(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3-qlog-'))));
  afterEach(async () => {
    await server?.close();
    server = undefined;
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('three connections give three <cid>.sqlog files of JSON-SEQ with the transport events of each', async () => {
    const qlogDir = path.join(dir, 'nested', 'qlog'); // created when missing
    server = createServer({ qlogDir, logger: new MemoryLogger() }, handleProfileA);
    const cids: string[] = [];
    let closed = 0;
    server.on('connection', (c) => cids.push(c.cid));
    server.on('connectionClose', () => (closed += 1));
    const { port } = await server.listen(0, '127.0.0.1');
    for (const p of ['/login', '/secret', '/nope']) await request(port, { path: p });
    // A trace is complete when quiche drops the connection (after the close).
    const start = Date.now();
    while (closed < 3 && Date.now() - start < 10000) await new Promise((r) => setTimeout(r, 50));
    assert.equal(closed, 3);

    const files = fs.readdirSync(qlogDir).sort();
    assert.deepEqual(files, cids.map((c) => `${c}.sqlog`).sort());
    for (const cid of cids) {
      const names = checkTrace(path.join(qlogDir, `${cid}.sqlog`), cid);
      for (const expected of ['quic:parameters_set', 'quic:packet_received', 'quic:packet_sent', 'quic:connection_closed']) {
        assert.ok(names.includes(expected), `${expected} in ${cid}: ${[...new Set(names)].join(', ')}`);
      }
      assert.equal(names.at(-1), 'quic:connection_closed');
    }
  });

  it('without qlogDir nothing is written', async () => {
    server = createServer({ logger: new MemoryLogger() }, handleProfileA);
    const { port } = await server.listen(0, '127.0.0.1');
    await request(port, { path: '/login' });
    assert.deepEqual(fs.readdirSync(dir), []);
  });

  it('CLI --qlog-dir writes the trace of a request', async () => {
    const cli = await startCli(['--profile', 'a', '--qlog-dir', dir]);
    try {
      assert.equal((await request(cli.port, { path: '/login' })).status, 200);
    } finally {
      assert.equal(await cli.stop(), 0);
    }
    const files = fs.readdirSync(dir);
    assert.equal(files.length, 1);
    const cid = files[0].replace(/\.sqlog$/, '');
    assert.match(cid, /^[0-9a-f]{40}$/);
    assert.ok(checkTrace(path.join(dir, files[0]), cid).includes('quic:packet_received'));
  });
});
