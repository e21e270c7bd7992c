// A client whose address changes under a connection (a NAT rebinding) keeps
// it, and what the application reads of the client's address follows it:
// req.socket.remoteAddress/remotePort on createSecureServer report the
// address the connection uses now (the core's PEER_MOVED event), not the
// one it opened from.
import assert from 'node:assert/strict';
import { createSecureServer } from '../../src/index';
import { silentLogger } from '../../src/lib/log';
import { runClient } from '../helpers/clients/h3client';

describe('a client that moves: the request socket follows it', function () {
  this.timeout(20000);

  it("after aioquic's NAT rebinding, req.socket reports the new port and the connection goes on", async () => {
    const server = createSecureServer({ tcp: false, warnDemoIdentity: false, logger: silentLogger }, (req, res) => {
      res.end(`${req.socket.remoteAddress} ${req.socket.remotePort}`);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    try {
      // Four requests one after another on one connection, from a new
      // UDP port from the second on. quiche moves the connection once the
      // new path is validated (a round trip), so the last request is
      // certainly on it; the second may still count as the old path's.
      const plan = { requests: [{ path: '/' }, { path: '/' }, { path: '/' }, { path: '/' }], sequential: true, rebind_before: 1, timeout: 10 };
      const result = await runClient(port, plan);
      const seen = result.responses.map((r) => {
        assert.equal(r.status, 200, r.error ?? undefined);
        const [address, p] = r.body_text.split(' ');
        return { address, port: Number(p) };
      });
      assert.ok(seen.every((s) => s.address === '127.0.0.1'), JSON.stringify(seen));
      assert.ok(seen[0].port > 0);
      assert.notEqual(seen[3].port, seen[0].port, `the last request came from the new port: ${JSON.stringify(seen)}`);
      assert.equal(server.counters()!.connectionsAccepted, 1, 'one connection throughout');
      assert.ok(server.counters()!.pathMigrations >= 1);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
