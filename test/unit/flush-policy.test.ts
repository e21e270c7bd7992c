// When the JavaScript half hands commands to the core: a stand-in addon
// (loaded through the addonPath dev hook) takes the place of the native
// core, so the test delivers event batches by hand and sees every
// `submit` call, which in the real addon wakes the I/O thread.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createSecureServer } from '../../src';
import { withDevHooks } from '../../src/lib/dev-hooks';
import { CommandKind, EventKind, RequestFlag } from '../../src/native/protocol';

const CERTS = path.join(__dirname, '..', '..', 'certs');

// The stand-in core: records submits; the test reaches it through a global.
const STAND_IN = `
const state = (globalThis.__standInCore = { submits: [], onEvents: undefined });
exports.listen = (options, onEvents) => {
  state.onEvents = onEvents;
  state.submits = [];
  return {
    address: () => ({ address: '127.0.0.1', family: 'IPv4', port: 4433 }),
    submit: (commands, acked) => state.submits.push({ commands: commands ? Buffer.from(commands) : null, acked }),
    shutdown: () => setImmediate(() => onEvents(Buffer.from([0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 7, 0, 0, 0, 0]))),
    counters: () => ({}),
    responseStatuses: () => [],
    closeIdleConnections: () => {},
    join: () => {},
  };
};
exports.limits = () => ({});
exports.zeroCounters = () => ({});
`;

interface StandIn {
  submits: { commands: Buffer | null; acked: number }[];
  onEvents: (batch: Buffer) => void;
}

/** One event batch: seq, a CONN_OPEN for `conn`, then a complete GET / on each of `streams`. */
function batch(seq: number, conn: number, streams: number[], open: boolean): Buffer {
  const parts: Buffer[] = [];
  const f64 = (v: number) => {
    const b = Buffer.alloc(8);
    b.writeDoubleLE(v);
    return b;
  };
  const u8 = (v: number) => Buffer.from([v]);
  const u16 = (v: number) => Buffer.from([v & 0xff, v >> 8]);
  const u32 = (v: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v);
    return b;
  };
  const str16 = (s: string) => Buffer.concat([u16(s.length), Buffer.from(s, 'latin1')]);
  const str32 = (s: string) => Buffer.concat([u32(s.length), Buffer.from(s, 'latin1')]);
  parts.push(f64(seq));
  if (open) parts.push(u8(EventKind.ConnOpen), u32(conn), str16('127.0.0.1:50000'), str16('abcd'));
  for (const stream of streams) {
    const fields = [':method', 'GET', ':scheme', 'https', ':authority', 'localhost', ':path', '/'];
    parts.push(u8(EventKind.Request), u32(conn), f64(stream), u8(RequestFlag.Complete), u16(fields.length / 2));
    for (let i = 0; i < fields.length; i += 2) parts.push(str16(fields[i]), str32(fields[i + 1]));
  }
  return Buffer.concat(parts);
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('flush policy: when commands cross to the core', () => {
  let dir: string;
  let addonPath: string;
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3-stand-in-'));
    addonPath = path.join(dir, 'stand-in-core.cjs');
    fs.writeFileSync(addonPath, STAND_IN);
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  async function serve(handler: Parameters<typeof createSecureServer>[1]): Promise<{ core: StandIn; close: () => Promise<void> }> {
    const options = {
      cert: fs.readFileSync(path.join(CERTS, 'demo-cert.pem')),
      key: fs.readFileSync(path.join(CERTS, 'demo-key.pem')),
      tcp: false as const,
    };
    const server = createSecureServer(withDevHooks(options, { addonPath }), handler);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const core = (globalThis as unknown as { __standInCore: StandIn }).__standInCore;
    return { core, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
  }

  const answered = (s: { commands: Buffer | null }) => s.commands !== null && s.commands[0] === CommandKind.Respond;

  it('a synchronous answer leaves in a submit made before the batch callback returns', async () => {
    const { core, close } = await serve((req, res) => res.end('now'));
    core.onEvents(batch(1, 7, [0], true));
    assert.equal(core.submits.length, 1);
    assert.equal(core.submits[0].acked, 1);
    assert.ok(answered(core.submits[0]), 'the RESPOND command is in that submit');
    await turn();
    await turn();
    assert.equal(core.submits.length, 1, 'nothing new to say or acknowledge: no second submit');
    await close();
  });

  it('answers from the batch\'s microtasks leave with its acknowledgement, in one submit', async () => {
    const { core, close } = await serve(async (req, res) => {
      await Promise.resolve();
      await Promise.resolve();
      res.end('later');
    });
    core.onEvents(batch(1, 7, [0, 4, 8], true));
    assert.equal(core.submits.length, 0, 'no answer yet: the acknowledgement waits for them');
    await turn();
    assert.equal(core.submits.length, 1);
    assert.equal(core.submits[0].acked, 1);
    const commands = core.submits[0].commands!;
    assert.equal(commands[0], CommandKind.Respond);
    // Three RESPOND commands, one per stream, in that one submit.
    const streams: number[] = [];
    for (let off = 0; off < commands.length; ) {
      assert.equal(commands[off], CommandKind.Respond);
      streams.push(commands.readDoubleLE(off + 5));
      off += 1 + 4 + 8 + 2;
      // The field lines: n (name length u16, value length u32), then the bytes.
      const n = commands[off++];
      let bytes = 0;
      for (let i = 0; i < n; i++, off += 6) bytes += commands.readUInt16LE(off) + commands.readUInt32LE(off + 2);
      off += bytes;
      off += 4 + commands.readUInt32LE(off);
    }
    assert.deepEqual(streams, [0, 4, 8]);
    await close();
  });
});
