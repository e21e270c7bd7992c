// The TLS options of createSecureServer and setSecureContext, in node:tls's
// shapes, checked by Node when they are given (a bad key throws there, as
// with node:http2) and handed on twice: to the native core as bytes (a PEM
// chain and a PKCS#8 DER key per identity: identity.ts, KeyMaterial) and to
// node:tls for the TCP side. `cert` and `key` are PEM text (strings or
// Buffers) or, as elsewhere in this library, file paths. Nothing here
// writes a file: keys live in this process's memory only.
//
// Identities: the default one (`cert`/`key`, or the public demo identity
// when no TLS option names any), `identities` (server names, `*.`
// wildcards for one label, each with its own), and `SNICallback` for the
// names the table does not know. Client certificates: `requestCert`,
// `ca`, `rejectUnauthorized`.
import * as crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { createSecureContext } from 'node:tls';
import type { SecureContext, TlsOptions } from 'node:tls';
import { addon, NativeIdentity } from '../../native/binding';
import { DEMO_CERT, DEMO_KEY, KeyMaterial, keyMaterial } from '../identity';
import type { TlsChoices } from '../stream-server';
import { isSecureContext, secureContextOptions } from './secure-contexts';

export type PemInput = string | Buffer | readonly (string | Buffer)[];

/** One identity: a certificate chain and its key. */
export interface IdentityInput {
  cert: PemInput;
  key: PemInput;
  passphrase?: string;
}

/** What an SNICallback may answer: a tls.SecureContext (from tls.createSecureContext) or the identity itself. */
export type SniContext = SecureContext | IdentityInput;
export type SniCallback = (servername: string, callback: (err: Error | null, context?: SniContext | null) => void) => void;

export interface TlsInput {
  cert?: PemInput;
  key?: PemInput;
  /** Decrypts an encrypted PEM key (in memory). */
  passphrase?: string;
  /**
   * Server names with identities of their own (host names, or `*.` and a
   * host name for any one label there), chosen by the client's SNI before
   * `SNICallback` is asked; on the TCP side too.
   */
  identities?: Record<string, SniContext>;
  /** node:tls's: the identity for a server name the table does not know (on HTTP/3 and TCP). */
  SNICallback?: SniCallback;
  /** Ask every client for a certificate (node:tls's `requestCert`). */
  requestCert?: boolean;
  /** With `requestCert`: refuse clients without a certificate `ca` verifies (default true, as node:tls). */
  rejectUnauthorized?: boolean;
  /** The CAs client certificates must chain to: PEM text or file paths. */
  ca?: PemInput;
}

interface Source {
  /** The caller's path, when given as one. */
  path?: string;
  pem: Buffer;
}

/** One parsed identity: what the core and node:tls are given. */
interface Parsed {
  material: KeyMaterial;
  pems: { cert: Buffer; key: Buffer };
}

export class TlsMaterial {
  readonly isDemo: boolean;
  /** The default identity for the core (absent: a name nothing matches fails its handshake). */
  readonly core: Partial<KeyMaterial>;
  /** The rest of what the core is told. */
  readonly choices: TlsChoices;
  readonly #default: Parsed | undefined;
  readonly #names: Map<string, Parsed>;
  readonly #ca: Buffer | undefined;
  readonly #input: TlsInput;
  #nativeDefault: NativeIdentity | undefined;

