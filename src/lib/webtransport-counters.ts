// WebTransport counters kept in TypeScript from a server's session, stream
// and datagram events: what is open now against the native core's caps, and
// what was seen since start. The metrics endpoint reads them; the demo's
// Profile B renders them as its `/stats` document.
import { addon } from '../native/binding';
import type { Http3Server } from './server';

export class WebTransportCounters {
  /** Sessions allowed at once (a build-time cap of the native core). */
  readonly sessionsCap: number;
  /** Client streams allowed at once, over all sessions. */
  readonly peerStreamsCap: number;
  private openSessions = 0;
  private openPeerStreams = 0;
  private sessionsEver = 0;
  private streamsEver = 0;
  private datagramsEver = 0;

  constructor() {
    const limits = addon().limits();
    this.sessionsCap = limits.webtransportSessionsCap;
    this.peerStreamsCap = limits.webtransportPeerStreamsCap;
  }

  get sessionsOpen(): number {
    return this.openSessions;
  }

  get peerStreamsOpen(): number {
    return this.openPeerStreams;
  }

  /** Sessions established since start. */
  get sessionsTotal(): number {
    return this.sessionsEver;
  }

  /** Client streams offered since start, refused ones included. */
  get streamsTotal(): number {
    return this.streamsEver;
  }

  /** Datagrams received for open sessions since start. */
  get datagramsTotal(): number {
    return this.datagramsEver;
  }

  /** Feeds the counters from a server's WebTransport events. */
  attach(server: Http3Server): this {
    server.on('webtransportSession', () => {
      this.openSessions += 1;
      this.sessionsEver += 1;
    });
    server.on('webtransportSessionClose', () => {
      this.openSessions -= 1;
    });
    server.on('webtransportStream', () => {
      this.openPeerStreams += 1;
      this.streamsEver += 1;
    });
    // Refused over the cap: offered, so counted in usage, never open.
    server.on('webtransportStreamRejected', () => {
      this.streamsEver += 1;
    });
    server.on('webtransportStreamClose', () => {
      this.openPeerStreams -= 1;
    });
    server.on('webtransportDatagrams', (count: number) => {
      this.datagramsEver += count;
    });
    return this;
  }
}
