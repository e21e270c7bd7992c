// The `webtransport` option of createServer and createSecureServer: true
// for the default limits, or the limits themselves; checked once, when the
// server is made.
import type { CoreOptions } from '../stream-server';

/** Streams per session and side when the option is not given. */
export const MAX_STREAMS_PER_SESSION = 256;

export interface WebTransportLimits {
  /** Sessions open at once, server-wide (default 32); more are answered 429. */
  maxSessions?: number;
  /** Streams clients have open at once on all sessions, server-wide (default 128); more are refused (WT_BUFFERED_STREAM_REJECTED). */
  maxStreams?: number;
  /**
   * Streams one session may have open, per side (default 256): the
   * client's beyond it are refused (WT_BUFFERED_STREAM_REJECTED), and
   * createBidirectionalStream / createUnidirectionalStream reject.
   */
  maxStreamsPerSession?: number;
}

/** The core options the option asks for; throws a RangeError for a limit that is not a positive 32-bit integer. */
export function webtransportCoreOptions(option: boolean | WebTransportLimits | undefined): Partial<CoreOptions> {
  if (!option) return { webtransport: false };
  const limits = option === true ? {} : option;
  for (const key of ['maxSessions', 'maxStreams', 'maxStreamsPerSession'] as const) {
    const v = limits[key];
    if (v !== undefined && (!Number.isInteger(v) || v < 1 || v > 2 ** 32 - 1)) {
      throw new RangeError(`webtransport.${key} must be a positive integer, got ${v}`);
    }
  }
  return {
    webtransport: true,
    webtransportMaxSessions: limits.maxSessions,
    webtransportMaxStreams: limits.maxStreams,
    webtransportMaxStreamsPerSession: limits.maxStreamsPerSession ?? MAX_STREAMS_PER_SESSION,
  };
}
