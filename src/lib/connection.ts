// A QUIC connection as the library's layers see it (ConnectionHandle): the
// peer's address split the way Node's sockets report it.
import type { ConnectionHandle } from './request-stream';

export class Connection implements ConnectionHandle {
  readonly remoteAddress: string;
  readonly remotePort: number;
  readonly remoteFamily: 'IPv4' | 'IPv6';
  open = true;
  peerMaxFieldSectionSize = Infinity;

  /** `peer` as the core reports it: `1.2.3.4:5` or `[::1]:5`. */
  constructor(
    readonly id: number,
    readonly peer: string,
    readonly cid: string,
    readonly localAddress: string,
    readonly localPort: number,
  ) {
    const colon = peer.lastIndexOf(':');
    const host = peer.slice(0, colon);
    this.remotePort = Number(peer.slice(colon + 1));
    if (host.startsWith('[')) {
      this.remoteAddress = host.slice(1, -1);
      this.remoteFamily = 'IPv6';
    } else {
      this.remoteAddress = host;
      this.remoteFamily = 'IPv4';
    }
  }
}
