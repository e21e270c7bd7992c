// Bad input below the request level, on the wire (aioquic's QUIC layer
// carrying hand-built HTTP/3 bytes, test/helpers/clients/h3_raw.py): critical
// streams, frame sequences, QPACK, datagrams and WebTransport stream
// headers. Each case checks the exact code the client observed (in
// CONNECTION_CLOSE, RESET_STREAM or STOP_SENDING) and that a new connection
// is served right after. docs/design.md "How bad input is answered" lists
// the cases with their RFC sections.
import assert from 'node:assert/strict';
import path from 'node:path';
import { createServer, Http3Server } from '../../src';
import { WebTransportStats } from '../../src/demo';
import { handleProfileA } from '../../src/demo/profiles/profile-a';
import { createProfileB } from '../../src/demo/profiles/profile-b';
import { runPythonClient } from '../helpers/clients/h3client';
import { MemoryLogger, startServer } from '../helpers/server';

const RAW_CLIENT = path.resolve(__dirname, '..', 'helpers', 'clients', 'h3_raw.py');

const PROTOCOL_VIOLATION = 0x0a; // RFC 9000 transport error
const H3_DATAGRAM_ERROR = 0x33;
const H3_STREAM_CREATION_ERROR = 0x103;
const H3_CLOSED_CRITICAL_STREAM = 0x104;
const H3_FRAME_UNEXPECTED = 0x105;
const H3_SETTINGS_ERROR = 0x109;
const H3_MISSING_SETTINGS = 0x10a;
const QPACK_DECOMPRESSION_FAILED = 0x200;
const QPACK_ENCODER_STREAM_ERROR = 0x201;
const QPACK_DECODER_STREAM_ERROR = 0x202;
const WT_BUFFERED_STREAM_REJECTED = 0x3994bd84;
const SETTINGS_MAX_FIELD_SECTION_SIZE = 0x06;
const MAX_FIELD_SECTION_SIZE = 16384; // the server's default, advertised in SETTINGS

type Part = { hex?: string; varint?: number; headers?: [string, string][]; qpack_hex?: string; data?: string; frame?: { type: number; hex?: string } };
type Action = { op: string; name?: string; parts?: Part[]; fin?: boolean; path?: string; ms?: number; stream?: string; code?: number };

interface StreamResult {
  status: number | null;
  headers: [string, string][] | null;
  body: string;
  ended: boolean;
  reset_code: number | null;
  stop_sending_code: number | null;
}
interface RawResult {
  connected: boolean;
  streams: Record<string, StreamResult>;
  connection_terminated: { error_code: number; application: boolean; reason: string } | null;
  peer_settings: Record<string, number> | null;
  fresh_status?: number | null;
  fresh_error?: string;
  error?: string;
}

function runRaw(port: number, actions: Action[], opts: { h3?: boolean; fresh?: string } = {}): Promise<RawResult> {
  return runPythonClient<RawResult>(RAW_CLIENT, port, { h3: opts.h3 ?? true, fresh: opts.fresh ?? '/login', timeout: 3, actions });
}

const request: [string, string][] = [
  [':method', 'GET'],
  [':scheme', 'https'],
  [':authority', 'localhost'],
  [':path', '/login'],
];
const SETTINGS_EMPTY = { frame: { type: 0x04, hex: '' } };
const CONTROL = { varint: 0x00 };
const waitClosed: Action = { op: 'wait', name: 'closed' };

/** The connection was closed by the server with this HTTP/3 (application) code, and the server still serves others. */
function assertClosedWith(r: RawResult, code: number, application = true) {
  assert.equal(r.connected, true, r.error);
  assert.ok(r.connection_terminated, 'the server closed the connection');
  assert.equal(r.connection_terminated.error_code, code, `error code 0x${r.connection_terminated.error_code.toString(16)} (${r.connection_terminated.reason})`);
  assert.equal(r.connection_terminated.application, application);
  assert.equal(r.fresh_status, 200, `a fresh connection is served (${r.fresh_error ?? ''})`);
}

function assertServedAndOpen(r: RawResult, name: string) {
  assert.equal(r.connected, true, r.error);
  assert.equal(r.connection_terminated, null, 'connection still open');
  assert.equal(r.streams[name].status, 200);
  assert.equal(r.fresh_status, 200);
}

