// node:http2's createSecureServer takes `cert` and `key` as PEM text
// (strings or Buffers); this library also takes file paths, as the rest of
// it does. Node reads and checks the pair at construction (so a bad key
// throws there, as with node:http2), decrypts a passphrase-protected key in
// memory, and hands the native core the bytes (identity.ts, KeyMaterial).
// Nothing here writes a file: the key lives in this process's memory only.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { DEMO_CERT, DEMO_KEY, KeyMaterial, keyMaterial } from '../identity';

export type PemInput = string | Buffer | readonly (string | Buffer)[];

export interface TlsInput {
  cert?: PemInput;
  key?: PemInput;
  /** Decrypts an encrypted PEM key (in memory). */
  passphrase?: string;
}

interface Source {
  /** The caller's path, when given as one. */
  path?: string;
  pem: Buffer;
}

export class TlsMaterial {
  readonly isDemo: boolean;
  /** What the core is handed. */
  readonly core: KeyMaterial;
  readonly #certPem: Buffer;
  readonly #key: crypto.KeyObject;

  constructor(input: TlsInput) {
    if ((input.cert === undefined) !== (input.key === undefined)) {
      throw new TypeError('createSecureServer: pass both `cert` and `key` (or neither, for the demo identity)');
    }
    if (input.passphrase !== undefined && typeof input.passphrase !== 'string') {
      throw new TypeError(`createSecureServer: \`passphrase\` must be a string, got ${typeof input.passphrase}`);
    }
    this.isDemo = input.cert === undefined;
    const cert = this.isDemo ? fromPath(DEMO_CERT, 'certificate') : source(input.cert!, 'cert');
    const key = this.isDemo ? fromPath(DEMO_KEY, 'private key') : source(input.key!, 'key');
    let x509: crypto.X509Certificate;
    try {
      x509 = new crypto.X509Certificate(cert.pem);
    } catch {
      throw new Error(`createSecureServer: \`cert\`${where(cert)} is not a PEM X.509 certificate`);
    }
    this.#key = privateKey(key, input.passphrase);
    if (!x509.checkPrivateKey(this.#key)) {
      throw new Error('createSecureServer: `key` does not match `cert`');
    }
    this.#certPem = cert.pem;
    this.core = keyMaterial(cert.pem, this.#key);
  }

  /** PEM for node:tls on the TCP side (the key decrypted, as the core has it). */
  pems(): { cert: Buffer; key: Buffer } {
    return { cert: this.#certPem, key: Buffer.from(this.#key.export({ type: 'pkcs8', format: 'pem' }) as string) };
  }
}

/** The key, decrypted with `passphrase` when it is encrypted; errors name the option at fault. */
function privateKey(key: Source, passphrase: string | undefined): crypto.KeyObject {
  try {
    return crypto.createPrivateKey({ key: key.pem, passphrase });
  } catch (e) {
    const encrypted = /-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type: *4, *ENCRYPTED/.test(key.pem.toString('latin1'));
    if (encrypted && passphrase === undefined) {
      throw new Error(`createSecureServer: \`key\`${where(key)} is encrypted: pass its \`passphrase\``);
    }
    if (encrypted) {
      throw new Error(`createSecureServer: \`passphrase\` does not decrypt \`key\`${where(key)}`);
    }
    throw new Error(`createSecureServer: \`key\`${where(key)} is not a usable PEM private key (${(e as Error).message})`);
  }
}

function source(input: PemInput, what: 'cert' | 'key'): Source {
  let one: string | Buffer;
  if (Array.isArray(input)) {
    if (input.length !== 1) throw new TypeError(`createSecureServer: \`${what}\` must be one PEM value or path`);
    one = input[0];
  } else {
    one = input as string | Buffer;
  }
  if (Buffer.isBuffer(one)) return { pem: one };
  if (typeof one !== 'string') throw new TypeError(`createSecureServer: \`${what}\` must be a PEM string, a Buffer or a file path`);
  if (one.includes('-----BEGIN ')) return { pem: Buffer.from(one) };
  return fromPath(one, what === 'cert' ? 'certificate' : 'private key');
}

function fromPath(p: string, what: string): Source {
  try {
    return { path: path.resolve(p), pem: fs.readFileSync(p) };
  } catch (e) {
    throw new Error(`cannot read ${what} ${p}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
  }
}

function where(s: Source): string {
  return s.path === undefined ? '' : ` (${s.path})`;
}
