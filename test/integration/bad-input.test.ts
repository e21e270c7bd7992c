// Malformed requests on the wire (RFC 9114 section 4.1.2): the stream is
// reset with H3_MESSAGE_ERROR, and the same connection keeps serving.
import assert from 'node:assert/strict';
import { handleProfileA } from '../../src/demo/profiles/profile-a';
import { b64, runClient, PlannedRequest } from '../helpers/clients/h3client';
import { startServer } from '../helpers/server';
import type { Http3Server } from '../../src';

const H3_MESSAGE_ERROR = 0x10e;

describe('malformed requests (aioquic sending raw field lines)', function () {
  let server: Http3Server;
  let port: number;
  before(async () => ({ server, port } = await startServer(handleProfileA)));
  after(() => server.close());

  const base = (): [string, string][] => [
    [':method', 'GET'],
    [':scheme', 'https'],
    [':authority', 'localhost'],
    [':path', '/login'],
  ];
  const cases: { name: string; raw: [string, string][]; body?: string }[] = [
    { name: 'HEADERS without :method', raw: base().filter(([n]) => n !== ':method') },
    { name: 'HEADERS without :path', raw: base().filter(([n]) => n !== ':path') },
    { name: 'pseudo-header after a regular field', raw: [...base().slice(0, 3), ['accept', '*/*'], [':path', '/login']] },
    { name: 'uppercase field name', raw: [...base(), ['X-Upper', '1']] },
    { name: 'connection field', raw: [...base(), ['connection', 'keep-alive']] },
    { name: 'transfer-encoding field', raw: [...base(), ['transfer-encoding', 'chunked']] },
    { name: 'duplicate :path', raw: [...base(), [':path', '/x']] },
    { name: 'CONNECT with :scheme and :path but no :protocol', raw: [[':method', 'CONNECT'], [':scheme', 'https'], [':authority', 'localhost'], [':path', '/']] },
    { name: 'content-length larger than the body', raw: [...base(), ['content-length', '10']], body: 'short' },
    { name: 'content-length smaller than the body', raw: [...base(), ['content-length', '2']], body: 'longer body' },
    { name: 'CR in a field value', raw: [...base(), ['x-bad', 'a\rb']] },
  ];
  for (const c of cases) {
    it(`${c.name}: stream reset with H3_MESSAGE_ERROR, connection keeps serving`, async () => {
      const bad: PlannedRequest = { path: '/', raw_headers: c.raw };
      if (c.body) bad.body_b64 = b64(c.body);
      const result = await runClient(port, { sequential: true, timeout: 5, requests: [bad, { path: '/login' }] });
      assert.equal(result.responses[0].status, null);
      assert.equal(result.responses[0].reset_code, H3_MESSAGE_ERROR);
      assert.equal(result.responses[1].status, 200);
      assert.equal(result.connection_terminated, null);
    });
  }

  it('a plain CONNECT (only :authority) is answered 501: this is not a proxy', async () => {
    const result = await runClient(port, { requests: [{ path: '/', raw_headers: [[':method', 'CONNECT'], [':authority', 'example.com:443']], end_stream: false }] });
    assert.equal(result.responses[0].status, 501);
  });

  it('an extended CONNECT to a server without WebTransport is answered 501', async () => {
    const result = await runClient(port, {
      requests: [
        {
          path: '/',
          raw_headers: [[':method', 'CONNECT'], [':protocol', 'webtransport'], [':scheme', 'https'], [':authority', 'localhost'], [':path', '/wt']],
          end_stream: false,
        },
      ],
    });
    assert.equal(result.responses[0].status, 501);
  });

  it('a field section over the 16 KiB limit is answered 431', async () => {
    const result = await runClient(port, { requests: [{ path: '/login', headers: [['x-big', 'a'.repeat(20000)]] }] });
    assert.equal(result.responses[0].status, 431);
  });
});
