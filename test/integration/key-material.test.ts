// Private keys never touch the disk (README, "Where key material lives"):
// createSecureServer started with the demo identity as PEM strings, as
// Buffers, as file paths and as a passphrase-protected key, serving a real
// HTTP/3 request (aioquic), then ended by close(), by SIGTERM and by
// SIGKILL. Each run gets an empty temp directory of its own (TMPDIR): it
// must stay empty, the system temp directory must gain nothing, and while
// the server runs no file it holds open for writing (deleted ones included,
// read through /proc/<pid>/fd) may contain the key in any of its encodings.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createSecureServer } from '../../src';
import { request } from '../helpers/clients/h3client';
import { ROOT } from '../helpers/paths';
import { startProcess } from '../helpers/process';
import { PASSPHRASE } from '../helpers/fixtures/key-material-server';

const FIXTURE = path.join(ROOT, 'test', 'helpers', 'fixtures', 'key-material-server.ts');
const KEY_PEM = fs.readFileSync(path.join(ROOT, 'certs', 'demo-key.pem'));
const CERT_PEM = fs.readFileSync(path.join(ROOT, 'certs', 'demo-cert.pem'));

/** Byte strings any copy of the demo key would contain, whatever its encoding. */
function keyFingerprints(): Buffer[] {
  const key = crypto.createPrivateKey(KEY_PEM);
  const pkcs8 = key.export({ type: 'pkcs8', format: 'der' });
  const pkcs8Pem = key.export({ type: 'pkcs8', format: 'pem' }) as string;
  const sec1 = key.export({ type: 'sec1', format: 'der' });
  const base64Lines = (pem: string) => pem.split('\n').filter((l) => /^[A-Za-z0-9+/=]{40,}$/.test(l));
  return [pkcs8, sec1, ...base64Lines(pkcs8Pem), ...base64Lines(KEY_PEM.toString())].map((b) => Buffer.from(b));
}

/** Every regular file `pid` holds open for writing (deleted ones too), and what it is. */
function writableFiles(pid: number): { fd: string; target: string; content: Buffer }[] {
  const out: { fd: string; target: string; content: Buffer }[] = [];
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    let target: string;
    let info: string;
    try {
      target = fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
      info = fs.readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8');
    } catch {
      continue; // closed meanwhile
    }
    const flags = parseInt(/^flags:\s*([0-7]+)/m.exec(info)?.[1] ?? '0', 8);
    if ((flags & 3) === 0) continue; // O_RDONLY
    let stat: fs.Stats;
    try {
      stat = fs.statSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      continue;
    }
    if (!stat.isFile()) continue;
    out.push({ fd, target, content: fs.readFileSync(`/proc/${pid}/fd/${fd}`) });
  }
  return out;
}

describe('private keys never touch the disk', function () {
  this.timeout(60_000);
  const fingerprints = keyFingerprints();

  it('the check finds a key copy: a process holding a deleted temp file with the key open for writing', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3-key-test-'));
    try {
      const script = `const fs=require('fs');const f=${JSON.stringify(path.join(dir, 'k'))};const fd=fs.openSync(f,'w');fs.writeSync(fd,fs.readFileSync(${JSON.stringify(path.join(ROOT, 'certs', 'demo-key.pem'))}));fs.unlinkSync(f);console.log('ready');setInterval(()=>{},1000);`;
      const holder = startProcess(process.execPath, ['-e', script], { label: 'key holder' });
      await holder.waitFor(/ready/);
      const found = writableFiles(holder.pid).filter((f) => fingerprints.some((p) => f.content.includes(p)));
      assert.equal(found.length, 1, 'the deleted copy is found');
      assert.match(found[0].target, /\(deleted\)$/);
      holder.signal('SIGKILL');
      await holder.exited;
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  for (const form of ['pem-string', 'buffer', 'path', 'passphrase']) {
    for (const ending of ['close()', 'SIGTERM', 'SIGKILL'] as const) {
      it(`key as ${form}, ended by ${ending}: serves over HTTP/3, no file holds the key, the temp directories gain nothing`, async () => {
        const systemTmp = os.tmpdir();
        const before = new Set(fs.readdirSync(systemTmp));
        const ownTmp = fs.mkdtempSync(path.join(systemTmp, 'h3-key-test-'));
        before.add(path.basename(ownTmp));
        try {
          const server = startProcess(process.execPath, ['--import', 'tsx', FIXTURE], {
            // TSX_DISABLE_CACHE: tsx itself would keep a compile cache in TMPDIR.
            env: { H3_KEY_FORM: form, TMPDIR: ownTmp, TMP: ownTmp, TEMP: ownTmp, TSX_DISABLE_CACHE: '1' },
            stdin: true,
            label: `key-material-server (${form})`,
          });
          const port = Number((await server.waitFor(/listening (\d+)/, { timeoutMs: 20_000 }))[1]);
          const res = await request(port, { path: '/' });
          assert.equal(res.status, 200, JSON.stringify(res));
          assert.equal(res.body_text, 'ok');

          const writable = writableFiles(server.pid);
          for (const f of writable) {
            for (const print of fingerprints) {
              assert.equal(f.content.includes(print), false, `fd ${f.fd} (${f.target}) holds key material`);
            }
          }

          if (ending === 'close()') {
            server.send('close\n');
            assert.equal(await server.exited, 0, server.stderr());
          } else {
            server.signal(ending);
            await server.exited;
          }
          assert.deepEqual(fs.readdirSync(ownTmp), [], `the server's TMPDIR (${ownTmp})`);
          const added = fs.readdirSync(systemTmp).filter((e) => !before.has(e) && /h3-node/.test(e));
          assert.deepEqual(added, [], `new entries in ${systemTmp}`);
        } finally {
          fs.rmSync(ownTmp, { recursive: true, force: true });
        }
      });
    }
  }

  describe('passphrase-protected keys', () => {
    const encrypted = crypto.createPrivateKey(KEY_PEM).export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: PASSPHRASE });
    const legacy = crypto.createPrivateKey(KEY_PEM).export({ type: 'sec1', format: 'pem', cipher: 'aes-128-cbc', passphrase: PASSPHRASE });

    it('a missing passphrase is an error that names `passphrase`', () => {
      for (const key of [encrypted, legacy]) {
        assert.throws(() => createSecureServer({ cert: CERT_PEM, key }), /`key` is encrypted: pass its `passphrase`/);
      }
    });

    it('a wrong passphrase is an error that names `passphrase`', () => {
      for (const key of [encrypted, legacy]) {
        assert.throws(() => createSecureServer({ cert: CERT_PEM, key, passphrase: 'wrong' }), /`passphrase` does not decrypt `key`/);
      }
    });

    it('a passphrase that is not a string is a TypeError naming `passphrase`', () => {
      assert.throws(() => createSecureServer({ cert: CERT_PEM, key: encrypted, passphrase: 42 as unknown as string }), {
        name: 'TypeError',
        message: /`passphrase` must be a string/,
      });
    });

    it('the right passphrase decrypts both PKCS#8 and traditional encrypted PEM, in memory', () => {
      for (const key of [encrypted, legacy]) {
        const server = createSecureServer({ cert: CERT_PEM, key, passphrase: PASSPHRASE, tcp: false, warnDemoIdentity: false });
        assert.equal(server.listening, false);
      }
    });
  });
});
