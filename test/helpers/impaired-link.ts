// A UDP relay on loopback that impairs the path between a client and the
// server by rule, per datagram: this machine's kernel has no netem
// (/work/shared/notes/test-environment.md), so delay and loss come from
// here, in user space, as the QUIC interop runner's simulator does.
import dgram from 'node:dgram';
import { AddressInfo } from 'node:net';

export interface LinkRules {
  /** One-way delay added to every datagram, both directions (ms). */
  delayMs?: number;
  /** Probability that a datagram is dropped, each direction (0..1). */
  loss?: number;
}

export interface ImpairedLink {
  /** The port clients connect to instead of the server's. */
  readonly port: number;
  /** Server-to-client datagrams: arrival time at the relay (ms, hrtime) and size. */
  readonly fromServer: { at: number; size: number }[];
  readonly dropped: { toServer: number; toClient: number };
  close(): void;
}

/** Relays one client to the server at `serverPort` on 127.0.0.1 under `rules`. */
export async function impairedLink(serverPort: number, rules: LinkRules): Promise<ImpairedLink> {
  const front = dgram.createSocket('udp4');
  const back = dgram.createSocket('udp4');
  const delay = rules.delayMs ?? 0;
  const loss = rules.loss ?? 0;
  const fromServer: { at: number; size: number }[] = [];
  const dropped = { toServer: 0, toClient: 0 };
  let client: { address: string; port: number } | undefined;
  let closed = false;
  const later = (send: () => void) => {
    if (delay > 0) setTimeout(() => !closed && send(), delay);
    else send();
  };
  front.on('message', (msg, rinfo) => {
    client = { address: rinfo.address, port: rinfo.port };
    if (Math.random() < loss) dropped.toServer++;
    else later(() => back.send(msg, serverPort, '127.0.0.1'));
  });
  back.on('message', (msg) => {
    fromServer.push({ at: Number(process.hrtime.bigint()) / 1e6, size: msg.length });
    const to = client;
    if (!to) return;
    if (Math.random() < loss) dropped.toClient++;
    else later(() => front.send(msg, to.port, to.address));
  });
  await new Promise<void>((r) => front.bind(0, '127.0.0.1', r));
  await new Promise<void>((r) => back.bind(0, '127.0.0.1', r));
  return {
    port: (front.address() as AddressInfo).port,
    fromServer,
    dropped,
    close: () => {
      closed = true;
      front.close();
      back.close();
    },
  };
}
