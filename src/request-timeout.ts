// The request timeout: a handler that never answers must not hold a stream
// (and the client) forever. After requestTimeoutMs the server answers for it.
//
// 503 rather than a stream reset with H3_REQUEST_CANCELLED: the client gets a
// definite HTTP answer it can act on (RFC 9110 section 15.6.4: the server is
// temporarily unable to handle the request; retrying later may work), every
// HTTP client surfaces a status while many report a reset only as a generic
// network error, and the response path already frees the stream (the native
// core stops reading the request with STOP_SENDING H3_NO_ERROR and forgets the
// stream once the answer is acknowledged).

/** Default requestTimeoutMs. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
export const REQUEST_TIMEOUT_STATUS = 503;

/** Starts one request's timer; none when the timeout is 0 (turned off). */
export function armRequestTimeout(ms: number | undefined, onTimeout: () => void): NodeJS.Timeout | undefined {
  const limit = ms ?? DEFAULT_REQUEST_TIMEOUT_MS;
  if (!Number.isFinite(limit) || limit <= 0) return undefined;
  const timer = setTimeout(onTimeout, limit);
  // A pending request must not keep the process alive on its own.
  timer.unref();
  return timer;
}

export function clearRequestTimeouts(exchanges: Iterable<{ timer?: NodeJS.Timeout }> | undefined): void {
  if (!exchanges) return;
  for (const ex of exchanges) clearTimeout(ex.timer);
}
