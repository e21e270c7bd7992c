// node:http2's createSecureServer takes `cert` and `key` as PEM text
// (strings or Buffers); the native core loads them from files. This module
// accepts both forms (PEM text, or a file path as the rest of the library
// takes), checks the pair in memory at construction (so a bad key throws
// there, as with node:http2), and when the core needs files that do not
// exist, writes them into a private temporary directory (0700, files 0600)
// for as long as the server listens.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DEMO_CERT, DEMO_KEY } from '../identity';

export type PemInput = string | Buffer | readonly (string | Buffer)[];

export interface TlsInput {
  cert?: PemInput;
  key?: PemInput;
  /** Decrypts an encrypted PEM key (it is written to the temporary file decrypted). */
  passphrase?: string;
}

interface Source {
  /** The caller's path, when given as one. */
  path?: string;
  pem: Buffer;
}

export class TlsFiles {
  readonly isDemo: boolean;
  readonly #cert: Source;
  readonly #key: Source;
  /** The key as the core must read it: the caller's bytes, or decrypted. */
  readonly #keyPem: Buffer;
  /** The caller's key file, when the core can read it as it is (not encrypted). */
  readonly #keyPath: string | undefined;
  #dir: string | undefined;

  constructor(input: TlsInput) {
    if ((input.cert === undefined) !== (input.key === undefined)) {
      throw new TypeError('createSecureServer: pass both `cert` and `key` (or neither, for the demo identity)');
    }
    this.isDemo = input.cert === undefined;
    this.#cert = this.isDemo ? fromPath(DEMO_CERT, 'certificate') : source(input.cert!, 'cert');
    this.#key = this.isDemo ? fromPath(DEMO_KEY, 'private key') : source(input.key!, 'key');
    let cert: crypto.X509Certificate;
    try {
      cert = new crypto.X509Certificate(this.#cert.pem);
    } catch {
      throw new Error(`createSecureServer: \`cert\`${where(this.#cert)} is not a PEM X.509 certificate`);
    }
    let key: crypto.KeyObject;
    try {
      key = crypto.createPrivateKey({ key: this.#key.pem, passphrase: input.passphrase });
    } catch (e) {
      throw new Error(`createSecureServer: \`key\`${where(this.#key)} is not a usable PEM private key (${(e as Error).message})`);
    }
    if (!cert.checkPrivateKey(key)) {
      throw new Error('createSecureServer: `key` does not match `cert`');
    }
    this.#keyPem =
      input.passphrase === undefined ? this.#key.pem : Buffer.from(key.export({ type: 'pkcs8', format: 'pem' }) as string);
    this.#keyPath = input.passphrase === undefined ? this.#key.path : undefined;
  }

  /** File paths for the core, writing temporary files if needed. Call dispose() when the server stops. */
  paths(): { certPath: string; keyPath: string } {
    if (this.#cert.path !== undefined && this.#keyPath !== undefined) {
      return { certPath: this.#cert.path, keyPath: this.#keyPath };
    }
    if (this.#dir === undefined) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3-node-tls-'));
      fs.chmodSync(dir, 0o700);
      liveDirs.add(dir);
      hookExit();
      this.#dir = dir;
      fs.writeFileSync(path.join(dir, 'cert.pem'), this.#cert.pem, { mode: 0o600 });
      fs.writeFileSync(path.join(dir, 'key.pem'), this.#keyPem, { mode: 0o600 });
    }
    return {
      certPath: this.#cert.path ?? path.join(this.#dir, 'cert.pem'),
      keyPath: this.#keyPath ?? path.join(this.#dir, 'key.pem'),
    };
  }

  /** The PEM contents (the TCP side's TLS takes them as they are). */
  pems(): { cert: Buffer; key: Buffer } {
    return { cert: this.#cert.pem, key: this.#keyPem };
  }

  /** Removes the temporary files, if any. */
  dispose(): void {
    const dir = this.#dir;
    if (dir === undefined) return;
    this.#dir = undefined;
    liveDirs.delete(dir);
    fs.rmSync(dir, { recursive: true, force: true });
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

// A process that exits without closing its server still removes the key copy.
const liveDirs = new Set<string>();
let exitHooked = false;
function hookExit(): void {
  if (exitHooked) return;
  exitHooked = true;
  process.on('exit', () => {
    for (const dir of liveDirs) fs.rmSync(dir, { recursive: true, force: true });
  });
}
