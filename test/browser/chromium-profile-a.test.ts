// The real browser: Chromium's fetch() over HTTP/3 against Profile A.
import assert from 'node:assert/strict';
import { SESSION_COOKIE } from '../../src/demo';
import { handleProfileA } from '../../src/demo/profiles/profile-a';
import { launchChromium, Launched } from '../helpers/chromium';
import { startServer } from '../helpers/server';
import type { Http3Server } from '../../src';

describe('Profile A from headless Chromium (fetch over HTTP/3)', function () {
  this.timeout(60000);
  let server: Http3Server;
  let port: number;
  let chrome: Launched;

  before(async () => {
    ({ server, port } = await startServer(handleProfileA));
    chrome = await launchChromium([`127.0.0.1:${port}`], server.identity.spkiSha256);
  });
  after(async () => {
    await chrome?.close();
    await server?.close();
  });

  it('fetch("/login") gets 200 over h3, sets the session cookie, and the cookie opens /secret', async () => {
    const page = await chrome.browser.newPage();
    const origin = `https://127.0.0.1:${port}`;
    // A document from the server's own origin, so fetch() is same-origin.
    const nav = await page.goto(`${origin}/`);
    assert.equal(nav?.status(), 404);
    const result = await page.evaluate(async () => {
      const before = await fetch('/secret');
      const login = await fetch('/login');
      const loginText = await login.text();
      const secret = await fetch('/secret');
      const entry = performance.getEntriesByName(new URL('/login', location.href).href)[0] as PerformanceResourceTiming;
      return {
        beforeStatus: before.status,
        status: login.status,
        contentType: login.headers.get('content-type'),
        body: loginText,
        cookie: document.cookie,
        protocol: entry?.nextHopProtocol,
        secretStatus: secret.status,
        secretBody: await secret.text(),
      };
    });
    assert.equal(result.protocol, 'h3');
    assert.equal(result.beforeStatus, 401);
    assert.equal(result.status, 200);
    assert.equal(result.contentType, 'text/plain');
    assert.match(result.body, /login succeeded/);
    assert.equal(result.cookie, SESSION_COOKIE);
    assert.equal(result.secretStatus, 200);
    assert.match(result.secretBody, /secret/);
    await page.close();
  });
});
