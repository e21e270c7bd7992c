// A small QUIC-LB load balancer for tests (draft-ietf-quic-load-balancers,
// plaintext server IDs): one UDP front for clients, several servers behind.
// A datagram whose destination connection ID names a known server (config
// bits, then the server ID after the first octet) goes to that server;
// anything else (a client's first Initials, whose ID the client chose) goes
// to a server picked by a hash of that ID, as a real balancer does. Each
// client gets its own socket towards the servers, so answers find it.
import dgram from 'node:dgram';
import { AddressInfo } from 'node:net';

export interface Balanced {
  readonly port: number;
  /** Datagrams routed by the server ID in their connection ID, per server index. */
  readonly byServerId: number[];
  /** Datagrams routed by hash (IDs that name no server), per server index. */
  readonly byHash: number[];
  close(): void;
}

/** Our connection IDs are 20 bytes (native/core/src/connection_ids.rs). */
const CID_LEN = 20;

function destinationId(msg: Buffer): Buffer | undefined {
  if (msg.length < 1) return undefined;
  if (msg[0] & 0x80) {
    // Long header: version (4), DCID length (1), DCID.
    const len = msg[5];
    return msg.length >= 6 + len ? msg.subarray(6, 6 + len) : undefined;
  }
  return msg.length >= 1 + CID_LEN ? msg.subarray(1, 1 + CID_LEN) : undefined;
}

export async function quicLbBalancer(configId: number, servers: { port: number; serverId: Buffer; host?: string }[]): Promise<Balanced> {
  const front = dgram.createSocket('udp4');
  const byServerId = servers.map(() => 0);
  const byHash = servers.map(() => 0);
  const backs = new Map<string, dgram.Socket>();
  const pick = (dcid: Buffer): number => {
    if (dcid.length >= 1 + servers[0].serverId.length && dcid[0] >> 5 === configId) {
      const i = servers.findIndex((s) => dcid.subarray(1, 1 + s.serverId.length).equals(s.serverId));
      if (i >= 0) {
        byServerId[i]++;
        return i;
      }
    }
    let h = 0;
    for (const b of dcid) h = (h * 31 + b) >>> 0;
    const i = h % servers.length;
    byHash[i]++;
    return i;
  };
  const backFor = async (client: { address: string; port: number }): Promise<dgram.Socket> => {
    const key = `${client.address}:${client.port}`;
    let back = backs.get(key);
    if (!back) {
      back = dgram.createSocket('udp4');
      back.on('message', (msg) => front.send(msg, client.port, client.address));
      backs.set(key, back);
      // Any local address: servers may sit in network namespaces (test/helpers/netns.ts).
      await new Promise<void>((r) => back!.bind(0, '0.0.0.0', r));
    }
    return back;
  };
  front.on('message', async (msg, rinfo) => {
    const dcid = destinationId(msg);
    if (!dcid) return;
    const server = servers[pick(dcid)];
    (await backFor({ address: rinfo.address, port: rinfo.port })).send(msg, server.port, server.host ?? '127.0.0.1');
  });
  await new Promise<void>((r) => front.bind(0, '127.0.0.1', r));
  return {
    port: (front.address() as AddressInfo).port,
    byServerId,
    byHash,
    close: () => {
      front.close();
      for (const b of backs.values()) b.close();
    },
  };
}