  /** `by`: who is checking, for the errors ("createSecureServer", "setSecureContext"). */
  constructor(input: TlsInput, by = 'createSecureServer') {
    this.#input = input;
    if ((input.cert === undefined) !== (input.key === undefined)) {
      throw new TypeError(`${by}: pass both \`cert\` and \`key\` (or neither, for the demo identity)`);
    }
    if (input.passphrase !== undefined && typeof input.passphrase !== 'string') {
      throw new TypeError(`${by}: \`passphrase\` must be a string, got ${typeof input.passphrase}`);
    }
    if (input.SNICallback !== undefined && typeof input.SNICallback !== 'function') {
      throw new TypeError(`${by}: \`SNICallback\` must be a function, got ${typeof input.SNICallback}`);
    }
    if (input.identities !== undefined && (typeof input.identities !== 'object' || input.identities === null)) {
      throw new TypeError(`${by}: \`identities\` must be an object mapping server names to { cert, key } or tls.SecureContext`);
    }
    const named = Object.keys(input.identities ?? {}).length > 0 || input.SNICallback !== undefined;
    // The demo identity only where no TLS option names any identity.
    this.isDemo = input.cert === undefined && !named;
    if (input.cert !== undefined) {
      this.#default = parseIdentity({ cert: input.cert, key: input.key!, passphrase: input.passphrase }, by, '');
    } else if (this.isDemo) {
      this.#default = parseIdentity({ cert: DEMO_CERT, key: DEMO_KEY }, by, '');
    }
    this.#names = new Map();
    for (const [name, context] of Object.entries(input.identities ?? {})) {
      const where = `identities[${JSON.stringify(name)}].`;
      if (!/^(\*\.)?[a-z0-9-]+(\.[a-z0-9-]+)*$/i.test(name)) {
        throw new TypeError(`${by}: \`identities\` key ${JSON.stringify(name)} is not a server name (a host name, or *. and a host name)`);
      }
      this.#names.set(name.toLowerCase(), parseContext(context, by, where));
    }
    this.#ca = input.ca === undefined ? undefined : pemList(input.ca, by, 'ca');
    if (this.#ca) checkCertificates(this.#ca, by, 'ca');
    if (input.requestCert !== undefined && typeof input.requestCert !== 'boolean') {
      throw new TypeError(`${by}: \`requestCert\` must be a boolean`);
    }
    this.core = this.#default ? this.#default.material : {};
    const names = [...this.#names.entries()];
    this.choices = {
      names: names.map(([n]) => n),
      nameCertChains: names.map(([, p]) => p.material.certChain),
      namePrivateKeys: names.map(([, p]) => p.material.privateKey),
      askApplication: input.SNICallback !== undefined,
      requestCert: input.requestCert ?? false,
      ca: this.#ca,
      rejectUnauthorized: input.rejectUnauthorized ?? true,
    };
  }

  /** The input, for setSecureContext to build on. */
  get input(): TlsInput {
    return this.#input;
  }

  /** PEM for node:tls on the TCP side (the default identity's key decrypted, as the core has it). */
  pems(): { cert: Buffer; key: Buffer } | undefined {
    return this.#default?.pems;
  }

  /** node:tls's options for the TCP side: the default identity, the names and SNICallback, client certificates. */
  tcpOptions(): TlsOptions {
    const names = new Map([...this.#names].map(([n, p]) => [n, createSecureContext(p.pems)]));
    const user = this.#input.SNICallback;
    const out: TlsOptions = { ...this.pems() };
    if (names.size > 0 || user) {
      out.SNICallback = (servername, cb) => {
        const found = lookup(names, servername);
        if (found) return cb(null, found);
        if (!user) return cb(null, undefined);
        user(servername, (err, context) => {
          if (err || !context) return cb(err, undefined);
          try {
            cb(null, isSecureContext(context) ? context : createSecureContext(parseContext(context, 'SNICallback', '').pems));
          } catch (e) {
            cb(e as Error, undefined);
          }
        });
      };
    }
    if (this.choices.requestCert) {
      out.requestCert = true;
      out.rejectUnauthorized = this.choices.rejectUnauthorized;
      if (this.#ca) out.ca = this.#ca;
    }
    return out;
  }

  /** The core's handle for an SNICallback's answer (undefined or null: the default identity, if any). */
  nativeIdentity(context: SniContext | null | undefined): NativeIdentity | null {
    if (context === undefined || context === null) {
      if (!this.#default) return null;
      this.#nativeDefault ??= native(this.#default);
      return this.#nativeDefault;
    }
    let made = answerCache.get(context);
    if (!made) {
      made = native(parseContext(context, 'SNICallback', ''));
      answerCache.set(context, made);
    }
    return made;
  }
}

/** Parsed answers, so an SNICallback that hands back the same context each time costs one parse. */
const answerCache = new WeakMap<object, NativeIdentity>();

function native(p: Parsed): NativeIdentity {
  return new (addon().NativeIdentity)(p.material.certChain, p.material.privateKey);
}

/** `identities` lookup with the core's rules: exact, then `*.` one label up. */
function lookup<T>(names: Map<string, T>, servername: string): T | undefined {
  const name = servername.toLowerCase();
  const exact = names.get(name);
  if (exact) return exact;
  const dot = name.indexOf('.');
  return dot > 0 ? names.get(`*${name.slice(dot)}`) : undefined;
}

/** A { cert, key } or a tls.SecureContext (through the options it was made from). */
function parseContext(context: SniContext, by: string, where: string): Parsed {
  if (isSecureContext(context)) {
    const options = secureContextOptions(context);
    if (!options) {
      throw new TypeError(`${by}: ${where || 'the '}tls.SecureContext was made before h3-node was loaded, so its key is out of reach; make it after, or pass { cert, key }`);
    }
    if (options.pfx !== undefined) throw new TypeError(`${by}: ${where}a tls.SecureContext made from \`pfx\` is not supported; pass { cert, key }`);
    const key = options.key;
    const keyPem = Array.isArray(key) ? key : key === undefined ? undefined : [key];
    const first = keyPem?.[0] as string | Buffer | { pem: string | Buffer; passphrase?: string } | undefined;
    const pem = first !== undefined && typeof first === 'object' && !Buffer.isBuffer(first) ? first.pem : first;
    const passphrase = first !== undefined && typeof first === 'object' && !Buffer.isBuffer(first) ? first.passphrase : undefined;
    if (options.cert === undefined || pem === undefined) throw new TypeError(`${by}: ${where}the tls.SecureContext has no \`cert\` and \`key\``);
    return parseIdentity({ cert: options.cert as PemInput, key: pem, passphrase: passphrase ?? options.passphrase }, by, where);
  }
  if (typeof context !== 'object' || context === null || !('cert' in context) || !('key' in context)) {
    throw new TypeError(`${by}: ${where}must be { cert, key } or a tls.SecureContext`);
  }
  return parseIdentity(context, by, where);
}

function parseIdentity(input: IdentityInput, by: string, where: string): Parsed {
  const cert = source(input.cert, by, `${where}cert`, 'certificate');
  const key = source(input.key, by, `${where}key`, 'private key');
  let x509: crypto.X509Certificate;
  try {
    x509 = new crypto.X509Certificate(cert.pem);
  } catch {
    throw new Error(`${by}: \`${where}cert\`${at(cert)} is not a PEM X.509 certificate`);
  }
  const now = Date.now();
  if (Date.parse(x509.validTo) < now) throw new Error(`${by}: \`${where}cert\`${at(cert)} expired on ${x509.validTo}`);
  if (Date.parse(x509.validFrom) > now) throw new Error(`${by}: \`${where}cert\`${at(cert)} is not valid before ${x509.validFrom}`);
  const keyObject = privateKey(key, input.passphrase, by, where);
  if (!x509.checkPrivateKey(keyObject)) throw new Error(`${by}: \`${where}key\` does not match \`${where}cert\``);
  return {
    material: keyMaterial(cert.pem, keyObject),
    pems: { cert: cert.pem, key: Buffer.from(keyObject.export({ type: 'pkcs8', format: 'pem' }) as string) },
  };
}

/** The key, decrypted with `passphrase` when it is encrypted; errors name the option at fault. */
function privateKey(key: Source, passphrase: string | undefined, by: string, where: string): crypto.KeyObject {
  try {
    return crypto.createPrivateKey({ key: key.pem, passphrase });
  } catch (e) {
    const encrypted = /-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type: *4, *ENCRYPTED/.test(key.pem.toString('latin1'));
    if (encrypted && passphrase === undefined) throw new Error(`${by}: \`${where}key\`${at(key)} is encrypted: pass its \`${where}passphrase\``);
    if (encrypted) throw new Error(`${by}: \`${where}passphrase\` does not decrypt \`${where}key\`${at(key)}`);
    throw new Error(`${by}: \`${where}key\`${at(key)} is not a usable PEM private key (${(e as Error).message})`);
  }
}

function source(input: PemInput, by: string, option: string, what: string): Source {
  let one: string | Buffer;
  if (Array.isArray(input)) {
    if (input.length !== 1) throw new TypeError(`${by}: \`${option}\` must be one PEM value or path`);
    one = input[0];
  } else {
    one = input as string | Buffer;
  }
  if (Buffer.isBuffer(one)) return { pem: one };
  if (typeof one !== 'string') throw new TypeError(`${by}: \`${option}\` must be a PEM string, a Buffer or a file path`);
  if (one.includes('-----BEGIN ')) return { pem: Buffer.from(one) };
  return fromPath(one, by, option, what);
}

/** Several PEM values (or paths) as one PEM buffer. */
function pemList(input: PemInput, by: string, option: string): Buffer {
  const all = Array.isArray(input) ? input : [input as string | Buffer];
  return Buffer.concat(all.map((one) => Buffer.concat([source(one, by, option, 'CA certificate').pem, Buffer.from('\n')])));
}

function checkCertificates(pem: Buffer, by: string, option: string): void {
  const blocks = pem.toString('latin1').match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) throw new Error(`${by}: \`${option}\` holds no PEM certificate`);
  for (const b of blocks) {
    try {
      new crypto.X509Certificate(b);
    } catch {
      throw new Error(`${by}: \`${option}\` holds a certificate that does not parse`);
    }
  }
}

function fromPath(p: string, by: string, option: string, what: string): Source {
  try {
    return { path: path.resolve(p), pem: fs.readFileSync(p) };
  } catch (e) {
    throw new Error(`${by}: cannot read \`${option}\`, the ${what} ${p}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
  }
}

function at(s: Source): string {
  return s.path === undefined ? '' : ` (${s.path})`;
}
