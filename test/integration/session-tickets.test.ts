// Resumption: servers given the same ticketKey resume each
// other's TLS sessions (a restart or a second process keeps resumption);
// aioquic connects to one, keeps its ticket, and resumes on the other.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createServer } from '../../src';
import { PYTHON } from '../helpers/paths';
import { runProcess } from '../helpers/process';
import { runClient } from '../helpers/clients/h3client';
import { startServer } from '../helpers/server';

const RESUME = path.join(__dirname, '..', 'helpers', 'clients', 'resume.py');

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

describe('session tickets', function () {
  this.timeout(60_000);

  it('a session from one server resumes on another with the same ticketKey, and not with another key', async () => {
    const key = 'ab'.repeat(48);
    assert.deepEqual(await resumedAcross(key, key), { ticket: true, resumed: true });
    assert.deepEqual(await resumedAcross(key, 'cd'.repeat(48)), { ticket: true, resumed: false });
    assert.deepEqual(await resumedAcross(undefined, undefined), { ticket: true, resumed: false }, 'without the option each server has its own key');
  });

  it('ticket keys rotate: a ticket resumes in its period and the next (renewed), not two periods later', async () => {
    const PERIOD = 2; // seconds (ticketKeyRotation), wall-clock aligned
    const period = () => Math.floor(Date.now() / 1000 / PERIOD);
    const untilPeriod = async (p: number) => {
      while (period() < p) await new Promise((r) => setTimeout(r, 50));
    };
    const { server, port } = await startServer((_req, res) => res.text(200, 'ok\n'), { ticketKey: 'ab'.repeat(48), ticketKeyRotation: PERIOD });
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3t-'));
    try {
      // A ticket from one known period: a run that crosses a boundary is done again.
      let issued = -1;
      for (let i = 0; i < 5 && issued < 0; i++) {
        const before = period();
        const first = await runClient(port, { requests: [{ path: '/' }], session_ticket_out: path.join(dir, 't') });
        assert.equal(first.session_ticket, true);
        if (period() === before) issued = before;
      }
      assert.ok(issued >= 0, 'a ticket within one period');
      const resume = (file: string, out?: string) =>
        runClient(port, { requests: [{ path: '/' }], session_ticket_in: path.join(dir, file), ...(out ? { session_ticket_out: path.join(dir, out) } : {}) });
      await untilPeriod(issued + 1);
      const next = await resume('t', 'renewed');
      assert.equal(next.session_resumed, true, 'the next period still opens it');
      assert.equal(next.session_ticket, true, 'and the client gets a fresh ticket');
      await untilPeriod(issued + 2);
      const late = await resume('t');
      assert.equal(late.session_resumed, false, 'two periods later it is refused');
      assert.equal(late.responses[0].status, 200, 'with a full handshake instead');
      const renewed = await resume('renewed');
      assert.equal(renewed.session_resumed, true, 'the renewed ticket resumes');
    } finally {
      await server.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('ticketKey takes 48 bytes and nothing else', async () => {
    await assert.rejects(createServer({ ticketKey: Buffer.alloc(32) }).listen(0), /ticketKey must be 48 bytes: a Buffer or 96 hex digits/);
    await assert.rejects(createServer({ ticketKey: 'ab'.repeat(32) }).listen(0), /ticketKey must be 48 bytes/);
    await assert.rejects(createServer({ ticketKeyRotation: 0 }).listen(0), /ticketKeyRotation must be a whole number of seconds from 1, got 0/);
  });
});