describe('bad input on the wire: critical streams, frames, QPACK (Profile A)', function () {
  this.timeout(20000);
  let server: Http3Server;
  let port: number;
  before(async () => ({ server, port } = await startServer(handleProfileA)));
  after(() => server.close());

  const closes: { name: string; actions: Action[]; h3?: boolean; code: number }[] = [
    {
      name: 'DATA before HEADERS on a request stream',
      actions: [{ op: 'bidi', name: 'r', parts: [{ data: 'early' }, { headers: request }], fin: true }, waitClosed],
      code: H3_FRAME_UNEXPECTED,
    },
    {
      name: 'a reserved HTTP/2 frame type (PRIORITY, 0x02) on a request stream',
      actions: [{ op: 'bidi', name: 'r', parts: [{ headers: request }, { frame: { type: 0x02, hex: '00' } }], fin: true }, waitClosed],
      code: H3_FRAME_UNEXPECTED,
    },
    {
      name: 'a second control stream',
      actions: [{ op: 'uni', name: 'c2', parts: [CONTROL, SETTINGS_EMPTY] }, waitClosed],
      code: H3_STREAM_CREATION_ERROR,
    },
    {
      name: 'SETTINGS twice on the control stream',
      actions: [{ op: 'control', parts: [SETTINGS_EMPTY] }, waitClosed],
      code: H3_FRAME_UNEXPECTED,
    },
    {
      name: 'a control stream whose first frame is MAX_PUSH_ID, not SETTINGS',
      h3: false,
      actions: [{ op: 'uni', name: 'c', parts: [CONTROL, { frame: { type: 0x0d, hex: '00' } }, SETTINGS_EMPTY] }, waitClosed],
      code: H3_MISSING_SETTINGS,
    },
    {
      name: 'a control stream whose first frame is a GREASE frame, not SETTINGS',
      h3: false,
      actions: [{ op: 'uni', name: 'c', parts: [CONTROL, { frame: { type: 0x21, hex: 'aa' } }, SETTINGS_EMPTY] }, waitClosed],
      code: H3_MISSING_SETTINGS,
    },
    {
      name: 'SETTINGS carrying an HTTP/2 setting (0x02)',
      h3: false,
      actions: [{ op: 'uni', name: 'c', parts: [CONTROL, { frame: { type: 0x04, hex: '0200' } }] }, waitClosed],
      code: H3_SETTINGS_ERROR,
    },
    {
      name: 'a push stream opened by the client',
      actions: [{ op: 'uni', name: 'p', parts: [{ varint: 0x01 }, { varint: 0 }] }, waitClosed],
      code: H3_STREAM_CREATION_ERROR,
    },
    {
      name: 'the control stream closed (FIN)',
      actions: [{ op: 'control', parts: [], fin: true }, waitClosed],
      code: H3_CLOSED_CRITICAL_STREAM,
    },
    {
      name: 'the control stream reset (RESET_STREAM)',
      // After a pause: a reset that overtakes the stream type leaves the server
      // nothing that says the stream was a control stream.
      actions: [{ op: 'sleep', ms: 100 }, { op: 'reset', stream: 'control', code: 0x10c }, waitClosed],
      code: H3_CLOSED_CRITICAL_STREAM,
    },
    {
      name: 'the QPACK decoder stream closed (FIN)',
      actions: [{ op: 'decoder', parts: [], fin: true }, waitClosed],
      code: H3_CLOSED_CRITICAL_STREAM,
    },
    {
      name: 'a second QPACK encoder stream',
      actions: [{ op: 'uni', name: 'e2', parts: [{ varint: 0x02 }] }, waitClosed],
      code: H3_STREAM_CREATION_ERROR,
    },
    {
      name: 'invalid QPACK: a static table index that does not exist (190)',
      actions: [{ op: 'bidi', name: 'r', parts: [{ qpack_hex: '0000ff7f' }], fin: true }, waitClosed],
      code: QPACK_DECOMPRESSION_FAILED,
    },
    {
      name: 'invalid QPACK: a field section cut inside a literal',
      actions: [{ op: 'bidi', name: 'r', parts: [{ qpack_hex: '0000270a6162' }], fin: true }, waitClosed],
      code: QPACK_DECOMPRESSION_FAILED,
    },
    {
      name: 'a field line referencing the dynamic table the server never allowed',
      actions: [{ op: 'bidi', name: 'r', parts: [{ qpack_hex: '010080' }], fin: true }, waitClosed],
      code: QPACK_DECOMPRESSION_FAILED,
    },
    {
      name: 'a Required Insert Count above 0 (impossible with table capacity 0), static references only',
      // d1 = static :method GET, d7 = :scheme https, c1 = :path /
      actions: [{ op: 'bidi', name: 'r', parts: [{ qpack_hex: '0100d1d7c1' }], fin: true }, waitClosed],
      code: QPACK_DECOMPRESSION_FAILED,
    },
    {
      name: 'the encoder stream sets a dynamic table capacity above the advertised 0',
      actions: [{ op: 'encoder', parts: [{ hex: '3fe11f' }] }, waitClosed],
      code: QPACK_ENCODER_STREAM_ERROR,
    },
    {
      name: 'the encoder stream inserts an entry',
      actions: [{ op: 'encoder', parts: [{ hex: '4361626301' + '78' }] }, waitClosed],
      code: QPACK_ENCODER_STREAM_ERROR,
    },
    {
      // The server's sections all have Required Insert Count 0: none may be acknowledged.
      name: 'the decoder stream acknowledges a field section (Section Acknowledgment)',
      actions: [{ op: 'request', name: 'r', path: '/login' }, { op: 'wait', name: 'r' }, { op: 'decoder', parts: [{ hex: '80' }] }, waitClosed],
      code: QPACK_DECODER_STREAM_ERROR,
    },
    {
      name: 'the decoder stream increments the insert count (nothing was ever inserted)',
      actions: [{ op: 'decoder', parts: [{ hex: '01' }] }, waitClosed],
      code: QPACK_DECODER_STREAM_ERROR,
    },
  ];
  for (const c of closes) {
    it(`${c.name}: connection closed with 0x${c.code.toString(16)}; new connections are served`, async () => {
      assertClosedWith(await runRaw(port, c.actions, { h3: c.h3 }), c.code);
    });
  }

  it('unknown and GREASE frame types on a request stream are skipped: the request is answered', async () => {
    const r = await runRaw(port, [
      {
        op: 'bidi',
        name: 'r',
        parts: [
          { frame: { type: 0x21, hex: 'aabb' } }, // GREASE before HEADERS
          { headers: request },
          { frame: { type: 0x2f, hex: '' } }, // unassigned type
          { data: '' },
          { frame: { type: 0x1f * 7 + 0x21, hex: '00' } },
        ],
        fin: true,
      },
      { op: 'wait', name: 'r' },
    ]);
    assertServedAndOpen(r, 'r');
    assert.match(r.streams.r.body, /login succeeded/);
  });

  it('Stream Cancellations on the decoder stream, split across packets, are accepted', async () => {
    const r = await runRaw(port, [
      { op: 'decoder', parts: [{ hex: '447f' }] }, // stream 4, then a stream ID whose integer continues
      { op: 'sleep', ms: 30 },
      { op: 'decoder', parts: [{ hex: '8101' }] },
      { op: 'request', name: 'r', path: '/login' },
      { op: 'wait', name: 'r' },
    ]);
    assertServedAndOpen(r, 'r');
  });

  it('unknown frame types on the control stream after SETTINGS are skipped', async () => {
    const r = await runRaw(port, [
      { op: 'control', parts: [{ frame: { type: 0x21, hex: '0102' } }, { frame: { type: 0x3f, hex: '' } }] },
      { op: 'request', name: 'r', path: '/login' },
      { op: 'wait', name: 'r' },
    ]);
    assertServedAndOpen(r, 'r');
  });

  it('an unknown stream type is ignored (STOP_SENDING H3_STREAM_CREATION_ERROR) and requests are answered', async () => {
    const r = await runRaw(port, [
      { op: 'uni', name: 'u', parts: [{ varint: 0x21 }, { hex: '0102030405' }] },
      { op: 'uni', name: 'u2', parts: [{ varint: 0x1f * 3 + 0x21 }, { hex: 'ff' }], fin: true },
      { op: 'request', name: 'r', path: '/login' },
      { op: 'wait', name: 'r' },
      { op: 'sleep', ms: 50 },
    ]);
    assertServedAndOpen(r, 'r');
    assert.equal(r.streams.u.stop_sending_code, H3_STREAM_CREATION_ERROR);
  });

  it(`a field section just over the advertised SETTINGS_MAX_FIELD_SECTION_SIZE (${MAX_FIELD_SECTION_SIZE}) is answered 431; exactly at it, 200`, async () => {
    // RFC 9114 section 4.2.2: name + value + 32 per field line.
    const base = request.reduce((s, [n, v]) => s + n.length + v.length + 32, 0);
    const fill = (total: number): [string, string][] => [...request, ['x-fill', 'a'.repeat(total - base - 'x-fill'.length - 32)]];
    const r = await runRaw(port, [
      { op: 'bidi', name: 'at', parts: [{ headers: fill(MAX_FIELD_SECTION_SIZE) }], fin: true },
      { op: 'bidi', name: 'over', parts: [{ headers: fill(MAX_FIELD_SECTION_SIZE + 1) }], fin: true },
      { op: 'wait', name: 'at' },
      { op: 'wait', name: 'over' },
    ]);
    assert.equal(r.peer_settings?.[String(SETTINGS_MAX_FIELD_SECTION_SIZE)], MAX_FIELD_SECTION_SIZE);
    assert.equal(r.streams.at.status, 200);
    assert.equal(r.streams.over.status, 431);
    assert.equal(r.connection_terminated, null);
    assert.equal(r.fresh_status, 200);
  });

  it('a DATAGRAM frame on a connection without WebTransport: QUIC PROTOCOL_VIOLATION (max_datagram_frame_size not advertised)', async () => {
    const r = await runRaw(port, [{ op: 'datagram', parts: [{ varint: 0 }, { hex: 'aa' }] }, waitClosed]);
    assertClosedWith(r, PROTOCOL_VIOLATION, false);
  });
});

