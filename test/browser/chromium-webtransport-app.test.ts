// The real browser against WebTransport for applications: Chromium's W3C
// WebTransport API on one side, createSecureServer's sessions on the other.
import assert from 'node:assert/strict';
import http from 'node:http';
import { AddressInfo } from 'node:net';
import type { Readable } from 'node:stream';
import { createSecureServer, Http3SecureServer, loadIdentity, silentLogger, WebTransportSession, WebTransportSessionRequest } from '../../src';
import { launchChromium, Launched } from '../helpers/chromium';

const BROWSER_SCRIPT = `async function (url) {
  const wt = new WebTransport(url);
  await wt.ready;
  const enc = (s) => new TextEncoder().encode(s);
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
  // The server greets on a unidirectional stream it opens.
  const incoming = wt.incomingUnidirectionalStreams.getReader();
  const greeting = await readAll((await incoming.read()).value);
  // A bidirectional stream: the application answers in upper case.
  const bidi = await wt.createBidirectionalStream();
  const w = bidi.writable.getWriter();
  await w.write(enc('hello from the page'));
  await w.close();
  const answer = await readAll(bidi.readable);
  // A stream the server opens both ways: the page replies on it.
  const serverBidi = (await wt.incomingBidirectionalStreams.getReader().read()).value;
  const question = await readAll(serverBidi.readable);
  const sw = serverBidi.writable.getWriter();
  await sw.write(enc('reply to ' + question));
  await sw.close();
  // Datagrams, answered in upper case.
  const dw = wt.datagrams.writable.getWriter();
  const dr = wt.datagrams.readable.getReader();
  const datagrams = [];
  for (let i = 0; i < 3; i++) {
    await dw.write(enc('dg' + i));
    datagrams.push(text((await dr.read()).value));
  }
  // The server closes the session with a code and reason.
  await dw.write(enc('close please'));
  const closed = await wt.closed;
  return { greeting, answer, question, datagrams, closed: { closeCode: closed.closeCode, reason: closed.reason } };
}`;

/**
 * Reads a Node Readable to its end, as text. Not `for await`: that
 * destroys a Duplex when the reading ends, writable side and all.
 */
function textOf(readable: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  return new Promise((resolve, reject) => {
    readable.on('data', (c: Buffer) => chunks.push(c));
    readable.once('end', () => resolve(Buffer.concat(chunks).toString()));
    readable.once('error', reject);
  });
}

/** The same application as the W3C-shaped one below, through Node Duplexes (toDuplex(), datagramDuplex()). */
function duplexApp(session: WebTransportSession): void {
  const duplexSeen = seenThroughDuplexes;
  void (async () => {
    const greet = (await session.createUnidirectionalStream()).getWriter();
    await greet.write(Buffer.from('welcome'));
    await greet.close();
    for await (const bidi of session.incomingBidirectionalStreams) {
      const d = bidi.toDuplex();
      d.end(Buffer.from((await textOf(d)).toUpperCase()));
      const mine = (await session.createBidirectionalStream()).toDuplex();
      mine.end(Buffer.from('how are you?'));
      duplexSeen.reply = await textOf(mine);
    }
  })().catch((e) => (duplexSeen.error = String(e)));
  const datagrams = session.datagramDuplex();
  datagrams.on('error', (e) => (duplexSeen.error = String(e)));
  datagrams.on('data', (d: Buffer) => {
    const t = d.toString();
    if (t === 'close please') session.close({ closeCode: 3003, reason: 'bye \u2713' });
    else datagrams.write(Buffer.from(t.toUpperCase()));
  });
}
const seenThroughDuplexes: { reply?: string; error?: string } = {};

/** What BROWSER_SCRIPT returns when the application answers as both shapes of it below do. */
const PAGE_SEES = {
  greeting: 'welcome',
  answer: 'HELLO FROM THE PAGE',
  question: 'how are you?',
  datagrams: ['DG0', 'DG1', 'DG2'],
  closed: { closeCode: 3003, reason: 'bye \u2713' },
};

