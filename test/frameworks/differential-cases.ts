// The differential suite's table: listeners written against node:http2's
// compatibility API, each run on h3-node's createSecureServer (over HTTP/3)
// and on node:http2's createSecureServer (over TCP), with what may differ
// between the two and why. The README's table of deliberate differences
// lists the same `differs` entries.
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';

export type Req = Http2ServerRequest;
export type Res = Http2ServerResponse;

/** What may differ between the two servers in a case. */
export type Difference =
  /** h3-node adds content-length to a body sent in one end(); node:http2 sends none. */
  | 'added-content-length'
  /** The body disagrees with its content-length: h3-node resets the stream and emits ERR_HTTP_CONTENT_LENGTH_MISMATCH; node:http2 sends the malformed message (its client rejects it) and emits finish. */
  | 'length-mismatch'
  /** A 204's content-length: h3-node drops it; node:http2 sends it (and Node's client rejects the response). */
  | 'no-content-length-on-204'
  /**
   * A thrown mistake carries node:http's code (ERR_HTTP_HEADERS_SENT,
   * ERR_HTTP_INVALID_STATUS_CODE), which middleware written for node:http
   * checks, or a more precise one (a 1xx as final status:
   * ERR_HTTP2_INFO_STATUS_NOT_ALLOWED); node:http2's compat throws
   * ERR_HTTP2_HEADERS_SENT and ERR_HTTP2_STATUS_INVALID.
   */
  | 'node-http-error-code';

/** node:http2's code and the node:http code h3-node throws for the same mistake. */
export const ERROR_CODES: Record<string, string> = {
  ERR_HTTP2_HEADERS_SENT: 'ERR_HTTP_HEADERS_SENT',
  ERR_HTTP2_STATUS_INVALID: 'ERR_HTTP_INVALID_STATUS_CODE',
};

export interface DiffCase {
  name: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  listener(req: Req, res: Res): void;
  differs?: Difference[];
  /** With 'node-http-error-code': node:http2's code -> h3-node's, where it is not ERROR_CODES's. */
  codes?: Record<string, string>;
}

const PIECES = Array.from({ length: 50 }, (_, i) => `piece ${i};`);

