// The TLS identity: the demo certificate in certs/ unless the caller names
// its own, and the SPKI hash Chromium's --ignore-certificate-errors-spki-list
// takes. Node reads and checks the files; the core gets the bytes (in
// memory only: README, "Where key material lives").
import crypto from 'node:crypto';
import type { KeyObject, X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { packageRoot } from '../native/binding';

export const DEMO_CERT = path.join(packageRoot, 'certs', 'demo-cert.pem');
export const DEMO_KEY = path.join(packageRoot, 'certs', 'demo-key.pem');

/**
 * What the native core is handed: the certificate chain as PEM (leaf first)
 * and the private key as PKCS#8 DER, decrypted. Both stay in memory; the core
 * parses them into BoringSSL's objects and never writes them anywhere.
 */
export interface KeyMaterial {
  certChain: Buffer;
  privateKey: Buffer;
}

/** The material for a checked certificate and key. */
export function keyMaterial(certChainPem: Buffer, key: KeyObject): KeyMaterial {
  return { certChain: certChainPem, privateKey: key.export({ type: 'pkcs8', format: 'der' }) };
}

export interface Identity {
  certPath: string;
  keyPath: string;
  /** base64 SHA-256 of the certificate's SubjectPublicKeyInfo. */
  spkiSha256: string;
  isDemo: boolean;
}

/** Reads and checks the identity; throws an Error with a one-line message. */
export function loadIdentity(certPath = DEMO_CERT, keyPath = DEMO_KEY): Identity {
  return readIdentity(certPath, keyPath).identity;
}

/** loadIdentity, with the material the core is handed (read by Node, never copied to a file). */
export function readIdentity(certPath = DEMO_CERT, keyPath = DEMO_KEY): { identity: Identity; material: KeyMaterial } {
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
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ERR_MISSING_PASSPHRASE') {
      throw new Error(`private key ${keyPath} is encrypted; createServer takes no passphrase (createSecureServer's \`passphrase\` does)`);
    }
    throw new Error(`private key ${keyPath} is not a PEM private key`);
  }
  if (!cert.checkPrivateKey(key)) {
    throw new Error(`private key ${keyPath} does not match certificate ${certPath}`);
  }
  const identity = {
    certPath: path.resolve(certPath),
    keyPath: path.resolve(keyPath),
    spkiSha256: spkiSha256(cert),
    isDemo: path.resolve(certPath) === DEMO_CERT,
  };
  return { identity, material: keyMaterial(certPem, key) };
}

/** base64 SHA-256 of a certificate's SubjectPublicKeyInfo (Chromium's --ignore-certificate-errors-spki-list). */
export function spkiSha256(cert: X509Certificate): string {
  const spki = cert.publicKey.export({ type: 'spki', format: 'der' });
  return crypto.createHash('sha256').update(spki).digest('base64');
}

/** What the library and the CLI say when the public demo identity serves (README: "The demo identity"). */
export const DEMO_IDENTITY_WARNING = 'WARNING: demo identity in use; its private key is public. Never use it in production.';
