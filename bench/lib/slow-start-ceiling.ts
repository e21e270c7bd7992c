// What W10's bottleneck share could be at best, for a given initial window:
// a model, not a measurement. A download's body goodput is timed from the
// response's head to its last byte; before the sender's window reaches the
// link's bandwidth-delay product, each round trip carries only the window,
// so the first round trips of slow start leave the link partly idle
// whatever the server does. The model's sender is perfect: no loss, the
// window doubling every round trip from `initialWindowBytes` until it fills
// the link, then the link's rate. Its share of the link is the ceiling the
// measured share is judged against (docs/reliability.md, "Initial window").

/** The datagram size a connection starts with (PMTU discovery from 1,350 bytes, docs/design.md), which quiche's initial window counts in. */
export const FIRST_DATAGRAM_BYTES = 1350;

export interface CeilingInputs {
  /** Body bytes downloaded. */
  bytes: number;
  /** The link's rate in bytes per second, as the relay counts them (UDP payload). */
  linkBytesPerS: number;
  /** The link's round trip without queueing, seconds. */
  rttS: number;
  /** The congestion window when the response starts, bytes. */
  initialWindowBytes: number;
  /** Body bytes per byte the link carries (QUIC and HTTP/3 framing, measured). */
  efficiency: number;
}

/** The model's body goodput in bytes per second. */
export function slowStartCeiling(m: CeilingInputs): number {
  const bdp = m.linkBytesPerS * m.rttS;
  let window = m.initialWindowBytes;
  let delivered = 0;
  let seconds = 0;
  // Round trips in which the window is below the link's capacity: the
  // round's flight arrives at the link's rate, then the link waits for the
  // acknowledgements that release the next, twice as large.
  while (window < bdp) {
    const body = window * m.efficiency;
    if (delivered + body >= m.bytes) return m.bytes / (seconds + (m.bytes - delivered) / (m.linkBytesPerS * m.efficiency));
    delivered += body;
    seconds += m.rttS;
    window *= 2;
  }
  seconds += (m.bytes - delivered) / (m.linkBytesPerS * m.efficiency);
  return m.bytes / seconds;
}
