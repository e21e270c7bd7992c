// An HTTP/3 server that gets its certificate from an ACME CA (Let's
// Encrypt, or its test server Pebble) and renews it while it runs: the
// certificate goes in with server.setSecureContext(), so no connection is
// dropped for a renewal. The ACME side is acme-client from npm; the HTTP-01
// challenge is answered over plain HTTP (port 80 for a real CA), as the
// challenge requires. Until the first certificate arrives the server
// answers with the public demo identity, which no client trusts.
//
// Run against Let's Encrypt's staging CA (README, "Certificates from an
// ACME CA"): DOMAIN=example.com EMAIL=you@example.com node --import tsx examples/acme/acme.ts
import http from 'node:http';
import https from 'node:https';
import acme from 'acme-client';
import { createSecureServer, Http3SecureServer, Logger, stderrLogger } from '../../src/index';

export interface AcmeServerOptions {
  /** The name to get a certificate for; it must resolve to this machine for the CA. */
  domain: string;
  /** The ACME directory (default: Let's Encrypt's staging CA). */
  directoryUrl?: string;
  email?: string;
  /** Where HTTP-01 challenges are answered (default 80: the only port a real CA asks on). */
  challengePort?: number;
  /** The HTTP/3 (and TCP) port (default 443). */
  port?: number;
  host?: string;
  /** Extra CA certificates to trust for the ACME server itself (Pebble's test certificate). */
  acmeServerCa?: Buffer;
  /** Skip acme-client's own check that the challenge is reachable before asking the CA (a test's fake DNS). */
  skipChallengeVerification?: boolean;
  /** Renew once the certificate has fewer days left than this (default 30, as Let's Encrypt advises). */
  renewDaysBefore?: number;
  logger?: Logger;
}

export interface AcmeServer {
  server: Http3SecureServer;
  port: number;
  /** Orders a certificate now and installs it; resolves with its PEM chain. Renewal is the same call. */
  obtain(): Promise<string>;
  close(): Promise<void>;
}

export const LETS_ENCRYPT_STAGING = 'https://acme-staging-v02.api.letsencrypt.org/directory';
export const LETS_ENCRYPT = 'https://acme-v02.api.letsencrypt.org/directory';

export async function startAcmeServer(o: AcmeServerOptions): Promise<AcmeServer> {
  const logger = o.logger ?? stderrLogger;
  if (o.acmeServerCa) acme.axios.defaults.httpsAgent = new https.Agent({ ca: o.acmeServerCa });
  const client = new acme.Client({ directoryUrl: o.directoryUrl ?? LETS_ENCRYPT_STAGING, accountKey: await acme.crypto.createPrivateEcdsaKey() });

  // HTTP-01: the CA fetches http://<domain>/.well-known/acme-challenge/<token>.
  const tokens = new Map<string, string>();
  const challenges = http.createServer((req, res) => {
    const token = /^\/\.well-known\/acme-challenge\/([\w-]+)$/.exec(req.url ?? '')?.[1];
    const answer = token === undefined ? undefined : tokens.get(token);
    if (answer === undefined) return res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'text/plain' }).end(answer);
  });
  await new Promise<void>((resolve, reject) => {
    challenges.once('error', reject);
    challenges.listen(o.challengePort ?? 80, o.host, () => resolve());
  });

  const server = createSecureServer({ warnDemoIdentity: false, logger }, (req, res) => {
    res.end(`hello from ${o.domain} over ${req.httpVersion === '3' ? 'HTTP/3' : `HTTP/${req.httpVersion}`}\n`);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port ?? 443, o.host ?? '::', () => resolve());
  });
  const port = (server.address() as { port: number }).port;

  let expires = 0;
  const obtain = async (): Promise<string> => {
    const key = await acme.crypto.createPrivateEcdsaKey();
    const [, csr] = await acme.crypto.createCsr({ commonName: o.domain, altNames: [o.domain] }, key);
    const cert = await client.auto({
      csr,
      email: o.email,
      termsOfServiceAgreed: true,
      challengePriority: ['http-01'],
      skipChallengeVerification: o.skipChallengeVerification ?? false,
      challengeCreateFn: async (_authz, challenge, keyAuthorization) => {
        tokens.set(challenge.token, keyAuthorization);
      },
      challengeRemoveFn: async (_authz, challenge) => {
        tokens.delete(challenge.token);
      },
    });
    // New handshakes get it; connections already open keep theirs.
    server.setSecureContext({ cert, key });
    expires = Date.parse(acme.crypto.readCertificateInfo(cert).notAfter.toISOString());
    logger.info(`acme: certificate for ${o.domain} installed, valid until ${new Date(expires).toISOString()}`);
    return cert;
  };

  // Renewal: checked twice a day; a failure is retried at the next check.
  const renewBefore = (o.renewDaysBefore ?? 30) * 86_400_000;
  const timer = setInterval(() => {
    if (expires - Date.now() < renewBefore) obtain().catch((e: Error) => logger.warn(`acme: renewal failed: ${e.message}`));
  }, 12 * 3_600_000);
  timer.unref();

  return {
    server,
    port,
    obtain,
    close: async () => {
      clearInterval(timer);
      await new Promise<void>((resolve) => challenges.close(() => resolve()));
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

if (require.main === module) {
  const domain = process.env.DOMAIN;
  if (!domain) {
    console.error('usage: DOMAIN=example.com [EMAIL=you@example.com] [ACME_DIRECTORY=url] node --import tsx examples/acme/acme.ts');
    process.exit(2);
  }
  startAcmeServer({ domain, email: process.env.EMAIL, directoryUrl: process.env.ACME_DIRECTORY }).then(
    (s) => s.obtain().then(() => console.log(`serving https://${domain}:${s.port}/ over HTTP/3 and TCP`)),
    (e: Error) => {
      console.error(e.message);
      process.exit(1);
    },
  );
}
