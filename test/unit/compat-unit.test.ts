// The node:http2-compatible API (src/lib/compat) driven through a fake
// RequestStream: no native core, no sockets. End-to-end tests over UDP come
// with the native StreamServer.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { finished, pipeline, Readable, Writable } from 'node:stream';
import { createSecureServer, Http3SecureServer, Http3ServerRequest, Http3ServerResponse } from '../../src';
import { withDevHooks } from '../../src/lib/dev-hooks';
import { Exchange, ExchangeContext } from '../../src/lib/compat/exchange';
import { TickQueue } from '../../src/lib/compat/tick-queue';
import type { Logger } from '../../src/lib/log';
import type { AddressInfo, CoreOptions, StreamServerEvents } from '../../src/lib/stream-server';
import { CloseHow } from '../../src/native/protocol';
import { FakeStream, fakeConnection, pairs, requestLines } from '../helpers/fake-stream';

class MemoryLogger implements Logger {
  readonly lines: string[] = [];
  error(m: string) {
    this.lines.push(`error: ${m}`);
  }
  warn(m: string) {
    this.lines.push(`warn: ${m}`);
  }
  info(m: string) {
    this.lines.push(`info: ${m}`);
  }
}

function context(overrides: Partial<ExchangeContext> = {}): ExchangeContext & { logger: MemoryLogger } {
  return { logger: new MemoryLogger(), timeout: 0, emitTimeout: () => false, ...overrides } as ExchangeContext & {
    logger: MemoryLogger;
  };
}

function open(lines = requestLines(), complete = true, ctx = context()) {
  const stream = new FakeStream(lines, complete);
  const ex = new Exchange(stream, ctx);
  return { stream, req: ex.req, res: ex.res, ctx };
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));
const CANCELLED = { reason: 'reset', code: 0x10c } as const;