describe('WebTransport for applications from headless Chromium (W3C API)', function () {
  this.timeout(60000);
  let server: Http3SecureServer;
  let port: number;
  let chrome: Launched;
  let page: http.Server;
  let pagePort: number;
  const seen: { origin?: string; path?: string; reply?: string; offered?: string[] } = {};

  before(async () => {
    server = createSecureServer({ tcp: false, webtransport: true, logger: silentLogger, warnDemoIdentity: false });
    server.on('session', async (req: WebTransportSessionRequest) => {
      if (req.path === '/negotiate') {
        // Subprotocols: the page offers, the application picks the second.
        seen.offered = req.protocols;
        req.accept({ protocol: req.protocols[1] });
        return;
      }
      if (req.path.startsWith('/duplex/')) {
        duplexApp(req.accept());
        return;
      }
      seen.origin = req.origin;
      seen.path = req.path;
      const session: WebTransportSession = req.accept();
      const greet = (await session.createUnidirectionalStream()).getWriter();
      await greet.write(Buffer.from('welcome'));
      await greet.close();
      void (async () => {
        for await (const bidi of session.incomingBidirectionalStreams) {
          const chunks: Buffer[] = [];
          for await (const c of bidi.readable) chunks.push(Buffer.from(c));
          const w = bidi.writable.getWriter();
          await w.write(Buffer.from(Buffer.concat(chunks).toString().toUpperCase()));
          await w.close();
          // Then a stream of the server's own, both ways.
          const mine = await session.createBidirectionalStream();
          const mw = mine.writable.getWriter();
          await mw.write(Buffer.from('how are you?'));
          await mw.close();
          const back: Buffer[] = [];
          for await (const c of mine.readable) back.push(Buffer.from(c));
          seen.reply = Buffer.concat(back).toString();
        }
      })();
      void (async () => {
        const w = session.datagrams.writable.getWriter();
        for await (const d of session.datagrams.readable) {
          const t = Buffer.from(d).toString();
          if (t === 'close please') session.close({ closeCode: 3003, reason: 'bye \u2713' });
          else await w.write(Buffer.from(t.toUpperCase()));
        }
      })();
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    port = (server.address() as AddressInfo).port;
    page = http.createServer((_q, r) => r.end('<!doctype html><title>wt app</title>'));
    await new Promise<void>((r) => page.listen(0, '127.0.0.1', r));
    pagePort = (page.address() as AddressInfo).port;
    chrome = await launchChromium([`127.0.0.1:${port}`], loadIdentity().spkiSha256);
  });
  /** BROWSER_SCRIPT in a new tab against a session at `path`. */
  async function runPage(path: string): Promise<unknown> {
    const tab = await chrome.browser.newPage();
    try {
      await tab.goto(`http://localhost:${pagePort}/`);
      return await tab.evaluate(`(${BROWSER_SCRIPT})(${JSON.stringify(`https://127.0.0.1:${port}${path}`)})`);
    } finally {
      await tab.close();
    }
  }

  after(async () => {
    await chrome?.close();
    page?.close();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('streams both ways in both directions, datagrams, and a server close with code and reason reach the page', async () => {
    assert.deepEqual(await runPage('/room/1'), PAGE_SEES);
    assert.equal(seen.origin, `http://localhost:${pagePort}`, 'the page\'s origin, for the application to check');
    assert.equal(seen.path, '/room/1');
    assert.equal(seen.reply, 'reply to how are you?');
  });

  it('the same exchange with the application on Node Duplexes (a stream\'s toDuplex(), the session\'s datagramDuplex())', async () => {
    assert.deepEqual(await runPage('/duplex/1'), PAGE_SEES);
    assert.deepEqual(seenThroughDuplexes, { reply: 'reply to how are you?' });
  });

  it('subprotocols: the page\'s offer reaches request.protocols, and the one accept() picks is the page\'s wt.protocol', async () => {
    const tab = await chrome.browser.newPage();
    await tab.goto(`http://localhost:${pagePort}/`);
    const url = JSON.stringify(`https://127.0.0.1:${port}/negotiate`);
    const chosen = await tab.evaluate(`(async () => { const wt = new WebTransport(${url}, { protocols: ['chat-v2', 'chat-v1'] }); await wt.ready; const p = wt.protocol; wt.close(); return p; })()`);
    assert.deepEqual(seen.offered, ['chat-v2', 'chat-v1']);
    assert.equal(chosen, 'chat-v1');
    await tab.close();
  });
});
