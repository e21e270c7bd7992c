// The Profile B statistics document (spec, "Stats document"), kept in
// TypeScript from the native core's session events: occupancy is what is
// open now, usage what was ever seen since start.
import { addon } from './native/binding';
import type { Http3Server } from './server';

export interface StatsDocument {
  occupancy: { sessions: number; sessions_cap: number; peer_streams: number; peer_streams_cap: number };
  usage: { sessions: number; streams: number; datagrams: number };
}

export class WebTransportStats {
  readonly sessionsCap: number;
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

  snapshot(): StatsDocument {
    return {
      occupancy: {
        sessions: this.openSessions,
        sessions_cap: this.sessionsCap,
        peer_streams: this.openPeerStreams,
        peer_streams_cap: this.peerStreamsCap,
      },
      usage: { sessions: this.sessionsEver, streams: this.streamsEver, datagrams: this.datagramsEver },
    };
  }
}
