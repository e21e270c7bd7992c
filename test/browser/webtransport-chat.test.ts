// The example people open: examples/webtransport-chat, two headless
// Chromium pages in one room. The page comes over TCP from the same server
// (https://127.0.0.1:port/, HTTP/2); the chat goes to https://localhost:port
// over HTTP/3 (the page's ?wt=), the one origin Chromium is told to take
// the demo certificate for on QUIC: for WebTransport it honours the
// certificate flag only on an origin forced onto QUIC. Messages go over
// streams and presence over datagrams. The screenshot goes to
// test-results/, and to docs/webtransport-chat.png with
// H3_UPDATE_DOCS_SCREENSHOT=1.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { createChat, ChatServer } from '../../examples/webtransport-chat/chat';
import { loadIdentity, silentLogger } from '../../src';
import { launchChromiumWithArgs, Launched } from '../helpers/chromium';

const ROOT = path.resolve(__dirname, '..', '..');

async function joinAs(tab: Page, url: string, name: string): Promise<void> {
  await tab.goto(url);
  await tab.fill('#name', name);
  await tab.click('#join button');
  await tab.waitForFunction((n) => document.getElementById('status')!.textContent === `connected as ${n}`, name, { timeout: 10000 });
}

async function say(tab: Page, text: string): Promise<void> {
  await tab.fill('#text', text);
  await tab.click('#send button');
}

const logText = (tab: Page) => tab.evaluate(() => document.getElementById('log')!.textContent ?? '');
const presence = (tab: Page) => tab.evaluate(() => [...document.querySelectorAll('#presence li')].map((li) => li.textContent).sort());

describe('examples/webtransport-chat from two headless Chromium pages', function () {
  this.timeout(60000);
  let chat: ChatServer;
  let chrome: Launched;
  let url: string;

  before(async () => {
    // Members silent for 5 s are dropped (65 s by default): Chromium
    // sometimes drops a closed tab's connection without a word.
    chat = createChat({ logger: silentLogger, memberTimeoutMs: 5000 });
    await new Promise<void>((resolve, reject) => {
      chat.server.once('error', reject);
      // Dual-stack ("::"): Chromium resolves localhost to ::1 first.
      chat.server.listen(0, () => resolve());
    });
    const port = (chat.server.address() as { port: number }).port;
    url = `https://127.0.0.1:${port}/?wt=localhost:${port}`;
    chrome = await launchChromiumWithArgs([`--origin-to-force-quic-on=localhost:${port}`, `--ignore-certificate-errors-spki-list=${loadIdentity().spkiSha256}`]);
  });
  after(async () => {
    await chrome?.close();
    await chat?.close();
  });

  it('two members see each other\'s messages and presence; the page came over TCP; screenshot', async () => {
    const ada = await chrome.browser.newPage({ viewport: { width: 720, height: 400 } });
    const grace = await chrome.browser.newPage({ viewport: { width: 720, height: 400 } });
    await joinAs(ada, url, 'Ada');
    await joinAs(grace, url, 'Grace');
    const pageProtocol = await ada.evaluate(() => (performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming).nextHopProtocol);
    assert.equal(pageProtocol, 'h2', 'the page itself came over TCP (HTTP/2), not QUIC');

    await say(ada, 'hello from Ada');
    await grace.waitForFunction(() => document.getElementById('log')!.textContent!.includes('hello from Ada'), null, { timeout: 10000 });
    await say(grace, 'hi Ada, Grace here \u2713');
    await ada.waitForFunction(() => document.getElementById('log')!.textContent!.includes('Grace here \u2713'), null, { timeout: 10000 });
    for (const tab of [ada, grace]) {
      await tab.waitForFunction(() => document.querySelectorAll('#presence li').length === 2, null, { timeout: 10000 });
      assert.deepEqual(await presence(tab), ['Ada', 'Grace']);
    }
    // Both pages hold the same conversation, in order.
    const expected = 'Ada: hello from Ada';
    for (const tab of [ada, grace]) {
      const text = await logText(tab);
      assert.ok(text.indexOf(expected) >= 0 && text.indexOf(expected) < text.indexOf('Grace: hi Ada'), text);
    }
    assert.deepEqual(chat.members().sort(), ['Ada', 'Grace']);

    fs.mkdirSync(path.join(ROOT, 'test-results'), { recursive: true });
    await grace.screenshot({ path: path.join(ROOT, 'test-results', 'webtransport-chat.png') });
    if (process.env.H3_UPDATE_DOCS_SCREENSHOT === '1') await grace.screenshot({ path: path.join(ROOT, 'docs', 'webtransport-chat.png') });

    // A member who closes the page leaves the room: at once when Chromium
    // closes the session, within the 5 s timeout when it goes silently.
    await ada.close();
    const deadline = Date.now() + 12000;
    while (chat.members().length !== 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(chat.members(), ['Grace']);
    await grace.close();
  });
});
