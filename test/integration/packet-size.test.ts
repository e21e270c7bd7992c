// Packet sizes (PMTU discovery from 1,350 bytes, ceiling 1,472 over
// IPv4) and the statelessResetKey option. The packet sizes are read on the
// wire: a UDP relay between a real client (aioquic) and the server records
// every datagram the server sends.
import assert from 'node:assert/strict';
import { createServer } from '../../src';
import { request } from '../helpers/clients/h3client';
import { impairedLink } from '../helpers/impaired-link';
import { startServer } from '../helpers/server';

describe('packet size', function () {
  it('the handshake goes out in datagrams of at most 1,350 bytes, then PMTUD grows them to the 1,472-byte IPv4 ceiling and no further', async () => {
    const body = Buffer.alloc(256 * 1024, 7);
    const { server, port } = await startServer((_req, res) => res.end(body));
    const r = await impairedLink(port, {});
    try {
      const res = await request(r.port, { path: '/big' }, 15);
      assert.equal(res.status, 200);
      assert.equal(Buffer.from(res.body_b64, 'base64').length, body.length);
      const sizes = r.fromServer.map((d) => d.size);
      const longHeader = r.fromServer.filter((d) => d.long).map((d) => d.size);
      assert.ok(sizes.length > 150, `${sizes.length} datagrams`);
      // Every datagram of the handshake (those opening with a long header:
      // Initial, Handshake) leaves before PMTUD may probe: at most the
      // 1,350-byte start (here the whole flight fits in one datagram, padded
      // to 1,200; a larger flight filling 1,350-byte datagrams is
      // server::tests::pmtud_starts_at_1350_bytes_and_grows_to_the_send_limit).
      assert.ok(longHeader.length > 0);
      assert.ok(longHeader.every((n) => n <= 1350), `handshake datagrams ${longHeader.join(',')}`);
      // Then PMTUD's probe of the ceiling is acknowledged on loopback and
      // the response goes out at the ceiling, never above.
      const max = Math.max(...sizes);
      assert.equal(max, 1472, `largest datagram ${max}`);
      assert.equal(server.counters().udpTooLarge, 0);
    } finally {
      r.close();
      await server.close();
    }
  });

  it('statelessResetKey takes 32 bytes as a Buffer or 64 hex digits, and nothing else', async () => {
    for (const key of [Buffer.alloc(32, 1), 'ab'.repeat(32)]) {
      const { server, port } = await startServer((_req, res) => res.text(200, 'ok\n'), { statelessResetKey: key });
      try {
        assert.equal((await request(port, { path: '/' })).status, 200);
      } finally {
        await server.close();
      }
    }
    for (const key of [Buffer.alloc(16), 'ab'.repeat(31), 'zz'.repeat(32)]) {
      const server = createServer({ statelessResetKey: key }, (_req, res) => res.text(200, 'ok\n'));
      await assert.rejects(server.listen(0, '127.0.0.1'), /statelessResetKey must be 32 bytes/);
    }
  });
});
