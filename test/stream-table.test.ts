// StreamTable: one connection's open streams by ID (see its header for why
// it is not a Map).
import assert from 'node:assert/strict';
import type { NativeRequestStream } from '../src/lib/native-stream';
import { StreamTable } from '../src/lib/stream-table';

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
});
