// Headless Chromium loading two names served by one createSecureServer
// over HTTP/3: a.test and b.test both resolve to 127.0.0.1
// (--host-resolver-rules), and each page arrives with its own name's
// certificate (the `identities` table), over h3. The certificates come from
// a CA made by openssl for the run; Chromium accepts them by their SPKI
// hashes, as it does the demo identity elsewhere.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import { createSecureServer, Http3SecureServer } from '../../src';
import { spkiSha256 } from '../../src/lib/identity';
import { launchChromiumWithArgs, Launched } from '../helpers/chromium';
import { TestCa } from '../helpers/test-ca';

describe('Chromium: two server names on one server, each with its own certificate, over HTTP/3', function () {
  this.timeout(60_000);
  let ca: TestCa;
  let server: Http3SecureServer;
  let port: number;
  let chrome: Launched;

  before(async () => {
    ca = new TestCa();
    const a = ca.issue('a', 'a.test', ['a.test']);
    const b = ca.issue('b', 'b.test', ['b.test']);
    server = createSecureServer(
      { cert: a.cert, key: a.key, identities: { 'b.test': { cert: b.cert, key: b.key } }, warnDemoIdentity: false },
      (req, res) => res.end(`served ${req.headers[':authority']}`),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    port = (server.address() as AddressInfo).port;
    const spki = [a, b].map((i) => spkiSha256(new crypto.X509Certificate(fs.readFileSync(i.cert)))).join(',');
    chrome = await launchChromiumWithArgs([
      '--host-resolver-rules=MAP a.test 127.0.0.1, MAP b.test 127.0.0.1',
      `--origin-to-force-quic-on=a.test:${port},b.test:${port}`,
      `--ignore-certificate-errors-spki-list=${spki}`,
    ]);
  });

  after(async () => {
    await chrome?.close();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    ca?.remove();
  });

  for (const name of ['a.test', 'b.test']) {
    it(`https://${name}/ comes over h3 with ${name}'s certificate`, async () => {
      const page = await chrome.browser.newPage();
      try {
        const response = await page.goto(`https://${name}:${port}/`);
        assert.equal(response?.status(), 200);
        assert.equal(await response!.text(), `served ${name}:${port}`);
        const security = await response!.securityDetails();
        assert.equal(security?.subjectName, name, JSON.stringify(security));
        assert.equal(security?.issuer, ca.name);
        const protocol = await page.evaluate(() => (performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming).nextHopProtocol);
        assert.equal(protocol, 'h3');
      } finally {
        await page.close();
      }
    });
  }
});
