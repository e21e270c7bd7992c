// The process toolkit the tests and the bench share (test/helpers/process.ts):
// startup lines, output, line protocol, stopping a process that ignores
// SIGTERM, running to the end, JSON clients. Children are small `node -e`
// scripts.
import assert from 'node:assert/strict';
import { runJsonProcess, runProcess, startProcess } from '../helpers/process';

const node = (script: string): [string, string[]] => [process.execPath, ['-e', script]];

describe('process toolkit (test/helpers/process.ts)', function () {
  this.timeout(20000);

  it('waits for a startup line on either stream, keeps the output, and resolves the exit code on SIGTERM', async () => {
    const p = startProcess(...node(`console.error('noise'); setTimeout(() => console.error('listening on udp 127.0.0.1:4321'), 200); setInterval(() => {}, 1000);`));
    const m = await p.waitFor(/listening on udp \S+:(\d+)/);
    assert.equal(m[1], '4321');
    assert.match(p.stderr(), /^noise\n/);
    assert.equal(p.running, true);
    assert.equal(await p.stop(), null, 'ended by the signal, no exit code');
    assert.equal(p.running, false);
  });

  it('rejects a wait when the process exits first, naming it and quoting its stderr', async () => {
    const p = startProcess(...node(`console.error('cannot bind'); process.exit(3);`), { label: 'server' });
    await assert.rejects(p.waitFor(/listening/), /server exited 3 before \/listening\/; stderr: cannot bind/);
    assert.equal(await p.exited, 3);
  });

  it('finds the first JSON line that matches, and answers a stdin line protocol line by line', async () => {
    const p = startProcess(
      ...node(`console.log('not json'); console.log(JSON.stringify({ other: 1 })); console.log(JSON.stringify({ listening: 7 }));
        require('readline').createInterface({ input: process.stdin }).on('line', (l) => console.log(JSON.stringify({ echo: l })));`),
      { stdin: true },
    );
    assert.deepEqual(await p.waitForJson<{ listening?: number }>((v) => 'listening' in v), { listening: 7 });
    const reply = p.nextLine();
    p.send('counters\n');
    assert.deepEqual(JSON.parse(await reply), { echo: 'counters' });
    p.child.stdin!.end(); // the script ends with its input
    assert.equal(await p.exited, 0);
  });

  it('SIGKILLs a process that ignores the signal once the deadline passes', async () => {
    const p = startProcess(...node(`process.on('SIGTERM', () => {}); console.log('ready'); setInterval(() => {}, 1000);`));
    await p.waitFor(/ready/);
    const started = Date.now();
    assert.equal(await p.stop({ killAfterMs: 300 }), null);
    assert.equal(p.child.signalCode, 'SIGKILL');
    assert.ok(Date.now() - started < 3000, `took ${Date.now() - started} ms`);
  });

  it('runs to the end with input on stdin; a run past its time limit is killed', async () => {
    const r = await runProcess(...node(`let s = ''; process.stdin.on('data', (d) => (s += d)).on('end', () => { console.log(s.toUpperCase()); process.exit(2); });`), {
      input: 'plan',
    });
    assert.deepEqual([r.code, r.stdout], [2, 'PLAN\n']);
    const slow = await runProcess(...node('setTimeout(() => {}, 10000)'), { timeoutMs: 200 });
    assert.equal(slow.signal, 'SIGKILL');
  });

  it('JSON clients: stdout parsed; no JSON rejects with the exit code and stderr; a missing command rejects', async () => {
    assert.deepEqual(await runJsonProcess(...node(`process.stdin.on('data', (d) => console.log(JSON.stringify({ got: JSON.parse(d) })))`), { a: 1 }), {
      got: { a: 1 },
    });
    await assert.rejects(runJsonProcess(...node(`console.error('bad plan'); process.exit(1)`), undefined, 'client.py'), /client\.py exited 1: bad plan/);
    await assert.rejects(runJsonProcess('/nonexistent/client', []), /cannot run \/nonexistent\/client: .*ENOENT/);
  });
});
