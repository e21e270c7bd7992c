// Serving real domains with createSecureServer: several identities chosen
// by the client's server name (a table with wildcards, and SNICallback for
// the rest), a certificate renewed with setSecureContext while the server
// runs, client certificates, and bad input named by option. Every
// certificate comes from a CA openssl makes for this run
// (test/helpers/test-ca.ts), not the demo identity, and real clients
// verify what they are given against it.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import tls from 'node:tls';
import { createSecureServer, Http3SecureServer, SecureServerOptions } from '../../src';
import type { H3Client, RunnerResult } from '../helpers/clients/adapter';
import { aioquicClient } from '../helpers/clients/aioquic';
import { quicGoClient } from '../helpers/clients/quic-go';
import { ClientResult, runClient, runClients } from '../helpers/clients/h3client';
import { fileBytes, fileSha256 } from '../helpers/fixtures/runner-files';
import { MemoryLogger, startOnWorkers } from '../helpers/server';
import { Issued, TestCa } from '../helpers/test-ca';

const CLIENTS: H3Client[] = [aioquicClient(), quicGoClient()];

interface Running {
  server: Http3SecureServer;
  /** Gated downloads (`?gated`) waiting for the next swap. */
  largeInFlight: { count: number };
  port: number;
  logger: MemoryLogger;
  close(): Promise<void>;
}

/** GET /<n> answers n pattern bytes (with `?gated`, the second half only after the next /swap); GET /swap calls `onSwap`; GET /whoami the client certificate as req.socket reports it. */
async function start(options: SecureServerOptions, onSwap?: (server: Http3SecureServer) => void): Promise<Running> {
  const logger = new MemoryLogger();
  const largeInFlight = { count: 0 };
  const gates: (() => void)[] = [];
  const server: Http3SecureServer = createSecureServer({ warnDemoIdentity: false, logger, ...options }, (req, res) => {
    const socket = req.socket as unknown as tls.TLSSocket;
    if (req.url === '/whoami') {
      const cert = socket.getPeerCertificate(true);
      res.end(JSON.stringify({ authorized: socket.authorized, error: socket.authorizationError ?? null, cn: cert.subject?.CN ?? null, issuer: cert.issuer?.CN ?? null }));
      return;
    }
    if (req.url === '/swap') {
      onSwap?.(server);
      for (const open of gates.splice(0)) open();
    }
    const n = Number(/^\/(\d+)/.exec(req.url ?? '')?.[1] ?? 0);
    const body = fileBytes(n);
    res.writeHead(200, { 'content-length': String(n) });
    if (req.url?.endsWith('?gated')) {
      // Half now, the rest once the next swap is done: the download is
      // certainly running across it.
      largeInFlight.count++;
      res.write(body.subarray(0, n >> 1));
      gates.push(() => {
        largeInFlight.count--;
        res.end(body.subarray(n >> 1));
      });
      return;
    }
    res.end(body);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return { server, port, logger, largeInFlight, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** One connection of `client` asking for `sni`, verifying against `ca`. */
function fetchAs(client: H3Client, port: number, sni: string, ca: string, paths = ['/1024']): Promise<RunnerResult> {
  return client.runPlan!({ host: '127.0.0.1', port, sni, ca, timeout: 20, connections: [{ paths }] });
}

function presented(result: RunnerResult, what: string): string {
  const c = result.connections[0];
  assert.equal(c.error, null, `${what}: ${c.error}`);
  for (const r of result.responses) {
    const n = Number(/^\/(\d+)/.exec(r.path)?.[1] ?? 0);
    assert.equal(r.status, 200, `${what} ${r.path}: ${r.error}`);
    assert.equal(r.sha256, fileSha256(n), `${what} ${r.path}: the exact bytes`);
  }
  return c.peer_chain_sha256?.[0] ?? '(none)';
}

/** The certificate the TCP side presents for `servername`, verified against `ca`. */
function tcpPresents(port: number, servername: string, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port, servername, ca: fs.readFileSync(ca), ALPNProtocols: ['h2'] }, () => {
      const fp = socket.getPeerX509Certificate()!.fingerprint256.replace(/:/g, '').toLowerCase();
      socket.destroy();
      resolve(fp);
    });
    socket.once('error', reject);
  });
}