describe('compat: request', () => {
  it('exposes method, url, authority, scheme, version and pseudo-headers in headers', () => {
    const { req } = open(requestLines('PUT', '/a?b=1'));
    assert.equal(req.method, 'PUT');
    assert.equal(req.url, '/a?b=1');
    assert.equal(req.authority, 'example.test:4433');
    assert.equal(req.scheme, 'https');
    assert.equal(req.httpVersion, '3.0');
    assert.equal(req.httpVersionMajor, 3);
    assert.equal(req.httpVersionMinor, 0);
    assert.equal(req.headers[':method'], 'PUT');
    assert.equal(req.headers[':path'], '/a?b=1');
    assert.equal(Object.getPrototypeOf(req.headers), null, 'null-prototype headers, as node:http2');
    assert.equal(req.headers.host, 'example.test:4433', 'host filled in from :authority');
    assert.ok(!req.rawHeaders.includes('host'), 'rawHeaders stay as received');
  });

  it("folds duplicates by Node's rules: set-cookie array, cookie '; ', single-value first wins, others ', '", () => {
    const { req } = open(
      requestLines('GET', '/', [
        'cookie', 'a=1',
        'x-list', 'one',
        'content-type', 'text/plain',
        'set-cookie', 's=1',
        'cookie', 'b=2',
        'x-list', 'Two',
        'content-type', 'application/json',
        'set-cookie', 's=2',
        'user-agent', 'first',
        'user-agent', 'second',
        'authorization', 'Bearer A',
        'authorization', 'Bearer B',
      ]),
    );
    assert.equal(req.headers.cookie, 'a=1; b=2');
    assert.equal(req.headers['x-list'], 'one, Two');
    assert.equal(req.headers['content-type'], 'text/plain');
    assert.deepEqual(req.headers['set-cookie'], ['s=1', 's=2']);
    assert.equal(req.headers['user-agent'], 'first');
    assert.equal(req.headers.authorization, 'Bearer A');
    assert.deepEqual(req.rawHeaders.slice(0, 4), [':method', 'GET', ':scheme', 'https']);
    assert.equal(req.rawHeaders.length, requestLines().length + 24);
    assert.deepEqual(req.headersDistinct.cookie, ['a=1', 'b=2']);
  });

  it('a request complete at its header section ends at once with no body', async () => {
    const { req, stream } = open();
    assert.equal(req.complete, true);
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    await once(req, 'end');
    assert.equal(chunks.length, 0);
    assert.equal(stream.consumed, 0);
  });

  it('a request nobody reads never builds its Readable; read after the response, it still ends and closes', async () => {
    const { req, res } = open();
    assert.ok(req instanceof Readable);
    res.end('ok');
    for (let i = 0; i < 4; i++) await tick();
    // Readable's constructor gives the object its own _events (and state): not run.
    assert.equal(Object.hasOwn(req, '_events'), false, 'no Readable built for a request nobody touched');
    // Someone looks later: the stream wakes, ends (the dump it was owed) and closes.
    const events: string[] = [];
    req.on('end', () => events.push('end'));
    req.on('close', () => events.push('close'));
    assert.equal(Object.hasOwn(req, '_events'), true);
    await once(req, 'close');
    assert.deepEqual(events, ['end', 'close']);
    assert.equal(req.readableEnded, true);
  });

  it('a request asleep wakes for every way a listener is added: prependListener too, and stream.finished', async () => {
    const a = open();
    const events: string[] = [];
    a.req.prependListener('end', () => events.push('end'));
    a.req.prependOnceListener('close', () => events.push('close'));
    a.res.end('ok');
    // Nothing else touches the request (awaiting once() would add a listener through on()).
    for (let i = 0; i < 6 && events.length < 2; i++) await tick();
    assert.deepEqual(events, ['end', 'close']);
    const b = open();
    b.res.end('ok');
    for (let i = 0; i < 4; i++) await tick();
    await new Promise<void>((resolve, reject) => finished(b.req, (e) => (e ? reject(e) : resolve())));
    assert.equal(b.req.readableEnded, true);
  });

  it('a request asleep keeps what arrives in order: the body sent with the header section, then chunks, then the end', async () => {
    const stream = new FakeStream(requestLines('POST', '/up'), false);
    (stream as { bufferedBody: Buffer }).bufferedBody = Buffer.from('abc');
    const { req } = new Exchange(stream, context());
    stream.onData!(Buffer.from('def'));
    stream.onEnd!();
    const got: Buffer[] = [];
    for await (const c of req) got.push(c as Buffer);
    assert.equal(Buffer.concat(got).toString(), 'abcdef');
    // An empty body whose end comes on its own, before anyone reads.
    const empty = new FakeStream(requestLines('POST', '/empty'), false);
    const ex = new Exchange(empty, context());
    empty.onEnd!();
    assert.equal(Object.hasOwn(ex.req, '_events'), false);
    assert.equal(ex.req.complete, true);
    let chunks = 0;
    for await (const _ of ex.req) chunks++;
    assert.equal(chunks, 0);
  });

  it('streams the body and its trailers', async () => {
    const { req, stream } = open(requestLines('POST', '/up'), false);
    const got: Buffer[] = [];
    req.on('data', (c) => got.push(c));
    stream.onData!(Buffer.from('hello '));
    stream.onData!(Buffer.from('world'));
    stream.onTrailers!(['x-checksum', 'abc', 'x-checksum', 'def']);
    assert.equal(req.complete, false);
    stream.onEnd!();
    await once(req, 'end');
    assert.equal(Buffer.concat(got).toString(), 'hello world');
    assert.equal(req.complete, true);
    assert.equal(req.trailers['x-checksum'], 'abc, def');
    assert.deepEqual(req.rawTrailers, ['x-checksum', 'abc', 'x-checksum', 'def']);
    assert.equal(stream.consumed, 11);
  });

  it('backpressure: credit stops at the highWaterMark while nobody reads, and returns as the consumer reads', async () => {
    const { req, stream } = open(requestLines('POST', '/up'), false);
    const chunk = Buffer.alloc(4096, 1);
    // The core delivers up to its credit; nobody reads.
    for (let i = 0; i < 20; i++) stream.onData!(chunk);
    await tick();
    const hwm = req.readableHighWaterMark;
    assert.ok(stream.consumed <= hwm, `consumed ${stream.consumed} > highWaterMark ${hwm} with no reader`);
    assert.ok(stream.consumed > 0);
    const before = stream.consumed;
    for (let i = 0; i < 20; i++) stream.onData!(chunk);
    assert.equal(stream.consumed, before, 'no credit for bytes sitting unread in the buffer');
    // The consumer reads everything: all credit comes back.
    let read = 0;
    req.on('data', (c: Buffer) => (read += c.length));
    await tick();
    await tick();
    assert.equal(read, 40 * 4096);
    assert.equal(stream.consumed, 40 * 4096);
    // A flowing consumer takes chunks as they come: credit at once.
    stream.onData!(chunk);
    assert.equal(stream.consumed, 41 * 4096);
  });

  it('a client reset mid-upload: aborted, then an error naming the HTTP/3 code, then close; no crash without listeners', async () => {
    const { req, stream } = open(requestLines('POST', '/up'), false);
    const events: string[] = [];
    req.on('aborted', () => events.push('aborted'));
    req.on('close', () => events.push('close'));
    stream.onData!(Buffer.from('partial'));
    stream.onAbort!(CANCELLED);
    await once(req, 'close');
    assert.deepEqual(events, ['aborted', 'close']);
    assert.equal(req.aborted, true);
    assert.equal(req.complete, false);

    // pipeline (an error listener) gets the named error.
    const second = open(requestLines('POST', '/up'), false);
    const sink = new Writable({ write: (_c, _e, cb) => cb() });
    const done = new Promise<Error | null | undefined>((resolve) => pipeline(second.req, sink, resolve));
    second.stream.onData!(Buffer.from('x'));
    second.stream.onAbort!(CANCELLED);
    const err = (await done) as Error & { code?: string; h3Code?: number };
    assert.ok(err);
    assert.match(err.message, /stream reset by the client: H3_REQUEST_CANCELLED \(0x10c\)/);
    assert.equal(err.code, 'ERR_HTTP3_STREAM_RESET');
    assert.equal(err.h3Code, 0x10c);
  });

  it('for await over the body throws the named error on a reset', async () => {
    const { req, stream } = open(requestLines('POST', '/up'), false);
    const reading = (async () => {
      for await (const _ of req);
    })();
    stream.onData!(Buffer.from('x'));
    stream.onAbort!({ reason: 'reset', code: 0x10d });
    await assert.rejects(reading, /H3_REQUEST_INCOMPLETE \(0x10d\)/);
  });

  it('socket: the peer address as Node code reads it, one view per request closing with the exchange', async () => {
    const { req, res, stream } = open();
    assert.equal(req.socket.remoteAddress, '203.0.113.7');
    assert.equal(req.socket.remotePort, 50123);
    assert.equal(req.socket.remoteFamily, 'IPv4');
    assert.equal(req.connection, req.socket);
    assert.equal(res.socket, req.socket);
    assert.equal(req.socket.encrypted, true);
    assert.equal(req.socket.alpnProtocol, 'h3');
    assert.equal(req.socket.setNoDelay(), req.socket);
    assert.equal(req.socket.readable, true);
    const closed = once(req.socket, 'close');
    res.end('x');
    await closed;
    assert.equal(req.socket.destroyed, true);
    assert.equal(req.socket.writable, false);
    assert.deepEqual(stream.commands(), ['respond']);
  });
});

