// RequestDeadlines: one timer for every open request's timeout. Assertions
// use lower bounds only (never fired early), so a loaded machine cannot fail them.
import assert from 'node:assert/strict';
import { Deadlined, RequestDeadlines } from '../../src/lib/request-timeout';

type Entry = Deadlined & { name: string; addedAt?: number };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function recorder(limitMs: number) {
  const fired: { name: string; late: number }[] = [];
  const d = new RequestDeadlines<Entry>(limitMs, (e) => fired.push({ name: e.name, late: Date.now() - e.addedAt! - limitMs }));
  const add = (name: string): Entry => {
    const e: Entry = { name, addedAt: Date.now() };
    d.add(e);
    return e;
  };
  const settle = async (count: number) => {
    for (let i = 0; i < 200 && fired.length < count; i++) await sleep(10);
    await sleep(limitMs); // and nothing more arrives
  };
  return { d, fired, add, settle };
}

describe('RequestDeadlines (requestTimeoutMs bookkeeping)', () => {
  it('times out only entries still present, oldest first, each once, never early', async () => {
    const { d, fired, add, settle } = recorder(80);
    const a = add('a');
    await sleep(20);
    const b = add('b');
    const c = add('c');
    d.remove(b); // answered in time
    d.add(c); // adding twice neither resets nor duplicates
    await settle(2);
    assert.deepEqual(fired.map((f) => f.name), ['a', 'c']);
    for (const f of fired) assert.ok(f.late >= -1, `${f.name} fired ${-f.late} ms early`);
    assert.equal(a.deadline, undefined);
    assert.equal(c.nextDeadline, undefined);
  });

  it('removing the head first still fires the next entry at its own deadline', async () => {
    const { d, fired, add, settle } = recorder(60);
    const a = add('a');
    await sleep(30);
    add('b');
    d.remove(a);
    await settle(1);
    assert.deepEqual(fired.map((f) => f.name), ['b']);
    assert.ok(fired[0].late >= -1, `fired ${-fired[0].late} ms early`);
  });

  it('0 turns the timeout off; clear() forgets everything', async () => {
    const off = recorder(0);
    const x = off.add('x');
    assert.equal(x.deadline, undefined);
    const on = recorder(20);
    const y = on.add('y');
    on.d.clear();
    await sleep(60);
    assert.deepEqual([...off.fired, ...on.fired], []);
    assert.equal(y.deadline, undefined);
  });
});
