// A QUIC connection as the library's layers see it (ConnectionHandle): the
// peer's address split the way Node's sockets report it.
import type { ConnectionHandle } from './request-stream';

export class Connection implements ConnectionHandle {
  remoteAddress = '';
  remotePort = 0;
  remoteFamily: 'IPv4' | 'IPv6' = 'IPv4';
  open = true;
  peerMaxFieldSectionSize = Infinity;
  /** Set when the server asked for a client certificate: the verification error (0: verified) and the chain, DER, leaf first. */
  clientCertificate: { verifyError: number; chain: Buffer[] } | undefined;

  /** `peer` as the core reports it: `1.2.3.4:5` or `[::1]:5`. */
  constructor(
    readonly id: number,
    public peer: string,
    readonly cid: string,
    readonly localAddress: string,
    readonly localPort: number,
  ) {
    this.moveTo(peer);
  }

  /** The client moved (NAT rebinding or migration): what sockets report follows it. */
  moveTo(peer: string): void {
    this.peer = peer;
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