describe('compat: TickQueue (deferred header sections, finish and close)', () => {
  it('runs items in order in one tick; one that throws surfaces as an uncaught exception and the rest still run, ahead of items added meanwhile', async () => {
    const ran: number[] = [];
    const queue = new TickQueue<number>((n) => {
      ran.push(n);
      if (n === 1) queue.add(5); // added while the queue runs: after 3 and 4
      if (n === 2) throw new Error('listener failed');
    });
    // mocha's own handler would fail the test: set it aside for this one.
    const saved = process.listeners('uncaughtException');
    process.removeAllListeners('uncaughtException');
    const caught: string[] = [];
    process.on('uncaughtException', (e) => caught.push(e.message));
    try {
      for (const n of [1, 2, 3, 4]) queue.add(n);
      assert.deepEqual(ran, [], 'nothing runs before the tick');
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.removeAllListeners('uncaughtException');
      for (const l of saved) process.on('uncaughtException', l);
    }
    assert.deepEqual(ran, [1, 2, 3, 4, 5]);
    assert.deepEqual(caught, ['listener failed']);
  });
});

describe('compat: response', () => {
  it('end(body) with nothing written is one respond() with the fields, date and content-length', async () => {
    const { res, stream } = open();
    res.statusCode = 201;
    res.setHeader('Content-Type', 'Text/Plain; Charset=UTF-8');
    res.setHeader('X-Count', 3);
    res.setHeader('set-cookie', ['a=1; Path=/', 'b=2']);
    res.appendHeader('Set-Cookie', 'c=3');
    assert.deepEqual(res.getHeader('set-cookie'), ['a=1; Path=/', 'b=2', 'c=3']);
    assert.equal(res.getHeader('x-count'), '3');
    assert.deepEqual(res.getHeaderNames(), ['content-type', 'x-count', 'set-cookie']);
    assert.equal(res.hasHeader('X-COUNT'), true);
    const finished = once(res, 'finish');
    res.end('created');
    assert.equal(res.writableEnded, true);
    assert.equal(res.headersSent, true);
    await finished;
    assert.equal(res.writableFinished, true);
    assert.deepEqual(stream.commands(), ['respond']);
    const [, status, fields, body] = stream.last('respond');
    assert.equal(status, 201);
    assert.equal(body, 'created');
    const p = pairs(fields);
    assert.deepEqual(p.slice(0, 5), [
      ['content-type', 'Text/Plain; Charset=UTF-8'],
      ['x-count', '3'],
      ['set-cookie', 'a=1; Path=/'],
      ['set-cookie', 'b=2'],
      ['set-cookie', 'c=3'],
    ]);
    assert.equal(p.find(([n]) => n === 'date')![1], new Date(Date.parse(p.find(([n]) => n === 'date')![1])).toUTCString());
    assert.deepEqual(p.find(([n]) => n === 'content-length'), ['content-length', '7']);
  });

  it("a header section over the client's SETTINGS_MAX_FIELD_SECTION_SIZE is an error naming the sizes, never sent", async () => {
    const stream = new FakeStream(requestLines(), true, fakeConnection(1, true, 200));
    const { res } = new Exchange(stream, context());
    const errors: NodeJS.ErrnoException[] = [];
    res.on('error', (e) => errors.push(e));
    res.setHeader('x-big', 'v'.repeat(300));
    res.end('never sent');
    await tick();
    assert.equal(errors.length, 1);
    assert.equal(errors[0].code, 'ERR_HTTP3_HEADERS_TOO_LARGE');
    assert.match(errors[0].message, /header section is \d+ bytes, over the client's SETTINGS_MAX_FIELD_SECTION_SIZE of 200/);
    assert.deepEqual(stream.commands(), ['reset'], 'nothing sent, the stream reset');
    assert.equal(stream.last('reset')[1], 0x102);
    // Within the limit, the same response goes out.
    const small = new FakeStream(requestLines(), true, fakeConnection(1, true, 200));
    const ok = new Exchange(small, context()).res;
    ok.sendDate = false;
    ok.end('fits');
    assert.deepEqual(small.commands(), ['respond']);
  });

  it('writeHead(status, headers) then end() in the same tick is still the fast path; object, flat list and pairs', () => {
    const { res, stream } = open();
    res.setHeader('x-a', 'old');
    res.writeHead(404, 'Nope', { 'X-A': 'new', 'Content-Type': 'text/plain' });
    assert.throws(() => res.setHeader('x-late', '1'), { code: 'ERR_HTTP_HEADERS_SENT' });
    res.end('missing');
    const [, status, fields] = stream.last('respond');
    assert.equal(status, 404);
    assert.equal(res.statusMessage, 'Nope');
    assert.deepEqual(pairs(fields).slice(0, 2), [['x-a', 'new'], ['content-type', 'text/plain']]);

    const flat = open();
    flat.res.writeHead(200, ['x-b', '1', 'x-b', '2']);
    flat.res.end();
    assert.deepEqual(pairs(flat.stream.last('respond')[2]).slice(0, 2), [['x-b', '1'], ['x-b', '2']]);

    const pairForm = open();
    pairForm.res.writeHead(200, [['x-c', '1'], ['x-c', '2']]);
    pairForm.res.end();
    assert.deepEqual(pairs(pairForm.stream.last('respond')[2]).slice(0, 2), [['x-c', '1'], ['x-c', '2']]);
    assert.throws(() => open().res.writeHead(200, ['odd']), { code: 'ERR_INVALID_ARG_VALUE' });
  });

  it('an explicit writeHead goes out on its own at the end of the tick (SSE), then data streams', async () => {
    const { res, stream } = open();
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    assert.deepEqual(stream.commands(), []);
    await tick();
    assert.deepEqual(stream.commands(), ['sendHeaders']);
    assert.equal(stream.last('sendHeaders')[3], false);
    assert.equal(res.write('data: 1\n\n'), true);
    res.end();
    assert.deepEqual(stream.commands(), ['sendHeaders', 'sendData', 'sendData']);
    assert.deepEqual(stream.last('sendData'), ['sendData', '', true]);
  });

  it('write() sends headers then data, returns false above sendHighWater, and drain follows onDrain', async () => {
    const { res, stream } = open();
    stream.sendHighWater = 10;
    const order: string[] = [];
    assert.equal(res.write('12345', () => order.push('cb1')), true);
    assert.equal(res.write(Buffer.from('678901'), () => order.push('cb2')), false);
    assert.equal(res.writableNeedDrain, true);
    assert.equal(res.writableLength, 11);
    await tick();
    assert.deepEqual(order, ['cb1'], 'the second callback waits for drain');
    const drained = once(res, 'drain');
    stream.sendPending = 0;
    stream.onDrain!();
    await drained;
    assert.deepEqual(order, ['cb1', 'cb2']);
    res.end('!');
    assert.deepEqual(stream.commands(), ['sendHeaders', 'sendData', 'sendData', 'sendData']);
    assert.deepEqual(stream.last('sendData'), ['sendData', '!', true]);
    assert.equal(pairs(stream.last('sendHeaders')[2]).some(([n]) => n === 'content-length'), false);
  });

  it('with trailers: sendHeaders, sendData, sendTrailers instead of respond()', () => {
    const { res, stream } = open();
    res.addTrailers({ 'X-Digest': 'sha-256=abc', 'Server-Timing': 'db;dur=5' });
    res.end('body');
    assert.deepEqual(stream.commands(), ['sendHeaders', 'sendData', 'sendTrailers']);
    assert.deepEqual(stream.last('sendTrailers')[1], ['x-digest', 'sha-256=abc', 'server-timing', 'db;dur=5']);
    assert.deepEqual(stream.last('sendData'), ['sendData', 'body', false]);
  });

  it('HEAD: headers only; write() and end() data are dropped and write() returns true', () => {
    const { res, stream } = open(requestLines('HEAD', '/'));
    res.setHeader('content-length', '1000');
    assert.equal(res.write('ignored'), true);
    res.end('also ignored');
    assert.deepEqual(stream.commands(), ['respond']);
    const [, status, fields, body] = stream.last('respond');
    assert.equal(status, 200);
    assert.equal(body, '');
    assert.deepEqual(pairs(fields).filter(([n]) => n === 'content-length'), [['content-length', '1000']]);
  });

  it('204 and 304 carry no body and no content-length', () => {
    for (const code of [204, 304]) {
      const { res, stream } = open();
      res.statusCode = code;
      res.write('x');
      res.end('y');
      const [, status, fields, body] = stream.last('respond');
      assert.equal(status, code);
      assert.equal(body, '');
      assert.equal(pairs(fields).some(([n]) => n === 'content-length'), false);
    }
  });

  it('103 Early Hints and 100 Continue go out before the final response', () => {
    const { res, stream } = open();
    res.writeEarlyHints({ link: ['</a.css>; rel=preload; as=style', '</b.js>; rel=preload; as=script'], 'X-Trace': 't1' });
    assert.equal(res.writeContinue(), true);
    res.end('ok');
    assert.deepEqual(stream.calls[0], [
      'sendInformational',
      103,
      ['link', '</a.css>; rel=preload; as=style', 'link', '</b.js>; rel=preload; as=script', 'x-trace', 't1'],
    ]);
    assert.deepEqual(stream.calls[1], ['sendInformational', 100, []]);
    assert.equal(res.writeContinue(), false, 'not after the final response');
  });

  it('invalid names and values are TypeErrors naming the header', () => {
    const { res } = open();
    assert.throws(() => res.setHeader('bad name', 'x'), (e: Error & { code?: string }) => {
      assert.ok(e instanceof TypeError);
      assert.equal(e.code, 'ERR_INVALID_HTTP_TOKEN');
      assert.match(e.message, /"bad name"/);
      return true;
    });
    assert.throws(() => res.setHeader('x-evil', 'a\r\nb: c'), (e: Error & { code?: string }) => {
      assert.ok(e instanceof TypeError);
      assert.equal(e.code, 'ERR_INVALID_CHAR');
      assert.match(e.message, /x-evil/);
      return true;
    });
    assert.throws(() => res.setHeader('x-nul', 'a\0'), { code: 'ERR_INVALID_CHAR' });
    assert.throws(() => res.setHeader('x-undef', undefined as unknown as string), (e: Error & { code?: string }) => {
      assert.ok(e instanceof TypeError);
      assert.equal(e.code, 'ERR_HTTP_INVALID_HEADER_VALUE');
      assert.match(e.message, /x-undef/);
      return true;
    });
    assert.throws(() => res.setHeader('Transfer-Encoding', 'chunked'), (e: Error & { code?: string }) => {
      assert.ok(e instanceof TypeError);
      assert.equal(e.code, 'ERR_HTTP2_INVALID_CONNECTION_HEADERS');
      assert.match(e.message, /transfer-encoding/);
      return true;
    });
    assert.throws(() => res.setHeader(':status', '200'), { code: 'ERR_HTTP2_PSEUDOHEADER_NOT_ALLOWED' });
    assert.throws(() => res.appendHeader('x-list', ['ok', 'bad\n']), { code: 'ERR_INVALID_CHAR' });
    assert.throws(() => res.addTrailers({ 'bad trailer': 'x' }), { code: 'ERR_INVALID_HTTP_TOKEN' });
    assert.throws(() => (res.statusCode = 700), (e: Error & { code?: string }) => e instanceof RangeError && e.code === 'ERR_HTTP_INVALID_STATUS_CODE');
    assert.throws(() => (res.statusCode = 99), RangeError);
    assert.throws(() => res.writeHead(42), { code: 'ERR_HTTP_INVALID_STATUS_CODE' });
    assert.throws(() => res.write(42 as unknown as string), { code: 'ERR_INVALID_ARG_TYPE' });
    // `connection` is dropped, as node:http2 does (with a one-time warning).
    res.setHeader('Connection', 'close');
    assert.equal(res.hasHeader('connection'), false);
    // The name is tested as given: the Kelvin sign lowercases to an ASCII
    // 'k', and must not pass as one.
    assert.throws(() => res.setHeader('\u212a', 'x'), { code: 'ERR_INVALID_HTTP_TOKEN' });
    assert.throws(() => res.setHeader(42 as unknown as string, 'x'), { code: 'ERR_INVALID_ARG_TYPE' });
  });

  it('a name checked once is checked the same way on the next response (the name cache keeps no special name)', () => {
    for (let i = 0; i < 3; i++) {
      const { res } = open();
      res.setHeader('X-Trace', 'a');
      res.appendHeader('X-Trace', 'b');
      assert.deepEqual(res.getHeader('x-trace'), ['a', 'b']);
      assert.deepEqual(res.getRawHeaderNames(), ['X-Trace']);
      assert.throws(() => res.setHeader('Transfer-Encoding', 'chunked'), { code: 'ERR_HTTP2_INVALID_CONNECTION_HEADERS' });
      assert.throws(() => res.setHeader('TE', 'gzip'), { code: 'ERR_HTTP2_INVALID_CONNECTION_HEADERS' });
      res.setHeader('TE', 'trailers');
      res.setHeader('Connection', 'close');
      assert.equal(res.hasHeader('connection'), false);
      assert.throws(() => res.setHeader('X-Trace', 'bad\n'), { code: 'ERR_INVALID_CHAR' });
      assert.deepEqual(res.getHeaderNames(), ['x-trace', 'te']);
    }
  });

  it('removeHeader, getHeaders, values keep their case, wire names are lowercase, edges trimmed on the wire only', () => {
    const { res, stream } = open();
    res.setHeader('X-Mixed', ' Some Value ');
    res.setHeader('X-Gone', '1');
    res.removeHeader('x-gone');
    assert.equal(res.getHeader('x-mixed'), ' Some Value ');
    assert.deepEqual({ ...res.getHeaders() }, { 'x-mixed': ' Some Value ' });
    assert.deepEqual(res.getRawHeaderNames(), ['X-Mixed']);
    res.sendDate = false;
    res.end();
    assert.deepEqual(pairs(stream.last('respond')[2]), [['x-mixed', 'Some Value'], ['content-length', '0']]);
  });

  it('removing date or content-length stops them being filled in', () => {
    const { res, stream } = open();
    res.removeHeader('Date');
    res.removeHeader('Content-Length');
    res.end('abc');
    assert.deepEqual(stream.last('respond')[2], []);
  });

  it("a header section over the client's SETTINGS_MAX_FIELD_SECTION_SIZE is a clear error: logged, 'error' to listeners, errored", async () => {
    const { res, stream, ctx } = open();
    res.setHeader('x-big', 'x'.repeat(20000));
    const errors: Error[] = [];
    res.on('error', (e) => errors.push(e));
    res.write('start');
    stream.onAbort!({ reason: 'headers-too-large', code: 0x102 });
    await tick();
    assert.equal((res.errored as Error & { code?: string }).code, 'ERR_HTTP3_HEADERS_TOO_LARGE');
    assert.match(errors[0].message, /SETTINGS_MAX_FIELD_SECTION_SIZE/);
    assert.ok(ctx.logger.lines.some((l) => l.startsWith('error: ') && l.includes('SETTINGS_MAX_FIELD_SECTION_SIZE')));
    assert.equal(res.closed, true);
  });

  it("writing after end emits 'error' (ERR_STREAM_WRITE_AFTER_END) and calls back; without a listener it is logged, not thrown", async () => {
    const { res, stream, ctx } = open();
    res.end('done');
    const errors: Error[] = [];
    res.on('error', (e) => errors.push(e));
    let cbError: Error | null | undefined;
    assert.equal(res.write('more', (e) => (cbError = e)), false);
    await tick();
    assert.equal((cbError as Error & { code?: string }).code, 'ERR_STREAM_WRITE_AFTER_END');
    assert.equal((errors[0] as Error & { code?: string }).code, 'ERR_STREAM_WRITE_AFTER_END');
    assert.deepEqual(stream.commands(), ['respond']);

    const quiet = open(requestLines(), true, ctx);
    quiet.res.end();
    quiet.res.write('more');
    quiet.res.end('and more'); // a second end() is ignored
    await tick();
    assert.ok(ctx.logger.lines.some((l) => l.includes('ERR_STREAM_WRITE_AFTER_END')), ctx.logger.lines.join('\n'));
  });

  it('a client reset mid-download: the response closes (errored names the code), the request is aborted, writes are dropped', async () => {
    const { req, res, stream } = open();
    res.write('part');
    const events: string[] = [];
    req.on('aborted', () => events.push('req aborted'));
    res.on('close', () => events.push('res close'));
    res.on('finish', () => events.push('res finish'));
    stream.onAbort!({ reason: 'stop-sending', code: 0x10c });
    await tick();
    assert.deepEqual(events, ['req aborted', 'res close']);
    assert.match(res.errored!.message, /STOP_SENDING\): H3_REQUEST_CANCELLED \(0x10c\)/);
    assert.equal(res.write('more'), false);
    res.end();
    assert.deepEqual(stream.commands(), ['sendHeaders', 'sendData']);
  });

  it('pipeline(file, res) ends with an error naming the code when the client resets, and closes the file', async () => {
    const file = path.join(os.tmpdir(), `h3-compat-${process.pid}.bin`);
    fs.writeFileSync(file, Buffer.alloc(1 << 20, 7));
    try {
      const { res, stream } = open();
      stream.sendHighWater = 64 * 1024;
      const source = fs.createReadStream(file, { highWaterMark: 16 * 1024 });
      const done = new Promise<Error | null | undefined>((resolve) => pipeline(source, res, resolve));
      // Let some data flow, then the client cancels.
      for (const deadline = Date.now() + 10_000; stream.sendPending <= 64 * 1024 && Date.now() < deadline; ) {
        await new Promise((r) => setTimeout(r, 1));
      }
      assert.ok(stream.sendPending > 64 * 1024, 'the file flowed until backpressure');
      stream.onAbort!({ reason: 'reset', code: 0x10c });
      const err = await done;
      assert.ok(err, 'pipeline reports the reset');
      assert.match(err!.message, /H3_REQUEST_CANCELLED \(0x10c\)/);
      await tick();
      assert.equal(source.destroyed, true);
    } finally {
      fs.rmSync(file, { force: true });
    }
  });

  it('pipeline(file, res) completes with a fin on the last chunk and waits for drain', async () => {
    const file = path.join(os.tmpdir(), `h3-compat-ok-${process.pid}.bin`);
    fs.writeFileSync(file, Buffer.alloc(200 * 1024, 7));
    try {
      const { res, stream } = open();
      stream.sendHighWater = 32 * 1024;
      const done = new Promise<Error | null | undefined>((resolve) =>
        pipeline(fs.createReadStream(file, { highWaterMark: 16 * 1024 }), res, resolve),
      );
      let result: Error | null | undefined | 'pending' = 'pending';
      void done.then((r) => (result = r));
      // Real file reads: wait by the clock, not by a count of turns.
      for (const deadline = Date.now() + 10_000; result === 'pending' && Date.now() < deadline; ) {
        await new Promise((r) => setTimeout(r, 1));
        if (stream.sendPending > stream.sendHighWater) {
          stream.sendPending = 0; // QUIC took it
          stream.onDrain!();
        }
      }
      assert.equal(result, undefined);
      const sent = stream.calls.filter((c) => c[0] === 'sendData').reduce((n, c) => n + (c[1] as string).length, 0);
      assert.equal(sent, 200 * 1024);
      assert.equal(stream.last('sendData')[2], true);
    } finally {
      fs.rmSync(file, { force: true });
    }
  });

  it('destroy() resets the stream (H3_INTERNAL_ERROR with an error) and closes', async () => {
    const { res, stream } = open();
    res.write('x');
    const seen: string[] = [];
    res.on('error', (e) => seen.push(`error ${e.message}`));
    const closed = new Promise((resolve) => res.on('close', resolve));
    res.destroy(new Error('boom'));
    await closed;
    assert.deepEqual(seen, ['error boom']);
    assert.deepEqual(stream.last('reset'), ['reset', 0x102]);
    const finished = open();
    finished.res.end();
    finished.res.destroy();
    assert.deepEqual(finished.stream.commands(), ['respond'], 'no reset after the response is complete');
  });

  it('setTimeout: idle requests get timeout events; with no listener anywhere the stream is reset', async () => {
    const { res, stream } = open(requestLines(), true, context({ timeout: 20 }));
    await new Promise((r) => setTimeout(r, 60));
    assert.deepEqual(stream.last('reset'), ['reset', 0x10c]);
    assert.equal(res.destroyed, true);

    const second = open();
    let fired = 0;
    second.res.setTimeout(20, () => {
      fired++;
      second.res.end('late');
    });
    await new Promise((r) => setTimeout(r, 60));
    assert.equal(fired, 1);
    assert.deepEqual(second.stream.commands(), ['respond']);
  });
});

