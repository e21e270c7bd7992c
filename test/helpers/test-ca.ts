// A certificate authority made by openssl for one test run, in a temp
// directory, and what the TLS tests need from it: leaf certificates for
// server names (with subjectAltName), client certificates, a self-signed
// certificate no CA vouches for, an expired one, an encrypted key. Each
// comes as file paths plus the SHA-256 of the certificate's DER, which
// the clients report for what the server presented.
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface Issued {
  cert: string;
  key: string;
  /** SHA-256 of the certificate's DER, lowercase hex. */
  sha256: string;
}

function openssl(args: string[], cwd: string): void {
  try {
    execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (e) {
    throw new Error(`openssl ${args[0]} failed: ${String((e as { stderr?: Buffer }).stderr ?? e).trim()}`);
  }
}

function fingerprint(certPath: string): string {
  return crypto.createHash('sha256').update(new crypto.X509Certificate(fs.readFileSync(certPath)).raw).digest('hex');
}

export class TestCa {
  readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3-test-ca-'));
  readonly ca: Issued;
  #serial = 1;

  constructor(readonly name = 'h3-node test CA') {
    this.ca = this.#selfSigned('ca', name, ['-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
    // `openssl ca` (for certificates with given dates) wants a database.
    fs.writeFileSync(path.join(this.dir, 'index.txt'), '');
    fs.writeFileSync(
      path.join(this.dir, 'ca.cnf'),
      [
        '[ca]',
        'default_ca = test',
        '[test]',
        `dir = ${this.dir}`,
        'database = $dir/index.txt',
        'serial = $dir/serial',
        'new_certs_dir = $dir',
        'certificate = $dir/ca.pem',
        'private_key = $dir/ca.key',
        'default_md = sha256',
        'policy = any',
        'unique_subject = no',
        'copy_extensions = copy',
        '[any]',
        'commonName = supplied',
        '',
      ].join('\n'),
    );
  }

  #key(base: string): string {
    const key = path.join(this.dir, `${base}.key`);
    openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', key], this.dir);
    return key;
  }

  #selfSigned(base: string, cn: string, extra: string[] = []): Issued {
    const key = this.#key(base);
    const cert = path.join(this.dir, `${base}.pem`);
    openssl(['req', '-x509', '-new', '-key', key, '-out', cert, '-days', '30', '-subj', `/CN=${cn}`, ...extra], this.dir);
    return { cert, key, sha256: fingerprint(cert) };
  }

  /**
   * A certificate this CA signed for `cn`, with `names` as DNS
   * subjectAltNames (none: a client certificate); `dates` picks validity
   * (YYYYMMDDHHMMSSZ) instead of the next 30 days.
   */
  issue(base: string, cn: string, names: string[] = [], dates?: { start: string; end: string }): Issued {
    const key = this.#key(base);
    const csr = path.join(this.dir, `${base}.csr`);
    const cert = path.join(this.dir, `${base}.pem`);
    const san = names.length > 0 ? ['-addext', `subjectAltName=${names.map((n) => `DNS:${n}`).join(',')}`] : [];
    const usage = names.length > 0 ? 'serverAuth' : 'clientAuth';
    openssl(['req', '-new', '-key', key, '-out', csr, '-subj', `/CN=${cn}`, ...san, '-addext', `extendedKeyUsage=${usage}`], this.dir);
    const validity = dates ? ['-startdate', dates.start, '-enddate', dates.end] : ['-days', '30'];
    const serial = (this.#serial++).toString(16).padStart(4, '0');
    fs.writeFileSync(path.join(this.dir, 'serial'), `${serial}\n`);
    openssl(['ca', '-batch', '-config', 'ca.cnf', '-notext', '-in', csr, '-out', cert, ...validity], this.dir);
    return { cert, key, sha256: fingerprint(cert) };
  }

  /** A certificate that signed itself: no CA vouches for it. */
  selfSigned(base: string, cn: string, names: string[] = []): Issued {
    const san = names.length > 0 ? ['-addext', `subjectAltName=${names.map((n) => `DNS:${n}`).join(',')}`] : [];
    return this.#selfSigned(base, cn, san);
  }

  /** `key` encrypted with `passphrase` (PKCS#8, AES-256). */
  encryptKey(key: string, passphrase: string): string {
    const out = key.replace(/\.key$/, '.encrypted.key');
    openssl(['pkey', '-in', key, '-out', out, '-aes256', '-passout', `pass:${passphrase}`], this.dir);
    return out;
  }

  remove(): void {
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
