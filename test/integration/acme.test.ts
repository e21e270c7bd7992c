// examples/acme against Pebble, Let's Encrypt's ACME test server: the app
// starts, orders a certificate for a made-up domain (Pebble's DNS server
// answers every name with 127.0.0.1), answers the HTTP-01 challenge,
// installs the certificate with setSecureContext without a restart, and
// serves HTTP/3 with it: aioquic checks the chain against Pebble's root
// for that name. A renewal is the same call: new connections get the new
// certificate, while one opened before the renewal keeps its download going.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { startAcmeServer, AcmeServer } from '../../examples/acme/acme';
import { silentLogger } from '../../src';
import { aioquicClient } from '../helpers/clients/aioquic';
import { freePort, startPebble, Pebble } from '../helpers/pebble';
import { TestCa } from '../helpers/test-ca';

const DOMAIN = 'h3-node.example';

function leafSha256(chainPem: string): string {
  return crypto.createHash('sha256').update(new crypto.X509Certificate(chainPem).raw).digest('hex');
}

describe('ACME: examples/acme gets and renews its certificate from Pebble while it serves HTTP/3', function () {
  this.timeout(120_000);
  let ca: TestCa;
  let pebble: Pebble;
  let app: AcmeServer;

  before(async () => {
    ca = new TestCa();
    const challengePort = await freePort();
    pebble = await startPebble(ca, challengePort);
    app = await startAcmeServer({
      domain: DOMAIN,
      directoryUrl: pebble.directoryUrl,
      acmeServerCa: pebble.serverCa,
      challengePort,
      port: 0,
      host: '127.0.0.1',
      // acme-client's own pre-check resolves the domain with the system's DNS, which does not know it.
      skipChallengeVerification: true,
      logger: silentLogger,
    });
  });

  after(async () => {
    await app?.close();
    await pebble?.stop();
    ca?.remove();
  });

  it('the first certificate is installed without a restart, and a renewal replaces it for new connections', async () => {
    const root = path.join(ca.dir, 'pebble-root.pem');
    fs.writeFileSync(root, await pebble.root());
    const client = aioquicClient();
    const fetchVerified = (paths: string[]) => client.runPlan!({ host: '127.0.0.1', port: app.port, sni: DOMAIN, ca: root, timeout: 30, connections: [{ paths }] });

    const first = await app.obtain();
    const x509 = new crypto.X509Certificate(first);
    assert.ok(x509.checkHost(DOMAIN), `issued for ${DOMAIN}: ${x509.subjectAltName}`);
    const before = await fetchVerified(['/']);
    assert.equal(before.connections[0].error, null, JSON.stringify(before.connections[0]));
    assert.equal(before.responses[0].status, 200);
    assert.equal(before.connections[0].peer_chain_sha256?.[0], leafSha256(first), 'the ACME certificate, verified against Pebble\'s root');

    const second = await app.obtain();
    assert.notEqual(leafSha256(second), leafSha256(first));
    const after = await fetchVerified(['/']);
    assert.equal(after.connections[0].error, null, JSON.stringify(after.connections[0]));
    assert.equal(after.connections[0].peer_chain_sha256?.[0], leafSha256(second), 'the renewed certificate');
  });
});