// ---- the server ----------------------------------------------------------------------------

class FakeCore {
  static last: FakeCore | undefined;
  events: StreamServerEvents;
  options: CoreOptions;
  listened: { port: number; host: string } | undefined;
  closedWith: boolean[] = [];
  failWith: string | undefined;
  constructor(options: CoreOptions, events: StreamServerEvents) {
    this.options = options;
    this.events = events;
    FakeCore.last = this;
  }
  listen(port: number, host: string): AddressInfo {
    if (this.failWith) throw new Error(this.failWith);
    this.listened = { port, host };
    return { address: host, family: 'IPv6', port: port || 44444 };
  }
  address(): AddressInfo | null {
    return this.listened ? { address: this.listened.host, family: 'IPv6', port: this.listened.port || 44444 } : null;
  }
  close(graceful: boolean): Promise<void> {
    this.closedWith.push(graceful);
    return Promise.resolve();
  }
}

const CERT_PEM = fs.readFileSync(path.join(__dirname, '..', '..', 'certs', 'demo-cert.pem'), 'utf8');
const KEY_PEM = fs.readFileSync(path.join(__dirname, '..', '..', 'certs', 'demo-key.pem'));

function fakeServer(listener?: (req: Http3ServerRequest, res: Http3ServerResponse) => unknown, failWith?: string) {
  const logger = new MemoryLogger();
  const server = createSecureServer(
    withDevHooks({ cert: CERT_PEM, key: KEY_PEM, logger, allowHTTP1: true, tcp: false }, {
      streamServer: (o, e) => {
        const core = new FakeCore(o, e);
        core.failWith = failWith;
        return core;
      },
    }),
    listener,
  );
  return { server, logger };
}

