// `--demo-page`: headless Chromium opens the Profile B page served by the
// CLI, clicks through its buttons (session, streams, datagrams, close) and
// the page's live counters must agree with the server's own /stats, read
// over HTTP/3 by aioquic. The screenshot goes to test-results/, and to
// docs/demo-page.png with H3_UPDATE_DOCS_SCREENSHOT=1 (npm run screenshot:demo-page).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { loadIdentity } from '../../src';
import { DEMO_CERT } from '../../src/demo';
import { launchChromium, Launched } from '../helpers/chromium';
import { request } from '../helpers/clients/h3client';
import { ROOT } from '../helpers/paths';
import { CliProcess, runCli, startCli } from '../helpers/server';

async function tiles(tab: Page): Promise<Record<string, string>> {
  return tab.evaluate(`(() => {
    const out = {};
    for (const id of ['t-sessions', 't-streams', 't-usage-sessions', 't-usage-streams', 't-usage-datagrams'])
      out[id] = document.getElementById(id).textContent.replace(/\\s+/g, ' ').trim();
    return out;
  })()`);
}

async function waitForTiles(tab: Page, expected: Record<string, string>): Promise<void> {
  const start = Date.now();
  let seen = {};
  while (Date.now() - start < 10000) {
    seen = await tiles(tab);
    if (Object.entries(expected).every(([k, v]) => (seen as Record<string, string>)[k] === v)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`page tiles ${JSON.stringify(seen)} never showed ${JSON.stringify(expected)}`);
}

async function click(tab: Page, id: string): Promise<void> {
  const before = Number((await tab.getAttribute('body', 'data-actions')) ?? 0);
  await tab.click(`#${id}`);
  try {
    await tab.waitForFunction(`Number(document.body.dataset.actions || 0) > ${before}`, undefined, { timeout: 20000 });
  } catch (e) {
    // Name the step and show the page's own log: which action never finished, and what it saw.
    const log = await tab.textContent('#log').catch(() => '(page log unavailable)');
    throw new Error(`button #${id}: its action did not finish within 20 s; page log: ${log}; ${(e as Error).message}`);
  }
}

describe('Profile B demo page (--demo-page) in headless Chromium', function () {
  this.timeout(60000);
  let cli: CliProcess;
  let chrome: Launched;
  let pageUrl: string;

  before(async () => {
    cli = await startCli(['--profile', 'b', '--demo-page', '0']);
    pageUrl = (await cli.waitForStderr(/demo page at (\S+)/)).split(' at ')[1];
    chrome = await launchChromium([`127.0.0.1:${cli.port}`], loadIdentity(DEMO_CERT).spkiSha256);
  });
  after(async () => {
    await chrome?.close();
    await cli?.stop();
  });

  it('is served over HTTP/1.1 on 127.0.0.1; only with --profile b', async () => {
    assert.match(pageUrl, /^http:\/\/127\.0\.0\.1:\d+\/$/);
    const res = await fetch(pageUrl);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(await res.text(), new RegExp(`"wtPort":${cli.port}`));
    const refused = await runCli(['--profile', 'a', '--demo-page', '0']);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /error: --demo-page needs --profile b/);
  });

  it('buttons open a session, streams and datagrams; the live counters match the server /stats; screenshot', async () => {
    const tab = await chrome.browser.newPage({ viewport: { width: 1120, height: 640 }, deviceScaleFactor: 1 });
    const errors: string[] = [];
    tab.on('pageerror', (e) => errors.push(e.message));
    await tab.goto(pageUrl);
    await waitForTiles(tab, { 't-sessions': '0 / 32', 't-usage-sessions': '0' });

    await click(tab, 'open');
    assert.equal(await tab.getAttribute('body', 'data-session'), 'open', await tab.textContent('#log') ?? '');
    await waitForTiles(tab, { 't-sessions': '1 / 32', 't-usage-sessions': '1' });
    // Steps a second apart so the chart shows them.
    const steps = ['bidi', 'uni', 'dgram', 'bidi', 'dgram', 'uni', 'bidi'];
    for (const id of steps) {
      await click(tab, id);
      await new Promise((r) => setTimeout(r, 700));
    }
    await waitForTiles(tab, { 't-usage-streams': '5', 't-usage-datagrams': '20', 't-streams': '0 / 128' });
    const log = (await tab.textContent('#log')) ?? '';
    assert.match(log, /bidi echo: "bidi #1"/);
    assert.match(log, /uni answer: "uni #2"/);
    assert.equal(await tab.getAttribute('body', 'data-echoed-datagrams'), '20');
    assert.doesNotMatch(log, /failed/);

    // The page's numbers are the server's: /stats over HTTP/3 from aioquic.
    const server = JSON.parse((await request(cli.port, { path: '/stats' })).body_text);
    assert.deepEqual(server, {
      occupancy: { sessions: 1, sessions_cap: 32, peer_streams: 0, peer_streams_cap: 128 },
      usage: { sessions: 1, streams: 5, datagrams: 20 },
    });
    await tab.waitForFunction(`document.body.dataset.stats === ${JSON.stringify(JSON.stringify(server))}`);

    await new Promise((r) => setTimeout(r, 600)); // one more poll: the chart reaches "now"
    fs.mkdirSync(path.join(ROOT, 'test-results'), { recursive: true });
    await tab.screenshot({ path: path.join(ROOT, 'test-results', 'demo-page.png') });
    if (process.env.H3_UPDATE_DOCS_SCREENSHOT === '1') {
      await tab.screenshot({ path: path.join(ROOT, 'docs', 'demo-page.png') });
    }

    await click(tab, 'close');
    await waitForTiles(tab, { 't-sessions': '0 / 32', 't-usage-sessions': '1' });
    const after = JSON.parse((await request(cli.port, { path: '/stats' })).body_text);
    assert.equal(after.occupancy.sessions, 0);
    assert.deepEqual(errors, []);
    await tab.close();
  });
});
