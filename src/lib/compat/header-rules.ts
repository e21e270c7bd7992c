// Field rules in both directions: how the request's field lines become
// Node's `headers` object, and which response fields HTTP/3 can carry.
import {
  connectionSpecificHeader,
  invalidArgType,
  invalidHeaderChar,
  invalidHeaderName,
  invalidHeaderValue,
  pseudoHeaderNotAllowed,
} from './errors';

/** A headers object as Node's http2 builds it: no prototype, so a field named `__proto__` is only a field. */
export type IncomingHeaders = Record<string, string | string[] | undefined>;

/**
 * Fields Node keeps only the first line of (IncomingMessage's _addHeaderLine
 * list and http2's kSingleValueHeaders, which agree on all that matter):
 * repeating them is a client error, and joining two content-types or two
 * hosts with ", " would only hide it.
 */
const SINGLE_VALUE = new Set([
  ':method', ':path', ':authority', ':scheme', ':protocol', ':status',
  'access-control-allow-credentials', 'access-control-max-age', 'access-control-request-method',
  'age', 'authorization', 'content-encoding', 'content-language', 'content-length', 'content-location',
  'content-md5', 'content-range', 'content-type', 'date', 'dnt', 'etag', 'expires', 'from', 'host',
  'if-match', 'if-modified-since', 'if-none-match', 'if-range', 'if-unmodified-since', 'last-modified',
  'location', 'max-forwards', 'proxy-authorization', 'range', 'referer', 'retry-after', 'server', 'tk',
  'upgrade-insecure-requests', 'user-agent', 'x-content-type-options',
]);

/**
 * Folds flat field lines (name, value, ...) into a headers object with
 * Node's duplicate rules: `set-cookie` is always an array, `cookie` lines
 * are joined with "; " (RFC 9114 section 4.2.1 splits them; this undoes
 * it), single-value fields keep their first line, every other field joins
 * its lines with ", ".
 */
export function foldFieldLines(lines: readonly string[], into: IncomingHeaders): IncomingHeaders {
  for (let i = 0; i + 1 < lines.length; i += 2) {
    const name = lines[i];
    const value = lines[i + 1];
    const existing = into[name];
    if (existing === undefined) {
      into[name] = name === 'set-cookie' ? [value] : value;
    } else if (name === 'set-cookie') {
      (existing as string[]).push(value);
    } else if (name === 'cookie') {
      into[name] = `${existing as string}; ${value}`;
    } else if (!SINGLE_VALUE.has(name)) {
      into[name] = `${existing as string}, ${value}`;
    }
  }
  return into;
}

/** RFC 9110 section 5.6.2 token characters, as Node's _checkIsHttpToken. */
const TOKEN = /^[\^_`a-zA-Z\-0-9!#$%&'*+.|~]+$/;
/** What Node's http refuses in a value (checkInvalidHeaderChar): controls but HTAB, DEL, and anything beyond latin1. */
const INVALID_VALUE_CHAR = /[^\t\x20-\x7e\x80-\xff]/;

/**
 * HTTP/1 connection-specific fields (RFC 9114 section 4.2): a message
 * carrying one is malformed in HTTP/3. `connection` itself is dropped with
 * a warning, as node:http2's compatibility API does, because HTTP/1 code
 * sets `Connection: close` or `keep-alive` as a matter of habit; the others
 * change the meaning of the message, so setting one is an error.
 */
const CONNECTION_SPECIFIC = new Set(['keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade']);

export type OutgoingValue = string | string[];

/** What validateField decided: store this value, or drop the field (a `connection` line). */
export const DROP = Symbol('drop');

/**
 * Names already checked, raw spelling -> wire name: an application sets the
 * same few names on every response, and this spares the token scan and the
 * lowercasing for them. Only names validateField takes without a special
 * rule are kept; the map starts over once it holds KNOWN_KEYS_MAX names, so
 * an application making names up cannot grow it.
 */
const knownKeys = new Map<string, string>();
const KNOWN_KEYS_MAX = 1024;

/**
 * The wire (lowercase) name of a response or trailer field, after the
 * checks node:http makes on a name: a string (TypeError
 * ERR_INVALID_ARG_TYPE), a token (ERR_INVALID_HTTP_TOKEN; a pseudo-header
 * gets ERR_HTTP2_PSEUDOHEADER_NOT_ALLOWED).
 */
export function fieldKey(rawName: unknown): string {
  if (typeof rawName !== 'string') throw invalidArgType('name', 'of type string', rawName);
  const known = knownKeys.get(rawName);
  if (known !== undefined) return known;
  // The name as given is tested (node:http's rule): lowercasing first would
  // let a non-ASCII letter through ('\u212a', the Kelvin sign, becomes 'k').
  if (!TOKEN.test(rawName)) {
    if (rawName.charCodeAt(0) === 58 /* ':' */) throw pseudoHeaderNotAllowed(rawName);
    throw invalidHeaderName('Header name', rawName);
  }
  const lower = rawName.toLowerCase();
  if (!hasOwnRule(lower)) {
    if (knownKeys.size >= KNOWN_KEYS_MAX) knownKeys.clear();
    knownKeys.set(rawName, lower);
  }
  return lower;
}

/** Names validateField treats by a rule of their own (dropped, refused, or allowed for one value); never cached. */
function hasOwnRule(lower: string): boolean {
  return lower === 'connection' || lower === 'te' || CONNECTION_SPECIFIC.has(lower);
}

/**
 * Checks a response (or trailer) field's value the way node:http does, and
 * the HTTP/1-only names, and returns the value to store: numbers become
 * strings, arrays are copied. Throws a TypeError naming the field.
 * `lowerName` comes from fieldKey().
 */
export function validateField(lowerName: string, value: unknown): OutgoingValue | typeof DROP {
  if (lowerName === 'connection') {
    warnConnectionDropped();
    return DROP;
  }
  if (CONNECTION_SPECIFIC.has(lowerName) || (lowerName === 'te' && value !== 'trailers')) {
    throw connectionSpecificHeader(lowerName);
  }
  if (Array.isArray(value)) {
    const out = new Array<string>(value.length);
    for (let i = 0; i < value.length; i++) out[i] = validValue(lowerName, value[i]);
    return out;
  }
  return validValue(lowerName, value);
}

function validValue(name: string, value: unknown): string {
  if (value === undefined || value === null || typeof value === 'object' || typeof value === 'function' || typeof value === 'symbol') {
    throw invalidHeaderValue(name, value);
  }
  const s = typeof value === 'string' ? value : String(value);
  if (INVALID_VALUE_CHAR.test(s)) throw invalidHeaderChar(name);
  return s;
}

let connectionWarned = false;
function warnConnectionDropped(): void {
  if (connectionWarned) return;
  connectionWarned = true;
  process.emitWarning(
    'The "connection" header is HTTP/1 only; HTTP/3 drops it (RFC 9114 section 4.2).',
    'UnsupportedWarning',
  );
}

/**
 * The value as it goes on the wire: leading and trailing spaces and tabs
 * removed (RFC 9114 section 4.2 makes them malformed; HTTP/1 parsers strip
 * them, so code written for HTTP/1 may have them). getHeader() still
 * returns the value as set.
 */
export function wireValue(v: string): string {
  const n = v.length;
  if (n === 0) return v;
  const first = v.charCodeAt(0);
  const last = v.charCodeAt(n - 1);
  return first === 32 || first === 9 || last === 32 || last === 9 ? v.replace(/^[ \t]+|[ \t]+$/g, '') : v;
}