async function listening(server: Http3SecureServer): Promise<FakeCore> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return FakeCore.last!;
}

describe('compat: createSecureServer', () => {
  it('listen forms, async listening, address(), PEM text handed to the core as bytes, never as a file', async () => {
    const { server } = fakeServer(() => {});
    let called = false;
    server.listen({ port: 0, host: '::1' }, () => (called = true));
    assert.equal(server.listening, false, "'listening' comes asynchronously");
    await once(server, 'listening');
    assert.ok(called);
    assert.equal(server.listening, true);
    const core = FakeCore.last!;
    assert.deepEqual(core.listened, { port: 0, host: '::1' });
    assert.deepEqual(server.address(), { address: '::1', family: 'IPv6', port: 44444 });
    assert.equal(core.options.certChain?.toString(), CERT_PEM);
    const der = crypto.createPrivateKey(KEY_PEM).export({ type: 'pkcs8', format: 'der' });
    assert.ok(core.options.privateKey?.equals(der), 'the key reaches the core as PKCS#8 DER');
    assert.equal('keyPath' in core.options || 'certPath' in core.options, false, 'no file paths for the core');
    let closedCb = false;
    server.close(() => (closedCb = true));
    await once(server, 'close');
    assert.ok(closedCb);
    assert.deepEqual(core.closedWith, [true]);
    assert.equal(server.address(), null);
  });

  it("a bind failure is an 'error' event with a code, not an exception; bad options throw at construction", async () => {
    const { server } = fakeServer(() => {}, 'address 127.0.0.1:443 already in use');
    server.listen(443);
    const [err] = await once(server, 'error');
    assert.equal(err.code, 'EADDRINUSE');
    assert.equal(err.port, 443);
    assert.throws(() => server.listen(70000), { code: 'ERR_SOCKET_BAD_PORT' });
    assert.throws(() => createSecureServer({ cert: CERT_PEM }), /both `cert` and `key`/);
    assert.throws(() => createSecureServer({ cert: CERT_PEM, key: 'not a key -----BEGIN PRIVATE KEY-----' }), /not a usable PEM private key/);
    const closeErr = await new Promise<Error | undefined>((resolve) => createSecureServer({ cert: CERT_PEM, key: KEY_PEM }).close(resolve));
    assert.equal((closeErr as Error & { code?: string }).code, 'ERR_SERVER_NOT_RUNNING');
  });

  it("emits 'request' per stream and 'connection' / socket 'close' per connection", async () => {
    const seen: string[] = [];
    const { server } = fakeServer((req, res) => {
      seen.push(`${req.method} ${req.url} from ${req.socket.remoteAddress}:${req.socket.remotePort}`);
      res.end('hi');
    });
    const core = await listening(server);
    const conn = fakeConnection(7);
    const sockets: unknown[] = [];
    server.on('connection', (s) => sockets.push(s));
    core.events.onConnection!(conn);
    const stream = new FakeStream(requestLines('GET', '/x'), true, conn);
    core.events.onStream(stream);
    assert.deepEqual(seen, ['GET /x from 203.0.113.7:50123']);
    assert.deepEqual(stream.commands(), ['respond']);
    assert.equal(sockets.length, 1);
    const closed = once(sockets[0] as NodeJS.EventEmitter, 'close');
    core.events.onConnectionClose!(conn, { conn: conn.id, how: CloseHow.Peer, isApp: false, errorCode: 0, reason: '', peer: '203.0.113.7:50123', cid: conn.cid });
    await closed;
    server.close();
    await once(server, 'close');
  });

  it('a listener that throws before anything is sent answers 500 text/plain, and the server keeps serving', async () => {
    let n = 0;
    const { server, logger } = fakeServer((_req, res) => {
      if (n++ === 0) {
        res.setHeader('content-type', 'application/json');
        throw new Error('handler bug');
      }
      res.end('fine');
    });
    const core = await listening(server);
    const first = new FakeStream(requestLines('GET', '/boom'));
    core.events.onStream(first);
    const [, status, fields, body] = first.last('respond');
    assert.equal(status, 500);
    assert.equal(pairs(fields)[0][1], 'text/plain; charset=utf-8');
    assert.equal(body, 'internal server error\n');
    assert.ok(logger.lines.some((l) => /GET \/boom \(answered 500\): Error: handler bug/.test(l)), logger.lines.join('\n'));
    const second = new FakeStream(requestLines('GET', '/ok'));
    core.events.onStream(second);
    assert.equal(second.last('respond')[3], 'fine');
  });

  it('an async listener that rejects answers 500; one that fails after headers went out resets with H3_INTERNAL_ERROR', async () => {
    const { server, logger } = fakeServer(async (req, res) => {
      if (req.url === '/late') {
        res.write('started');
        await new Promise((r) => setImmediate(r));
        throw new Error('late failure');
      }
      await new Promise((r) => setImmediate(r));
      throw new Error('early failure');
    });
    const core = await listening(server);
    const early = new FakeStream(requestLines('GET', '/early'));
    const late = new FakeStream(requestLines('GET', '/late'));
    core.events.onStream(early);
    core.events.onStream(late);
    await tick();
    await tick();
    assert.equal(early.last('respond')[1], 500);
    assert.deepEqual(late.commands(), ['sendHeaders', 'sendData', 'reset']);
    assert.deepEqual(late.last('reset'), ['reset', 0x102]);
    assert.ok(logger.lines.some((l) => l.includes('stream reset (H3_INTERNAL_ERROR)')));
  });

  it('no request listener: 404; CONNECT without a connect listener: 405; unknown Expect: 417', async () => {
    const { server } = fakeServer();
    const core = await listening(server);
    const a = new FakeStream(requestLines('GET', '/'));
    core.events.onStream(a);
    assert.equal(a.last('respond')[1], 404);
    const b = new FakeStream([':method', 'CONNECT', ':authority', 'example.test:443']);
    core.events.onStream(b);
    assert.equal(b.last('respond')[1], 405);
    server.on('request', (_req, res) => res.end());
    const c = new FakeStream(requestLines('POST', '/', ['expect', 'something-else']), false);
    core.events.onStream(c);
    assert.equal(c.last('respond')[1], 417);
    const d = new FakeStream(requestLines('POST', '/', ['expect', '100-continue']), false);
    core.events.onStream(d);
    assert.deepEqual(d.commands(), ['sendInformational', 'respond']);
  });

  it("server.setTimeout: 'timeout' on the server with the request's socket", async () => {
    const { server } = fakeServer(() => {});
    const core = await listening(server);
    const timedOut: unknown[] = [];
    server.setTimeout(20, (socket) => {
      timedOut.push(socket);
      socket.destroy();
    });
    const stream = new FakeStream(requestLines('GET', '/slow'));
    core.events.onStream(stream);
    await new Promise((r) => setTimeout(r, 60));
    assert.equal(timedOut.length, 1);
    assert.deepEqual(stream.last('reset'), ['reset', 0x10c]);
  });

  it("Express's prototype swap: our members are pinned as own properties, so res.setHeader/res.end still reach the stream", async () => {
    // What express() builds: app.request/app.response deriving from node:http's prototypes.
    const request = Object.create(http.IncomingMessage.prototype, {
      get: { value(this: { headers: Record<string, string> }, name: string) { return this.headers[name.toLowerCase()]; } },
    });
    const response = Object.create(http.ServerResponse.prototype, {
      send: {
        value(this: http.ServerResponse, body: string) {
          this.setHeader('Content-Type', 'text/html; charset=utf-8');
          this.end(body);
          return this;
        },
      },
    });
    let checked = false;
    const app = Object.assign(
      (req: Http3ServerRequest, res: Http3ServerResponse) => {
        Object.setPrototypeOf(req, request);
        Object.setPrototypeOf(res, response);
        const r = req as unknown as { get(n: string): string; headers: Record<string, string>; url: string };
        assert.equal(r.get('x-test'), 'yes');
        assert.equal(r.url, '/express');
        req.url = '/rewritten';
        assert.equal(req.url, '/rewritten');
        assert.equal(req.httpVersion, '3.0');
        assert.equal(req.socket.remoteAddress, '203.0.113.7');
        res.statusCode = 202;
        res.setHeader('X-Powered-By', 'Express');
        assert.equal(res.headersSent, false);
        (res as unknown as { send(b: string): void }).send('<p>hi</p>');
        assert.equal(res.headersSent, true);
        assert.equal(res.writableEnded, true);
        checked = true;
      },
      { request, response },
    );
    const { server } = fakeServer(app);
    const core = await listening(server);
    const stream = new FakeStream(requestLines('GET', '/express', ['x-test', 'yes']));
    core.events.onStream(stream);
    assert.ok(checked);
    assert.deepEqual(stream.commands(), ['respond']);
    const [, status, fields, body] = stream.last('respond');
    assert.equal(status, 202);
    assert.equal(body, '<p>hi</p>');
    assert.deepEqual(pairs(fields).slice(0, 2), [['x-powered-by', 'Express'], ['content-type', 'text/html; charset=utf-8']]);

    // The body still streams after the swap, with credit going back.
    let uploaded = '';
    const upload = fakeServer(
      Object.assign(
        (req: Http3ServerRequest, res: Http3ServerResponse) => {
          Object.setPrototypeOf(req, request);
          Object.setPrototypeOf(res, response);
          req.setEncoding('utf8');
          req.on('data', (c: string) => (uploaded += c));
          req.on('end', () => res.end(uploaded.toUpperCase()));
        },
        { request, response },
      ),
    );
    const core3 = await listening(upload.server);
    const post = new FakeStream(requestLines('POST', '/up'), false);
    core3.events.onStream(post);
    post.onData!(Buffer.from('abc'));
    post.onData!(Buffer.from('def'));
    post.onEnd!();
    await tick();
    assert.equal(post.last('respond')[3], 'ABCDEF');
    assert.equal(post.consumed, 6);

    // Plain listeners pay nothing: no own copies of the members.
    let plain: Http3ServerResponse | undefined;
    const other = fakeServer((_req, res) => {
      plain = res;
      res.end();
    });
    const core2 = await listening(other.server);
    core2.events.onStream(new FakeStream(requestLines()));
    assert.equal(Object.getOwnPropertyDescriptor(plain!, 'end'), undefined);
  });
});
