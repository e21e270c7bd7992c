// StreamTable: one connection's open streams by ID (see its header for why
// it is not a Map).
import assert from 'node:assert/strict';
import type { NativeRequestStream } from '../../src/lib/native-stream';
import { StreamTable } from '../../src/lib/stream-table';

describe('StreamTable', () => {
  const stream = (id: number) => ({ id }) as unknown as NativeRequestStream;

  it('finds, replaces and forgets streams by ID, counting what it holds', () => {
    const t = new StreamTable();
    const [a, b, c] = [stream(0), stream(4), stream(2 ** 53 - 4)];
    t.set(0, a);
    t.set(4, b);
    t.set(2 ** 53 - 4, c);
    assert.equal(t.size, 3);
    assert.equal(t.get(4), b);
    assert.equal(t.get(8), undefined);
    const b2 = stream(4);
    t.set(4, b2);
    assert.equal(t.size, 3, 'replacing is not adding');
    assert.equal(t.get(4), b2);
    t.delete(4);
    t.delete(4);
    t.delete(12);
    assert.equal(t.size, 2, 'deleting twice or what is absent changes nothing');
    assert.deepEqual(new Set(t.values()), new Set([a, c]));
  });

  it('stays exact through the churn of many requests', () => {
    const t = new StreamTable();
    const open: number[] = [];
    for (let i = 0; i < 10000; i++) {
      const id = i * 4;
      t.set(id, stream(id));
      open.push(id);
      if (open.length > 20) t.delete(open.shift()!);
    }
    assert.equal(t.size, 20);
    assert.deepEqual(t.values().map((s) => s.id).sort((x, y) => x - y), open);
  });

  it('keeps two live streams whose sequence numbers share a slot (one left open while hundreds came and went)', () => {
    const t = new StreamTable();
    const old = stream(0);
    t.set(0, old);
    const ids = [512 * 4, 1024 * 4, 4];
    for (const id of ids) t.set(id, stream(id));
    assert.equal(t.size, 4);
    assert.equal(t.get(0), old);
    for (const id of ids) assert.equal(t.get(id)?.id, id);
    assert.equal(t.get(1536 * 4), undefined, 'same slot, never added');
    t.delete(0);
    assert.equal(t.get(0), undefined);
    assert.equal(t.get(512 * 4)?.id, 512 * 4, 'the one in the overflow is still found');
    const again = stream(512 * 4);
    t.set(512 * 4, again);
    assert.equal(t.size, 3, 'replacing one in the overflow is not adding');
    assert.equal(t.get(512 * 4), again);
    assert.deepEqual(t.values().map((s) => s.id).sort((x, y) => x - y), [4, 512 * 4, 1024 * 4]);
    for (const id of ids) t.delete(id);
    assert.equal(t.size, 0);
    assert.deepEqual(t.values(), []);
  });
});
