// 0-RTT: a client resuming a session sends its requests as TLS
// early data (aioquic, with the ticket of an earlier connection). Safe
// methods are answered and marked `earlyData`; other methods get 425 Too
// Early (RFC 8470) unless the application opts in with earlyData: 'all'.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ServerOptions } from '../../src';
import { b64, runClient } from '../helpers/clients/h3client';
import { startServer } from '../helpers/server';

async function resumedEarly(options: ServerOptions) {
  const ticket = path.join(os.tmpdir(), `h3-ticket-${process.pid}-${Date.now()}.bin`);
  const { server, port } = await startServer((req, res) => res.text(200, `${req.method} early=${req.earlyData}\n`), options);
  try {
    const first = await runClient(port, { requests: [{ path: '/first' }], session_ticket_out: ticket });
    assert.equal(first.session_ticket, true, 'the server sent a session ticket');
    const second = await runClient(port, {
      early: true,
      session_ticket_in: ticket,
      requests: [
        { path: '/get' },
        { method: 'POST', path: '/post', body_b64: b64('x=1') },
      ],
    });
    return { second, counters: server.counters() };
  } finally {
    fs.rmSync(ticket, { force: true });
    await server.close();
  }
}

describe('0-RTT early data', function () {
  this.timeout(30_000);

  it("by default a GET in early data is answered and marked; a POST gets 425 Too Early", async () => {
    const { second, counters } = await resumedEarly({});
    assert.equal(second.session_resumed, true);
    assert.equal(second.early_data_accepted, true, 'the server accepted early data');
    const [get, post] = second.responses;
    assert.equal(get.status, 200);
    assert.equal(get.body_text, 'GET early=true\n');
    assert.equal(post.status, 425);
    assert.equal(counters.nativeResponses425, 1);
  });

  it("earlyData 'all' hands the POST to the application, marked", async () => {
    const { second } = await resumedEarly({ earlyData: 'all' });
    const [, post] = second.responses;
    assert.equal(post.status, 200);
    assert.equal(post.body_text, 'POST early=true\n');
  });

  it("earlyData 'off' refuses early data: the requests wait for the handshake and are not marked", async () => {
    const { second } = await resumedEarly({ earlyData: 'off' });
    assert.equal(second.early_data_accepted, false);
    assert.deepEqual(second.responses.map((r) => [r.status, r.body_text]), [
      [200, 'GET early=false\n'],
      [200, 'POST early=false\n'],
    ]);
  });
});
