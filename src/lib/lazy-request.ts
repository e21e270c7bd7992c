// A fetch Request that is built only when the handler needs more of it than
// its method, URL and headers. Node 20's undici makes a Request at a cost of
// about 10 us, and 30 us with a signal to follow (an AbortController of its
// own, a listener on ours, a FinalizationRegistry entry), while a router
// reads three fields: `serve`'s fetch path cost 110 us of JavaScript per
// W1 request against createSecureServer's 10 (docs/design.md, "The fetch
// path's Request").
//
// The object's prototype chain reaches Request.prototype, so `instanceof
// Request` holds; `method`, `url` and `headers` answer from what the
// adapter already has; every other member of Request.prototype, and the
// internal symbols undici reads from an instance (its state, signal and
// headers, as `new Request(req)` and `fetch(req)` do), builds the real
// Request once and answers from it. The members are taken from
// Request.prototype and from a sample instance when the module loads, so a
// Node version with more of them is covered without a list to keep.
//
// Node 24's and 26's undici keep a Request's state in private class fields
// (#state), which only an object its constructor made has: `new
// Request(x)` and fetch(x) treat anything else as a URL string ("Failed to
// parse URL from [object Request]"). No stand-in can pass that check, so
// where a probe at load shows it (STAND_IN_ACCEPTED false), lazyRequest
// builds the real Request at once: correct everywhere, lazy where it can be.

interface LazyState {
  method: string;
  url: string;
  headers: Headers;
  build: (headers: Headers) => Request;
  real: Request | undefined;
}

const STATE = Symbol('h3-node.lazyRequest');

type Lazy = Request & { [STATE]: LazyState };

/** The real Request behind `r`, built on the first call (from the headers as they are then). */
function real(r: Lazy): Request {
  const s = r[STATE];
  return (s.real ??= s.build(s.headers));
}

const PROTOTYPE: object = makePrototype();

function makePrototype(): object {
  const proto = Object.create(Request.prototype) as Record<PropertyKey, unknown>;
  Object.defineProperties(proto, {
    method: { get: function (this: Lazy) { return this[STATE].method; }, configurable: true },
    url: { get: function (this: Lazy) { return this[STATE].url; }, configurable: true },
    headers: { get: function (this: Lazy) { return this[STATE].headers; }, configurable: true },
  });
  const own = new Set<PropertyKey>(['constructor', 'method', 'url', 'headers', Symbol.toStringTag]);
  for (const key of Reflect.ownKeys(Request.prototype)) {
    if (own.has(key)) continue;
    const d = Object.getOwnPropertyDescriptor(Request.prototype, key)!;
    if (d.get) {
      Object.defineProperty(proto, key, { get: function (this: Lazy) { return (real(this) as unknown as Record<PropertyKey, unknown>)[key]; }, configurable: true });
    } else if (typeof d.value === 'function') {
      const method = d.value as (...args: unknown[]) => unknown;
      Object.defineProperty(proto, key, { value: function (this: Lazy, ...args: unknown[]) { return method.apply(real(this), args); }, configurable: true, writable: true });
    }
  }
  // undici's own fields, read from an instance by its constructor and by fetch().
  const sample = new Request('http://h3-node.invalid/');
  for (const key of Object.getOwnPropertySymbols(sample)) {
    Object.defineProperty(proto, key, { get: function (this: Lazy) { return (real(this) as unknown as Record<PropertyKey, unknown>)[key]; }, configurable: true });
  }
  return proto;
}

/** Whether this runtime's undici takes the stand-in where it takes a Request (see the top of this file). */
export const STAND_IN_ACCEPTED: boolean = probeStandIn();

function probeStandIn(): boolean {
  const url = 'http://h3-node.invalid/probe';
  const headers = new Headers([['x-probe', '1']]);
  const stand = standIn('PUT', url, headers, (h) => new Request(url, { method: 'PUT', headers: h }));
  try {
    const copy = new Request(stand);
    return copy.method === 'PUT' && copy.url === url && copy.headers.get('x-probe') === '1';
  } catch {
    return false;
  }
}

/**
 * A Request with `method`, `url` and `headers` at once and the rest from
 * `build(headers)`, called at most once, when something else is asked;
 * where the runtime refuses stand-ins, the real Request, built now.
 */
export function lazyRequest(method: string, url: string, headers: Headers, build: (headers: Headers) => Request): Request {
  return STAND_IN_ACCEPTED ? standIn(method, url, headers, build) : build(headers);
}

function standIn(method: string, url: string, headers: Headers, build: (headers: Headers) => Request): Request {
  const r = Object.create(PROTOTYPE) as Lazy;
  Object.defineProperty(r, STATE, { value: { method, url, headers, build, real: undefined } satisfies LazyState });
  return r;
}

/** Whether the real Request behind a lazy one was built (the handler asked for its body, signal or a method). */
export function isBuilt(r: Request): boolean {
  const state = (r as Partial<Lazy>)[STATE];
  return state === undefined || state.real !== undefined;
}
