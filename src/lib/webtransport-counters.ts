// WebTransport counters kept in TypeScript from a server's session, stream
// and datagram events: what is open now against the native core's caps, and
// what was seen since start. The metrics endpoint reads them; the demo's
// Profile B renders them as its `/stats` document.
import { addon, NativeCounters } from '../native/binding';
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

  /**
   * With workers, the server-wide figures: the native counters every worker
   * adds to (this thread's events see only its own worker's sessions).
   */
  private serverWide: (() => NativeCounters) | undefined;

  get sessionsOpen(): number {
    return this.serverWide ? this.serverWide().wtSessionsOpen : this.openSessions;
  }

  get peerStreamsOpen(): number {
    return this.serverWide ? this.serverWide().wtPeerStreamsOpen : this.openPeerStreams;
  }

  /** Sessions established since start. */
  get sessionsTotal(): number {
    return this.serverWide ? this.serverWide().wtSessionsEstablished : this.sessionsEver;
  }

  /** Client streams offered since start, refused ones included. */
  get streamsTotal(): number {
    return this.serverWide ? this.serverWide().wtPeerStreamsOffered : this.streamsEver;
  }

  /** Datagrams received for open sessions since start. */
  get datagramsTotal(): number {
    return this.serverWide ? this.serverWide().wtDatagramsReceived : this.datagramsEver;
  }

  /** Feeds the counters from a server's WebTransport events (with workers, reads the server-wide ones). */
  attach(server: Http3Server): this {
    server.on('listening', () => {
      this.serverWide = server.workerStats() ? () => server.counters() : undefined;
    });
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
