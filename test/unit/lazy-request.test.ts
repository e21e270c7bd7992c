// The fetch adapter's lazy Request (src/lib/lazy-request.ts): what a handler
// and undici see must be what a real Request gives, whether the real one
// is built or not.
import assert from 'node:assert/strict';
import { isBuilt, lazyRequest, STAND_IN_ACCEPTED } from '../../src/lib/lazy-request';

const URL_ = 'https://example.test:4433/items?x=1';

function make(body?: string) {
  let builds = 0;
  const headers = new Headers([['content-type', 'text/plain'], ['x-a', '1']]);
  const request = lazyRequest(body === undefined ? 'GET' : 'POST', URL_, headers, (h) => {
    builds++;
    return new Request(URL_, { method: body === undefined ? 'GET' : 'POST', headers: h, body, duplex: 'half' } as RequestInit);
  });
  return { request, headers, builds: () => builds };
}

describe('lazy Request (fetch adapter)', () => {
  it(`answers method, URL and headers ${STAND_IN_ACCEPTED ? 'without building the real Request' : '(the real Request, built at once: this undici refuses stand-ins)'}, and is a Request`, () => {
    const { request, headers, builds } = make();
    assert.ok(request instanceof Request);
    assert.equal(Object.prototype.toString.call(request), '[object Request]');
    assert.equal(request.method, 'GET');
    assert.equal(request.url, URL_);
    assert.equal(request.headers.get('x-a'), '1');
    if (STAND_IN_ACCEPTED) {
      assert.equal(request.headers, headers);
      assert.equal(builds(), 0);
      assert.equal(isBuilt(request), false);
    } else {
      assert.equal(builds(), 1);
      assert.equal(isBuilt(request), true);
    }
  });

  it('the probe matches the runtime: undici up to Node 22 keeps its state under symbols, later ones in private fields', () => {
    const major = Number(process.versions.node.split('.')[0]);
    const symbolState = Object.getOwnPropertySymbols(new Request('http://h3-node.invalid/')).length > 0;
    assert.equal(STAND_IN_ACCEPTED, symbolState, `Node ${process.versions.node}`);
    if (major <= 22) assert.equal(STAND_IN_ACCEPTED, true);
    if (major >= 24) assert.equal(STAND_IN_ACCEPTED, false);
  });

  it('builds the real Request once, on the first other member, from the headers as they are then', async () => {
    const { request, builds } = make('hello');
    request.headers.set('x-late', 'yes');
    assert.equal(await request.text(), 'hello');
    assert.equal(request.bodyUsed, true);
    assert.equal(request.signal.aborted, false);
    assert.equal(request.mode, 'cors');
    assert.equal(builds(), 1);
    assert.equal(isBuilt(request), true);
  });

  it('undici takes it where it takes a Request: new Request(request) and clone() carry method, URL, fields and body', async () => {
    const { request } = make('payload');
    request.headers.set('x-late', 'yes');
    const copy = new Request(request);
    assert.equal(copy.method, 'POST');
    assert.equal(copy.url, URL_);
    assert.equal(copy.headers.get('x-late'), 'yes');
    assert.equal(copy.headers.get('content-type'), 'text/plain');
    assert.equal(await copy.text(), 'payload');
    const { request: other } = make('again');
    const clone = other.clone();
    assert.ok(clone instanceof Request);
    assert.equal(await clone.text(), 'again');
    assert.equal(await other.text(), 'again');
  });

  it('a body read through the lazy object is the body the real one has (json, arrayBuffer)', async () => {
    assert.deepEqual(await make('{"a":1}').request.json(), { a: 1 });
    assert.equal(Buffer.from(await make('abc').request.arrayBuffer()).toString(), 'abc');
  });
});
