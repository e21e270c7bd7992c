// Issue 14, resumption: servers given the same ticketKey resume each
// other's TLS sessions (a restart or a second process keeps resumption);
// aioquic connects to one, keeps its ticket, and resumes on the other.
import assert from 'node:assert/strict';
import path from 'node:path';
import { createServer } from '../src';
import { PYTHON } from './helpers/paths';
import { runProcess } from './helpers/process';
import { startServer } from './helpers/server';

const RESUME = path.join(__dirname, 'clients', 'resume.py');

async function resumedAcross(firstKey: string | undefined, secondKey: string | undefined) {
  const a = await startServer((_req, res) => res.text(200, 'a\n'), firstKey ? { ticketKey: firstKey } : {});
  const b = await startServer((_req, res) => res.text(200, 'b\n'), secondKey ? { ticketKey: secondKey } : {});
  try {
    const r = await runProcess(PYTHON, [RESUME, '--first', String(a.port), '--second', String(b.port)], { timeoutMs: 30_000 });
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as { ticket: boolean; resumed: boolean };
  } finally {
    await a.server.close();
    await b.server.close();
  }
}

describe('session tickets (issue 14)', function () {
  this.timeout(60_000);

  it('a session from one server resumes on another with the same ticketKey, and not with another key', async () => {
    const key = 'ab'.repeat(48);
    assert.deepEqual(await resumedAcross(key, key), { ticket: true, resumed: true });
    assert.deepEqual(await resumedAcross(key, 'cd'.repeat(48)), { ticket: true, resumed: false });
    assert.deepEqual(await resumedAcross(undefined, undefined), { ticket: true, resumed: false }, 'without the option each server has its own key');
  });

  it('ticketKey takes 48 bytes and nothing else', async () => {
    await assert.rejects(createServer({ ticketKey: Buffer.alloc(32) }).listen(0), /ticketKey must be 48 bytes: a Buffer or 96 hex digits/);
    await assert.rejects(createServer({ ticketKey: 'ab'.repeat(32) }).listen(0), /ticketKey must be 48 bytes/);
  });
});
