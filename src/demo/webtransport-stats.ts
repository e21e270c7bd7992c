// The Profile B statistics document (spec, "Stats document"): the library's
// WebTransport counters in the spec's shape. Occupancy is what is open now,
// usage what was ever seen since start.
import { WebTransportCounters } from '../lib/webtransport-counters';

export interface StatsDocument {
  occupancy: { sessions: number; sessions_cap: number; peer_streams: number; peer_streams_cap: number };
  usage: { sessions: number; streams: number; datagrams: number };
}

export class WebTransportStats extends WebTransportCounters {
  snapshot(): StatsDocument {
    return {
      occupancy: {
        sessions: this.sessionsOpen,
        sessions_cap: this.sessionsCap,
        peer_streams: this.peerStreamsOpen,
        peer_streams_cap: this.peerStreamsCap,
      },
      usage: { sessions: this.sessionsTotal, streams: this.streamsTotal, datagrams: this.datagramsTotal },
    };
  }
}
