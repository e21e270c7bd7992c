// The relay's own record of a silence toward the client, which the
// interop runner's 30 % cases use to tell a link that swallowed every
// answer from a server that stopped answering. Plain UDP on loopback: a
// "server" that echoes (or does not), a client that sends every 20 ms.
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { AddressInfo } from 'node:net';
import { impairedLink, ImpairedLink, LinkRules } from '../helpers/impaired-link';

async function silenceOver(rules: LinkRules, echo: boolean): Promise<ReturnType<ImpairedLink['longestSilenceToClient']>> {
  const server = dgram.createSocket('udp4');
  server.on('message', (msg, from) => {
    if (echo) server.send(msg, from.port, from.address);
  });
  await new Promise<void>((r) => server.bind(0, '127.0.0.1', r));
  const link = await impairedLink((server.address() as AddressInfo).port, rules);
  const client = dgram.createSocket('udp4');
  await new Promise<void>((r) => client.bind(0, '127.0.0.1', r));
  try {
    // A long header's first byte, so nothing is taken for a short-header packet.
    for (let i = 0; i < 15; i++) {
      client.send(Buffer.from([0xc0, i]), link.port, '127.0.0.1');
      await new Promise((r) => setTimeout(r, 20));
    }
    await new Promise((r) => setTimeout(r, 50));
    return link.longestSilenceToClient();
  } finally {
    link.close();
    client.close();
    server.close();
  }
}

describe('impaired link: the record of a silence toward the client', () => {
  it('a link that loses every datagram: the whole run is silent, and nothing that reached the server went unanswered', async () => {
    const s = await silenceOver({ loss: 1 }, true);
    assert.ok(s.ms >= 300, `silence ${s.ms} ms`);
    // Nothing reached the server, so it sent nothing the link could destroy.
    assert.equal(s.destroyed, 0);
    assert.equal(s.unanswered, 0);
  });

  it('a server that answers every datagram over a clean link: no long silence', async () => {
    const s = await silenceOver({}, true);
    assert.ok(s.ms < 150, `silence ${s.ms} ms`);
    assert.equal(s.unanswered, 0);
  });

  it('a server that hears the client and says nothing: its silence is counted against it', async () => {
    const s = await silenceOver({}, false);
    assert.ok(s.ms >= 300, `silence ${s.ms} ms`);
    assert.ok(s.unanswered >= 14, `unanswered ${s.unanswered}`);
  });

  it('answers the link corrupts are destroyed ones, not deliveries', async () => {
    // Every datagram changed in one byte both ways: the client's arrive
    // changed too, so none counts as heard intact by the server.
    const s = await silenceOver({ corrupt: 1 }, true);
    assert.ok(s.ms >= 300, `silence ${s.ms} ms`);
    assert.ok(s.destroyed >= 14, `destroyed ${s.destroyed}`);
    assert.equal(s.unanswered, 0);
  });
});
