// Express (4 and 5) gives every request and response a new prototype:
// `Object.setPrototypeOf(req, app.request)`, where app.request derives from
// http.IncomingMessage.prototype (app.response from
// http.ServerResponse.prototype). After that our prototype's members are
// gone and node:http's HTTP/1 ones answer instead: res.end() would write
// HTTP/1 bytes to res.socket, req.headers would read a field that is never
// filled.
//
// So for a listener that looks like an Express app (its `request` and
// `response` properties derive from node:http's prototypes), each request
// and response gets our members as own properties (the same functions and
// accessor descriptors), which shadow whatever prototype is set later.
// Express's own members (res.send, req.get...) still come from its
// prototype and call ours. Other listeners pay nothing. Private fields and
// methods live on the instance, so they are unaffected by the swap.
import http from 'node:http';
import http2 from 'node:http2';
import { Readable, Stream } from 'node:stream';
import { Http3ServerRequest } from './request';
import { Http3ServerResponse } from './response';

/** Own members of `proto` and its ancestors up to (not including) `stop`, nearest first. */
function membersUpTo(proto: object, stop: object): PropertyDescriptorMap {
  const out: PropertyDescriptorMap = {};
  for (let p: object | null = proto; p && p !== stop; p = Object.getPrototypeOf(p)) {
    for (const key of Reflect.ownKeys(p)) {
      if (key === 'constructor' || Object.prototype.hasOwnProperty.call(out, key)) continue;
      const d = Object.getOwnPropertyDescriptor(p, key)!;
      // Own properties must stay replaceable (on-headers reassigns
      // res.writeHead; compression reassigns res.write and res.end).
      out[key as string] = { ...d, configurable: true, enumerable: false };
    }
  }
  return out;
}

// Built once, the first time an Express-like listener is seen.
let requestMembers: PropertyDescriptorMap | undefined;
let responseMembers: PropertyDescriptorMap | undefined;

/** True when `listener` carries node:http-derived request/response prototypes it will swap in (Express's `app`). */
export function swapsHttp1Prototypes(listener: unknown): boolean {
  if (typeof listener !== 'function') return false;
  const { request, response } = listener as { request?: unknown; response?: unknown };
  return (
    (typeof request === 'object' && request !== null && Object.prototype.isPrototypeOf.call(http.IncomingMessage.prototype, request)) ||
    (typeof response === 'object' && response !== null && Object.prototype.isPrototypeOf.call(http.ServerResponse.prototype, response))
  );
}

/** Pins our members on `req` and `res` as own properties, so a prototype swap cannot take them away. */
export function pinCompatMembers(req: Http3ServerRequest, res: Http3ServerResponse): void {
  Object.defineProperties(req, (requestMembers ??= membersUpTo(Http3ServerRequest.prototype, Readable.prototype)));
  Object.defineProperties(res, (responseMembers ??= membersUpTo(Http3ServerResponse.prototype, Stream.prototype)));
}

// node:http2's compatibility objects, which the TCP side hands the same
// listener for HTTP/2 clients, break under Express's swap the same way
// (expressjs/express#3388); pinned the same way.
let http2RequestMembers: PropertyDescriptorMap | undefined;
let http2ResponseMembers: PropertyDescriptorMap | undefined;

/** Pins node:http2's compat members on its req/res (HTTP/2 on the TCP side) for an Express-like listener. */
export function pinHttp2Members(req: http2.Http2ServerRequest, res: http2.Http2ServerResponse): void {
  Object.defineProperties(req, (http2RequestMembers ??= membersUpTo(http2.Http2ServerRequest.prototype, Readable.prototype)));
  Object.defineProperties(res, (http2ResponseMembers ??= membersUpTo(http2.Http2ServerResponse.prototype, Stream.prototype)));
}
