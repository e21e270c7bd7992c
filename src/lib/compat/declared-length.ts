// The body length a response declared with its own content-length field,
// and the bytes sent against it. RFC 9114 section 4.1.2: a message whose
// DATA frames add up to more or less than its content-length is malformed,
// and a proxy or cache in front of the server would store a short body as
// the whole resource. So the response checks every chunk against the
// declared length before it goes to the core: a chunk that would pass it is
// not sent, and an end() short of it resets the stream instead of ending it
// cleanly (response.ts).
import type { OutgoingValue } from './header-rules';

/** No content-length, or one that is not a single decimal length: nothing to hold the body to. */
export const UNDECLARED = -1;

/** The length a content-length value declares, or UNDECLARED. */
export function declaredLength(value: OutgoingValue | undefined): number {
  if (value === undefined) return UNDECLARED;
  // A list of identical values is one length (RFC 9110 section 8.6); differing ones declare none we could honour.
  const values = typeof value === 'string' ? [value] : value;
  let length = UNDECLARED;
  for (const v of values) {
    const t = v.trim();
    if (!/^\d{1,15}$/.test(t)) return UNDECLARED;
    const n = Number(t);
    if (length !== UNDECLARED && n !== length) return UNDECLARED;
    length = n;
  }
  return length;
}

export class BodyLength {
  /** The declared length, or UNDECLARED. */
  readonly declared: number;
  /** Body bytes handed to the core so far. */
  sent = 0;

  constructor(declared: number) {
    this.declared = declared;
  }

  /** Whether `n` more bytes stay within the declared length (always, with none declared). */
  fits(n: number): boolean {
    return this.declared === UNDECLARED || this.sent + n <= this.declared;
  }

  /** Whether a body ending after `n` more bytes is exactly the declared length (always, with none declared). */
  completesWith(n: number): boolean {
    return this.declared === UNDECLARED || this.sent + n === this.declared;
  }
}
