// The boundary protocol's two halves against the same bytes (the Rust side
// is native/.../boundary/golden.rs): test/unit/golden/events.bin is one batch of
// every event kind as the Rust encoder writes it, decoded here;
// test/unit/golden/commands.bin is every command as CommandWriter writes it,
// decoded there. UPDATE_GENERATED=1 rewrites commands.bin from the writer.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { AbortReason, CloseHow, CommandWriter, ConnClosedInfo, decodeBatch, EventSink, LogLevel, RequestFlag, WtStreamEvent } from '../../src/native/protocol';

const GOLDEN = path.join(__dirname, 'golden');
const BIG_STREAM = 2 ** 53 - 4;

/** Records every call, in order, as [method, ...arguments]. */
function recordingSink(): { sink: EventSink; calls: unknown[][] } {
  const calls: unknown[][] = [];
  const record =
    (name: string) =>
    (...args: unknown[]) =>
      calls.push([name, ...args]);
  const sink: EventSink = {
    onRequest: record('onRequest'),
    onBody: record('onBody'),
    onStreamAborted: record('onStreamAborted'),
    onConnOpen: record('onConnOpen'),
    onConnClosed: record('onConnClosed'),
    onLog: record('onLog'),
    onServerClosed: record('onServerClosed'),
    onWtSessionOpen: record('onWtSessionOpen'),
    onWtSessionClosed: record('onWtSessionClosed'),
    onWtStream: record('onWtStream'),
    onWtDatagrams: record('onWtDatagrams'),
    onTrailers: record('onTrailers'),
    onSent: record('onSent'),
    onPeerFieldLimit: record('onPeerFieldLimit'),
    onWtDatagram: record('onWtDatagram'),
    onPeerMoved: record('onPeerMoved'),
    onIdentityWanted: record('onIdentityWanted'),
    onClientCertificate: record('onClientCertificate'),
  };
  return { sink, calls };
}

describe('boundary protocol: golden bytes shared with the Rust half', () => {
  it('decodes the Rust encoder\'s batch of every event kind to the values it encoded', () => {
    const { sink, calls } = recordingSink();
    const seq = decodeBatch(fs.readFileSync(path.join(GOLDEN, 'events.bin')), sink);
    assert.equal(seq, 42);
    const closed: ConnClosedInfo = { conn: 9, how: CloseHow.Peer, isApp: true, errorCode: 0x100, reason: 'bye \u2713', peer: '[::1]:443', cid: 'abcd' };
    assert.deepEqual(calls, [
      ['onRequest', 7, 4, RequestFlag.Complete | RequestFlag.HasBody,
        [':method', 'POST', ':path', '/upload?x=1', ':authority', 'example.com', ':scheme', 'https', 'content-type', 'text/plain', 'x-latin1', 'a\u00e9'], Buffer.from('hello')],
      ['onBody', 7, 8, Buffer.from([0, 1, 2, 255]), true],
      ['onStreamAborted', 7, 12, AbortReason.PeerReset, 0x10c],
      ['onConnOpen', 9, '127.0.0.1:5000', '00ff'],
      ['onConnClosed', closed],
      ['onLog', LogLevel.Warn, 'qlog: cannot create \u2713'],
      ['onServerClosed'],
      ['onWtSessionOpen', 9, 0, '/wt'],
      ['onWtSessionClosed', 9, 0, 0xdeadbeef, 'gone \u2713'],
      ['onWtStream', 9, 0, BIG_STREAM, WtStreamEvent.Rejected, true],
      ['onWtDatagrams', 9, 70000],
      ['onTrailers', 7, 8, ['x-checksum', 'Ab+/=', 'x-latin1', '\u00e9']],
      ['onSent', 7, BIG_STREAM, 2 ** 40 + 5],
      ['onPeerFieldLimit', 9, 16384],
      ['onWtDatagram', 9, 4, Buffer.from([0, 1, 255])],
      ['onPeerMoved', 9, '[2001:db8::7]:61000'],
      ['onIdentityWanted', 9, 70001, 'b.example.com'],
      ['onClientCertificate', 9, 20, [Buffer.from([0x30, 0x82, 0x01]), Buffer.from([0x30])]],
    ]);
    // One call per sink method: the batch covers every event kind.
    const { sink: probe } = recordingSink();
    assert.equal(new Set(calls.map((c) => c[0])).size, Object.keys(probe).length);
    // The same bytes at an odd offset inside a larger ArrayBuffer (as a
    // pooled Buffer sits): the numbers are read relative to the view.
    const bytes = fs.readFileSync(path.join(GOLDEN, 'events.bin'));
    const shifted = Buffer.from(new ArrayBuffer(bytes.length + 8), 3, bytes.length);
    bytes.copy(shifted);
    const again = recordingSink();
    assert.equal(decodeBatch(shifted, again.sink), 42);
    assert.deepEqual(again.calls, calls);
  });

  it('writes every command exactly as the committed bytes the Rust reader parses', () => {
    const w = new CommandWriter();
    w.respond(7, BIG_STREAM, 200, ['content-type', 'text/plain', 'set-cookie', 'a=B64+/='], Buffer.from('hello \u2713'));
    w.respond(4_000_000_000, 0, 404, [], Buffer.alloc(0));
    w.headers(7, 4, 103, false, ['link', '</a.css>; rel=preload']);
    const many: string[] = [];
    for (let i = 0; i < 300; i++) many.push(`x-${i}`, `Value-${i}`);
    w.headers(7, 4, 200, false, many);
    w.data(7, 4, Buffer.from([0, 1, 255]), false);
    w.headers(7, 4, 0, true, ['x-checksum', 'Ab+/=']);
    w.consumed(7, 4, 65536);
    w.reset(4_000_000_000, BIG_STREAM, 0x10c);
    w.stopSending(7, 3, 0x52e4a40fa8db);
    w.openStream(7, 3, 0);
    w.datagram(7, 0, Buffer.from([9, 0, 255]));
    w.closeSession(7, 0, 0xdeadbeef, Buffer.from('bye \u2713'));
    const bytes = w.take()!;
    const file = path.join(GOLDEN, 'commands.bin');
    if (process.env.UPDATE_GENERATED) fs.writeFileSync(file, bytes);
    assert.deepEqual(bytes, fs.readFileSync(file));
  });
});

describe('boundary protocol: generated TypeScript is committed as generated', () => {
  // `npm run build:native` rewrites src/native/addon.d.ts from the Rust
  // exports (napi-rs), and the Rust test typescript_is_current checks
  // boundary.generated.ts; a declaration that changed without being
  // committed shows as a difference from the checked-out commit here.
  it('src/native/addon.d.ts is what the last build generated', () => {
    const root = path.resolve(__dirname, '..', '..');
    const r = spawnSync('git', ['diff', '--exit-code', '--', 'src/native/addon.d.ts'], { cwd: root, encoding: 'utf8' });
    assert.equal(r.status, 0, `src/native/addon.d.ts differs from the commit; commit the regenerated file:\n${r.stdout}`);
  });
});
