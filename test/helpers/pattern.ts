// The upload body every client generates on the fly: byte i is i % 251
// (251 is prime, so the pattern never lines up with chunk sizes). The
// Python, Go and browser clients generate the same bytes the same way:
// a window into one buffer of the period repeated.
import crypto from 'node:crypto';

export const PATTERN_PERIOD = 251;
const DEFAULT_CHUNK = 64 * 1024;

let base = Buffer.alloc(0);

/** Bytes [offset, offset + length) of the pattern (a view into a shared buffer: do not modify). */
export function patternSlice(offset: number, length: number): Buffer {
  if (base.length < length + PATTERN_PERIOD) {
    base = Buffer.alloc(length + PATTERN_PERIOD);
    for (let i = 0; i < base.length; i++) base[i] = i % PATTERN_PERIOD;
  }
  const start = offset % PATTERN_PERIOD;
  return base.subarray(start, start + length);
}

/** The first `total` pattern bytes in `chunkSize` pieces, made as they are consumed. */
export function* patternChunks(total: number, chunkSize = DEFAULT_CHUNK): Generator<Buffer> {
  for (let off = 0; off < total; off += chunkSize) yield patternSlice(off, Math.min(chunkSize, total - off));
}

const digests = new Map<number, string>();

/** SHA-256 (hex) of the first `total` pattern bytes. */
export function patternSha256(total: number): string {
  let d = digests.get(total);
  if (!d) {
    const h = crypto.createHash('sha256');
    for (const c of patternChunks(total, 1024 * 1024)) h.update(c);
    d = h.digest('hex');
    digests.set(total, d);
  }
  return d;
}

export const MiB = 1024 * 1024;