describe('bad input on the wire: WebTransport streams and datagrams (Profile B)', function () {
  this.timeout(20000);
  let server: Http3Server;
  let port: number;
  before(async () => {
    const stats = new WebTransportStats();
    server = createServer({ webtransport: true, logger: new MemoryLogger() }, createProfileB(stats));
    stats.attach(server);
    ({ port } = await server.listen(0, '127.0.0.1'));
  });
  after(() => server.close());

  const stats = (r: RawResult, name: string) => JSON.parse(r.streams[name].body);

  it('a WebTransport unidirectional stream naming no session: STOP_SENDING WT_BUFFERED_STREAM_REJECTED, not counted', async () => {
    const r = await runRaw(
      port,
      [
        // Left open: STOP_SENDING is only sent while the client is still sending.
        { op: 'uni', name: 'u', parts: [{ varint: 0x54 }, { varint: 400 }, { hex: '6c6f7374' }] },
        { op: 'sleep', ms: 100 },
        { op: 'request', name: 's', path: '/stats' },
        { op: 'wait', name: 's' },
      ],
      { fresh: '/stats' },
    );
    assert.equal(r.streams.u.stop_sending_code, WT_BUFFERED_STREAM_REJECTED);
    assertServedAndOpen(r, 's');
    assert.deepEqual(stats(r, 's').usage, { sessions: 0, streams: 0, datagrams: 0 });
  });

  it('a WebTransport bidirectional stream naming no session: reset WT_BUFFERED_STREAM_REJECTED', async () => {
    const r = await runRaw(
      port,
      [
        { op: 'bidi', name: 'b', parts: [{ varint: 0x41 }, { varint: 400 }, { hex: '6c6f7374' }], fin: true },
        { op: 'wait', name: 'b' },
        { op: 'request', name: 's', path: '/stats' },
        { op: 'wait', name: 's' },
      ],
      { fresh: '/stats' },
    );
    assert.equal(r.streams.b.reset_code, WT_BUFFERED_STREAM_REJECTED);
    assertServedAndOpen(r, 's');
    assert.deepEqual(stats(r, 's').usage, { sessions: 0, streams: 0, datagrams: 0 });
  });

  it('a datagram naming no session is dropped silently and not counted (RFC 9297 section 2.1)', async () => {
    const r = await runRaw(
      port,
      [
        { op: 'datagram', parts: [{ varint: 100 }, { hex: 'aa' }] },
        { op: 'datagram', parts: [{ varint: 0 }, { hex: 'bb' }] },
        { op: 'sleep', ms: 100 },
        { op: 'request', name: 's', path: '/stats' },
        { op: 'wait', name: 's' },
      ],
      { fresh: '/stats' },
    );
    assertServedAndOpen(r, 's');
    assert.deepEqual(stats(r, 's').usage, { sessions: 0, streams: 0, datagrams: 0 });
  });

  it('a datagram too short to hold a Quarter Stream ID: connection closed with H3_DATAGRAM_ERROR', async () => {
    const r = await runRaw(port, [{ op: 'datagram', parts: [] }, waitClosed], { fresh: '/stats' });
    assertClosedWith(r, H3_DATAGRAM_ERROR);
  });

  it('a datagram whose Quarter Stream ID is 2^60 or more: connection closed with H3_DATAGRAM_ERROR', async () => {
    const r = await runRaw(port, [{ op: 'datagram', parts: [{ varint: 2 ** 60 }, { hex: 'aa' }] }, waitClosed], { fresh: '/stats' });
    assertClosedWith(r, H3_DATAGRAM_ERROR);
  });
});
