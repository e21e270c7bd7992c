// WebTransport application error codes (32 bits, what the W3C API's
// `streamErrorCode` holds) carried in HTTP/3's error code space
// (draft-ietf-webtrans-http3, "Resetting Data Streams"): codes start at
// 0x52e4a40fa8db and skip every value HTTP/3 reserves for GREASE
// (0x1f * N + 0x21), so one application code in 0x1e takes two slots.

const FIRST = 0x52e4a40fa8db;
const LAST = 0x52e5ac983162;
const MAX_APP_CODE = 0xffffffff;

/** The HTTP/3 error code for a WebTransport application error code (0 .. 2^32 - 1). */
export function toHttp3ErrorCode(code: number): number {
  if (!Number.isInteger(code) || code < 0 || code > MAX_APP_CODE) {
    throw new RangeError(`a WebTransport error code is an integer from 0 to ${MAX_APP_CODE}, got ${code}`);
  }
  return FIRST + code + Math.floor(code / 0x1e);
}

/** The application error code an HTTP/3 error code carries; null when it is outside the WebTransport range or a GREASE value. */
export function fromHttp3ErrorCode(h3: number): number | null {
  if (!Number.isInteger(h3) || h3 < FIRST || h3 > LAST) return null;
  const shifted = h3 - FIRST;
  // GREASE values (0x1f * N + 0x21) sit every 0x1f slots: shifted % 0x1f
  // is 0x1e exactly there.
  if (shifted % 0x1f === 0x1e) return null;
  return shifted - Math.floor(shifted / 0x1f);
}