describe('identities by server name, renewals and client certificates (a test CA made by openssl)', function () {
  this.timeout(120_000);
  let ca: TestCa;
  let main: Issued;
  let renewed: Issued;
  let named: Issued;
  let wildcard: Issued;
  let asked: Issued;
  let client: Issued;
  let rogue: Issued;
  let expired: Issued;

  before(() => {
    ca = new TestCa();
    main = ca.issue('main', 'a.test', ['a.test', 'other.test']);
    renewed = ca.issue('renewed', 'a.test', ['a.test', 'other.test']);
    named = ca.issue('named', 'b.test', ['b.test']);
    wildcard = ca.issue('wildcard', '*.w.test', ['*.w.test']);
    asked = ca.issue('asked', 'cb.test', ['cb.test']);
    client = ca.issue('client', 'client one');
    rogue = ca.selfSigned('rogue', 'rogue client');
    expired = ca.issue('expired', 'a.test', ['a.test'], { start: '20200101000000Z', end: '20200201000000Z' });
  });

  after(() => ca?.remove());

  it('aioquic, quic-go and the TCP side each get the chain of the name they ask for: the default, a name in `identities`, a wildcard, SNICallback (asynchronous)', async () => {
    const s = await start({
      cert: main.cert,
      key: main.key,
      identities: { 'b.test': { cert: named.cert, key: named.key }, '*.w.test': tls.createSecureContext({ cert: fs.readFileSync(wildcard.cert), key: fs.readFileSync(wildcard.key) }) },
      SNICallback: (name, cb) => {
        if (name === 'cb.test') setTimeout(() => cb(null, tls.createSecureContext({ cert: fs.readFileSync(asked.cert), key: fs.readFileSync(asked.key) })), 20);
        else cb(null); // the default identity
      },
    });
    try {
      const cases: [string, Issued][] = [
        ['a.test', main],
        ['b.test', named],
        ['x.w.test', wildcard],
        ['cb.test', asked],
        ['other.test', main],
      ];
      for (const c of CLIENTS) {
        for (const [name, want] of cases) {
          assert.equal(presented(await fetchAs(c, s.port, name, ca.ca.cert), `${c.name} ${name}`), want.sha256, `${c.name} asking for ${name}`);
        }
      }
      for (const [name, want] of cases) assert.equal(await tcpPresents(s.port, name, ca.ca.cert), want.sha256, `TCP side, ${name}`);
    } finally {
      await s.close();
    }
  });

  it('an SNICallback that throws, answers an error, or answers an identity that does not parse fails that handshake only (one log line each); the server goes on', async () => {
    const s = await start({
      cert: main.cert,
      key: main.key,
      tcp: false,
      SNICallback: (name, cb) => {
        if (name === 'throws.test') throw new Error('no such tenant');
        if (name === 'error.test') return cb(new Error('lookup failed'));
        if (name === 'junk.test') return cb(null, { cert: 'not a pem', key: 'neither' });
        cb(null);
      },
    });
    try {
      for (const name of ['throws.test', 'error.test', 'junk.test']) {
        const r = await runClient(s.port, { timeout: 5, server_name: name, requests: [{ path: '/16' }] });
        assert.equal(r.connected, false, `${name}: the handshake fails`);
        assert.match(r.handshake_error ?? '', /0x128|handshake.failure|40/i, `${name}: a TLS alert (handshake_failure): ${r.handshake_error}`);
      }
      assert.equal(s.logger.lines.filter((l) => l.includes('SNICallback')).length, 3, s.logger.lines.join('\n'));
      assert.equal(presented(await fetchAs(CLIENTS[0], s.port, 'a.test', ca.ca.cert), 'after the failures'), main.sha256);
    } finally {
      await s.close();
    }
  });

  it('setSecureContext: a download running across the swap completes byte for byte, new handshakes (and the TCP side) get the new certificate, and a ticket from before resumes with 0-RTT', async () => {
    let swaps = 0;
    const downloadsAtSwap: number[] = [];
    const s: Running = await start({ cert: main.cert, key: main.key }, (server) => {
      downloadsAtSwap.push(s.largeInFlight.count);
      server.setSecureContext({ cert: renewed.cert, key: renewed.key });
      swaps++;
    });
    try {
      for (const c of CLIENTS) {
        s.server.setSecureContext({ cert: main.cert, key: main.key });
        // The swap comes from a request on a second connection while the
        // first downloads 8 MB.
        const download = fetchAs(c, s.port, 'a.test', ca.ca.cert, ['/8000000?gated']);
        const until = Date.now() + 5000;
        while (s.largeInFlight.count === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
        const swapper = await fetchAs(c, s.port, 'a.test', ca.ca.cert, ['/swap']);
        assert.equal(presented(swapper, `${c.name} swapper`), main.sha256);
        assert.equal(presented(await download, `${c.name} download across the swap`), main.sha256, 'the open connection kept its certificate');
        assert.equal(presented(await fetchAs(c, s.port, 'a.test', ca.ca.cert), `${c.name} after`), renewed.sha256);
      }
      assert.equal(await tcpPresents(s.port, 'a.test', ca.ca.cert), renewed.sha256, 'TCP side after the swap');
      // A session from before a swap resumes after it, with early data.
      s.server.setSecureContext({ cert: main.cert, key: main.key });
      const resumed = await CLIENTS[0].runPlan!({
        host: '127.0.0.1',
        port: s.port,
        sni: 'a.test',
        ca: ca.ca.cert,
        timeout: 20,
        connections: [{ paths: ['/swap'] }, { paths: ['/1024'], resume: true, early_data: true }],
      });
      assert.equal(resumed.connections[1].resumed, true, JSON.stringify(resumed.connections));
      assert.equal(resumed.connections[1].early_data_accepted, true, JSON.stringify(resumed.connections));
      assert.ok(swaps >= 3);
      assert.deepEqual(downloadsAtSwap.slice(0, 2), [1, 1], "each client's download was running when the swap came");
    } finally {
      await s.close();
    }
  });

  it("setSecureContext on a server of two workers: every worker's new handshakes get the new certificate", async () => {
    const { server, port } = await startOnWorkers({ workers: 2, app: 'compat', extra: { cert: main.cert, key: main.key, warnDemoIdentity: false } });
    try {
      const plan = { timeout: 10, server_name: 'a.test', ca: ca.ca.cert, requests: [{ path: '/' }] };
      const served = async () => {
        const results = await runClients(port, plan, 12);
        return results.map((r) => ({ fp: r.peer_chain_sha256[0], worker: /worker (\d)/.exec(r.responses[0]?.body_text ?? '')?.[1] }));
      };
      const before = await served();
      assert.ok(before.every((r) => r.fp === main.sha256), JSON.stringify(before));
      server.setSecureContext({ cert: renewed.cert, key: renewed.key });
      const after = await served();
      assert.ok(after.every((r) => r.fp === renewed.sha256), JSON.stringify(after));
      assert.deepEqual([...new Set(after.map((r) => r.worker))].sort(), ['0', '1'], 'both workers served');
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('client certificates: with rejectUnauthorized one from the CA is let in and named on req.socket, none or a rogue one is refused; without, both are let in as unauthorized', async () => {
    const whoami = (r: ClientResult) => JSON.parse(r.responses[0]?.body_text ?? 'null') as { authorized: boolean; error: string | null; cn: string | null };
    const strict = await start({ cert: main.cert, key: main.key, tcp: false, requestCert: true, ca: ca.ca.cert });
    try {
      const ok = await runClient(strict.port, { timeout: 5, server_name: 'a.test', client_cert: client.cert, client_key: client.key, requests: [{ path: '/whoami' }] });
      assert.deepEqual(whoami(ok), { authorized: true, error: null, cn: 'client one', issuer: ca.name });
      for (const [what, extra] of [
        ['no certificate', {}],
        ['a self-signed one', { client_cert: rogue.cert, client_key: rogue.key }],
      ] as const) {
        const r = await runClient(strict.port, { timeout: 5, server_name: 'a.test', ...extra, requests: [{ path: '/whoami' }] });
        assert.notEqual(r.responses[0]?.status, 200, `${what}: refused`);
      }
      assert.equal(strict.server.counters()!.handshakeFailures >= 2, true, 'the refused handshakes count as failed');
    } finally {
      await strict.close();
    }
    const lax = await start({ cert: main.cert, key: main.key, tcp: false, requestCert: true, rejectUnauthorized: false, ca: ca.ca.cert });
    try {
      const none = await runClient(lax.port, { timeout: 5, server_name: 'a.test', requests: [{ path: '/whoami' }] });
      assert.deepEqual(whoami(none), { authorized: false, error: 'UNABLE_TO_GET_ISSUER_CERT', cn: null, issuer: null });
      const self = await runClient(lax.port, { timeout: 5, server_name: 'a.test', client_cert: rogue.cert, client_key: rogue.key, requests: [{ path: '/whoami' }] });
      assert.deepEqual(whoami(self), { authorized: false, error: 'DEPTH_ZERO_SELF_SIGNED_CERT', cn: 'rogue client', issuer: 'rogue client' });
    } finally {
      await lax.close();
    }
  });

  it('bad input names the option, at createSecureServer and at setSecureContext, and the running identity stays', async () => {
    const encrypted = ca.encryptKey(main.key, 'open sesame');
    const bad: [string, SecureServerOptions, RegExp][] = [
      ['a key that is not the certificate\'s', { cert: main.cert, key: named.key }, /`key` does not match `cert`/],
      ['an unreadable certificate file', { cert: `${ca.dir}/missing.pem`, key: main.key }, /cannot read `cert`.*missing\.pem: ENOENT/],
      ['a certificate that is not PEM', { cert: Buffer.from('-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n'), key: main.key }, /`cert` is not a PEM X\.509 certificate/],
      ['an encrypted key without its passphrase', { cert: main.cert, key: encrypted }, /`key` .*is encrypted: pass its `passphrase`/],
      ['the wrong passphrase', { cert: main.cert, key: encrypted, passphrase: 'wrong' }, /`passphrase` does not decrypt `key`/],
      ['an expired certificate', { cert: expired.cert, key: expired.key }, /`cert` .*expired on Feb {2}1 00:00:00 2020 GMT/],
      ['a name that is not one in `identities`', { cert: main.cert, key: main.key, identities: { 'a.*.test': { cert: named.cert, key: named.key } } }, /`identities` key "a\.\*\.test" is not a server name/],
      ['a bad identity in `identities`', { cert: main.cert, key: main.key, identities: { 'b.test': { cert: named.cert, key: main.key } } }, /`identities\["b\.test"\]\.key` does not match/],
      ['a `ca` without certificates', { cert: main.cert, key: main.key, requestCert: true, ca: 'junk' }, /`ca`/],
    ];
    for (const [what, options, message] of bad) {
      assert.throws(() => createSecureServer({ tcp: false, ...options }), (e: Error) => message.test(e.message) && e.message.startsWith('createSecureServer: '), what);
    }
    // The passphrase, given, works.
    const withPassphrase = await start({ cert: main.cert, key: encrypted, passphrase: 'open sesame', tcp: false });
    await withPassphrase.close();
    const s = await start({ cert: main.cert, key: main.key });
    try {
      for (const [what, options, message] of bad.filter(([, o]) => o.identities === undefined && o.requestCert === undefined)) {
        assert.throws(() => s.server.setSecureContext(options), (e: Error) => message.test(e.message) && e.message.startsWith('setSecureContext: '), what);
      }
      assert.equal(presented(await fetchAs(CLIENTS[0], s.port, 'a.test', ca.ca.cert), 'after the refused swaps'), main.sha256);
      assert.equal(await tcpPresents(s.port, 'a.test', ca.ca.cert), main.sha256);
      // With its passphrase, an encrypted key swaps in.
      s.server.setSecureContext({ cert: renewed.cert, key: ca.encryptKey(renewed.key, 'pw'), passphrase: 'pw' });
      assert.equal(presented(await fetchAs(CLIENTS[1], s.port, 'a.test', ca.ca.cert), 'after the swap'), renewed.sha256);
    } finally {
      await s.close();
    }
  });
});
