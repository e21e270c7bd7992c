// The real browser: Chromium's WebTransport API against Profile B.
import assert from 'node:assert/strict';
import http from 'node:http';
import { AddressInfo } from 'node:net';
import { createServer, Http3Server } from '../../src';
import { WebTransportStats } from '../../src/demo';
import { createProfileB } from '../../src/demo/profiles/profile-b';
import { launchChromium, Launched } from '../helpers/chromium';
import { request } from '../helpers/clients/h3client';
import { MemoryLogger } from '../helpers/server';

const BROWSER_SCRIPT = `async function (url) {
  const wt = new WebTransport(url);
  await wt.ready;
  const text = (b) => new TextDecoder().decode(b);
  async function readAll(readable) {
    const reader = readable.getReader();
    let out = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return out;
      out += text(value);
    }
  }
  // Bidirectional: echoed on itself.
  const bidi = await wt.createBidirectionalStream();
  const w = bidi.writable.getWriter();
  await w.write(new TextEncoder().encode('ping over bidi'));
  await w.close();
  const echo = await readAll(bidi.readable);
  // Unidirectional: answered on a stream the server opens.
  const uni = await wt.createUnidirectionalStream();
  const uw = uni.getWriter();
  await uw.write(new TextEncoder().encode('hello uni'));
  await uw.close();
  const incoming = wt.incomingUnidirectionalStreams.getReader();
  const { value: answerStream } = await incoming.read();
  const answer = await readAll(answerStream);
  // Datagrams: echoed.
  const dw = wt.datagrams.writable.getWriter();
  const dr = wt.datagrams.readable.getReader();
  const datagrams = [];
  for (let i = 0; i < 3; i++) {
    await dw.write(new TextEncoder().encode('dg' + i));
    const { value } = await dr.read();
    datagrams.push(text(value));
  }
  window.wt = wt;
  return { echo, answer, datagrams };
}`;

describe('Profile B from headless Chromium (WebTransport API)', function () {
  this.timeout(60000);
  let server: Http3Server;
  let port: number;
  let chrome: Launched;
  let page: http.Server;
  let pagePort: number;

  before(async () => {
    const stats = new WebTransportStats();
    server = createServer({ webtransport: true, logger: new MemoryLogger() }, createProfileB(stats));
    stats.attach(server);
    ({ port } = await server.listen(0, '127.0.0.1'));
    // A localhost HTTP/1 page: a secure context, as WebTransport requires.
    page = http.createServer((_q, r) => r.end('<!doctype html><title>wt</title>'));
    await new Promise<void>((r) => page.listen(0, '127.0.0.1', r));
    pagePort = (page.address() as AddressInfo).port;
    chrome = await launchChromium([`127.0.0.1:${port}`], server.identity.spkiSha256);
  });
  after(async () => {
    await chrome?.close();
    page?.close();
    await server?.close();
  });

  it('opens a session, gets a bidirectional stream echoed, a unidirectional stream answered, datagrams echoed; /stats counts exactly that', async () => {
    const tab = await chrome.browser.newPage();
    await tab.goto(`http://localhost:${pagePort}/`);
    // The page script is a string: tsx's transpiled helpers do not exist in
    // the page.
    const result = (await tab.evaluate(`(${BROWSER_SCRIPT})(${JSON.stringify(`https://127.0.0.1:${port}/wt`)})`)) as {
      echo: string;
      answer: string;
      datagrams: string[];
    };
    assert.equal(result.echo, 'ping over bidi');
    assert.equal(result.answer, 'hello uni');
    assert.deepEqual(result.datagrams, ['dg0', 'dg1', 'dg2']);

    const stats = JSON.parse((await request(port, { path: '/stats' })).body_text);
    assert.deepEqual(stats, {
      occupancy: { sessions: 1, sessions_cap: 32, peer_streams: 0, peer_streams_cap: 128 },
      usage: { sessions: 1, streams: 2, datagrams: 3 },
    });

    await tab.evaluate(`(async () => { window.wt.close({ closeCode: 0, reason: 'done' }); await window.wt.closed; })()`);
    // The close capsule arrives; occupancy falls back to 0.
    let after;
    for (let i = 0; i < 50; i++) {
      after = JSON.parse((await request(port, { path: '/stats' })).body_text);
      if (after.occupancy.sessions === 0) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.deepEqual(after, {
      occupancy: { sessions: 0, sessions_cap: 32, peer_streams: 0, peer_streams_cap: 128 },
      usage: { sessions: 1, streams: 2, datagrams: 3 },
    });
    await tab.close();
  });
});
