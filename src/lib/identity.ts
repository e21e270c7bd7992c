// The TLS identity: the demo certificate in certs/ unless the caller names
// its own, and the SPKI hash Chromium's --ignore-certificate-errors-spki-list
// takes.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { packageRoot } from '../native/binding';

export const DEMO_CERT = path.join(packageRoot, 'certs', 'demo-cert.pem');
export const DEMO_KEY = path.join(packageRoot, 'certs', 'demo-key.pem');

export interface Identity {
  certPath: string;
  keyPath: string;
  /** base64 SHA-256 of the certificate's SubjectPublicKeyInfo. */
  spkiSha256: string;
  isDemo: boolean;
}

/** Reads and checks the identity; throws an Error with a one-line message. */
export function loadIdentity(certPath = DEMO_CERT, keyPath = DEMO_KEY): Identity {
  const read = (p: string, what: string) => {
    try {
      return fs.readFileSync(p);
    } catch (e) {
      throw new Error(`cannot read ${what} ${p}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
    }
  };
  const certPem = read(certPath, 'certificate');
  const keyPem = read(keyPath, 'private key');
  let cert: crypto.X509Certificate;
  try {
    cert = new crypto.X509Certificate(certPem);
  } catch {
    throw new Error(`certificate ${certPath} is not a PEM X.509 certificate`);
  }
  let key: crypto.KeyObject;
  try {
    key = crypto.createPrivateKey(keyPem);
  } catch {
    throw new Error(`private key ${keyPath} is not a PEM private key`);
  }
  if (!cert.checkPrivateKey(key)) {
    throw new Error(`private key ${keyPath} does not match certificate ${certPath}`);
  }
  const spki = cert.publicKey.export({ type: 'spki', format: 'der' });
  return {
    certPath: path.resolve(certPath),
    keyPath: path.resolve(keyPath),
    spkiSha256: crypto.createHash('sha256').update(spki).digest('base64'),
    isDemo: path.resolve(certPath) === DEMO_CERT,
  };
}

/** What the library and the CLI say when the public demo identity serves (README: "The demo identity"). */
export const DEMO_IDENTITY_WARNING = 'WARNING: demo identity in use; its private key is public. Never use it in production.';