export const CASES: DiffCase[] = [
  { name: "end('hello')", listener: (_q, s) => s.end('hello'), differs: ['added-content-length'] },
  { name: 'end() with nothing', listener: (_q, s) => s.end(), differs: ['added-content-length'] },
  { name: "write('') then end()", listener: (_q, s) => (s.write(''), s.end()) },
  { name: 'content-length set and kept', listener: (_q, s) => (s.setHeader('content-length', '5'), s.end('hello')) },
  { name: 'content-length unset (removeHeader), one end()', listener: (_q, s) => (s.removeHeader('content-length'), s.write('abc'), s.end('def')) },
  { name: 'content-length 5, end(abc)', listener: (_q, s) => (s.setHeader('content-length', '5'), s.end('abc')), differs: ['length-mismatch'] },
  { name: 'content-length 5, end(hello!)', listener: (_q, s) => (s.setHeader('content-length', '5'), s.end('hello!')), differs: ['length-mismatch'] },
  { name: 'content-length 3, write(hello)', listener: (_q, s) => (s.setHeader('content-length', '3'), s.write('hello'), s.end()), differs: ['length-mismatch'] },
  { name: 'content-length 5, end()', listener: (_q, s) => (s.setHeader('content-length', '5'), s.end()), differs: ['length-mismatch'] },
  { name: '50 small writes', listener: (_q, s) => (PIECES.forEach((p) => s.write(p)), s.end()) },
  { name: '50 small writes with their content-length', listener: (_q, s) => (s.setHeader('content-length', String(PIECES.join('').length)), PIECES.forEach((p) => s.write(p)), s.end()) },
  { name: 'writeHead(201)', listener: (_q, s) => (s.writeHead(201), s.end('made')), differs: ['added-content-length'] },
  { name: 'writeHead(201, headers)', listener: (_q, s) => (s.writeHead(201, { 'x-a': '1', 'content-type': 'text/plain' }), s.end('made')), differs: ['added-content-length'] },
  { name: "writeHead(201, 'Created', headers)", listener: (_q, s) => (s.writeHead(201, 'Created', { 'x-a': '1' }), s.end('made')), differs: ['added-content-length'] },
  { name: 'writeHead over setHeader', listener: (_q, s) => (s.setHeader('x-a', 'set'), s.setHeader('x-b', 'kept'), s.writeHead(200, { 'x-a': 'head' }), s.end()), differs: ['added-content-length'] },
  { name: 'set, append and remove fields', listener: (_q, s) => (s.setHeader('x-list', ['a', 'b']), s.setHeader('x-gone', '1'), s.removeHeader('x-gone'), s.setHeader('set-cookie', ['a=1', 'b=2']), s.write('x'), s.end()) },
  { name: 'setHeader after writeHead throws', listener: (_q, s) => (s.writeHead(200), s.end(String(tryCode(() => s.setHeader('x', '1'))))), differs: ['added-content-length', 'node-http-error-code'] },
  { name: 'status 204', listener: (_q, s) => ((s.statusCode = 204), s.end()) },
  { name: 'status 204 with content-length and a body', listener: (_q, s) => ((s.statusCode = 204), s.setHeader('content-length', '5'), s.end('hello')), differs: ['no-content-length-on-204'] },
  { name: 'status 304 with etag', listener: (_q, s) => (s.writeHead(304, { etag: '"v1"' }), s.end()) },
  { name: 'status 404 with a body', listener: (_q, s) => (s.writeHead(404, { 'content-type': 'text/plain' }), s.write('not '), s.end('found')) },
  { name: 'status 500 with a body', listener: (_q, s) => ((s.statusCode = 500), s.write('broken'), s.end()) },
  { name: 'status 418', listener: (_q, s) => ((s.statusCode = 418), s.write('teapot'), s.end()) },
  { name: 'writeHead(100) throws', listener: (_q, s) => { const code = tryCode(() => s.writeHead(100)); if (!s.headersSent) s.writeHead(200); s.end(code); }, differs: ['added-content-length', 'node-http-error-code'], codes: { ERR_HTTP2_STATUS_INVALID: 'ERR_HTTP2_INFO_STATUS_NOT_ALLOWED' } },
  { name: 'statusCode = 99 throws', listener: (_q, s) => { const code = tryCode(() => (s.statusCode = 99)); s.write(String(code)); s.end(); }, differs: ['node-http-error-code'] },
  { name: 'writeEarlyHints then 200', listener: (_q, s) => (s.writeEarlyHints({ link: '</a.css>; rel=preload; as=style' }), s.write('after hints'), s.end()) },
  { name: 'HEAD with a body written', method: 'HEAD', listener: (_q, s) => (s.setHeader('content-type', 'text/plain'), s.end('hello')) },
  { name: 'HEAD with its GET content-length', method: 'HEAD', listener: (_q, s) => (s.setHeader('content-length', '5'), s.end()) },
  { name: 'OPTIONS with allow', method: 'OPTIONS', listener: (_q, s) => (s.writeHead(204, { allow: 'GET, HEAD, OPTIONS' }), s.end()) },
  { name: 'POST echo', method: 'POST', body: 'echo me', listener: (q, s) => echo(q, s) },
  { name: 'POST with the body ignored', method: 'POST', body: 'ignored', listener: (_q, s) => (s.write('ok'), s.end()) },
  { name: 'trailers', listener: (_q, s) => (s.addTrailers({ 'x-checksum': 'abc' }), s.write('body'), s.end()) },
  { name: 'getHeaders and hasHeader', listener: (_q, s) => (s.setHeader('X-Mixed', 'v'), s.write(JSON.stringify({ h: s.getHeaders(), has: s.hasHeader('x-mixed') })), s.end()) },
  { name: 'end after a delay', listener: (_q, s) => (s.write('first '), setTimeout(() => s.end('second'), 20)) },
];

function echo(req: Req, res: Res) {
  const parts: Buffer[] = [];
  req.on('data', (d: Buffer) => parts.push(d));
  req.on('end', () => {
    res.setHeader('content-type', 'text/plain');
    res.write(Buffer.concat(parts));
    res.end();
  });
}

/** The code of what `fn` throws, or "none". */
function tryCode(fn: () => unknown): string {
  try {
    fn();
    return 'none';
  } catch (e) {
    return (e as { code?: string }).code ?? String(e);
  }
}
