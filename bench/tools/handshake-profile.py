#!/usr/bin/env python3
"""Where a fresh connection's server CPU goes: perf samples of the h3-node
server (pinned as the harness pins it) over W2's traffic, each sample's
leaf function put in one class (signing, key exchange, AEAD, hashes and
HKDF, the rest of BoringSSL, quiche, our code, allocator, kernel, the
JavaScript thread), in microseconds per connection. Needs perf.

  bench/tools/handshake-profile.py [--native] [--connections 2000] [--hz 2999] [--data <perf.data>]

With --data it classifies an existing recording (of --connections
connections) instead of making one. The machine's perf here samples the
cpu-clock (no hardware counters in the VM): kernel samples bunch up where
interrupts are re-enabled (finish_task_switch, _raw_spin_unlock_irqrestore),
so the kernel class is right in total but not per function.
"""
import argparse
import collections
import os
import random
import re
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))

CLASSES = [
    # (class, dso test, symbol pattern); first match wins.
    ('kernel (syscalls: UDP, epoll, wake-ups; scheduler)', lambda d: 'kernel' in d or d == '[vdso]', r''),
    ('crypto: signing (ECDSA P-256, CertificateVerify)', None, r'nistz256|ecdsa|ECDSA|bn_|BN_|ec_GFp|ec_scalar|ec_point|ec_simple|p256'),
    ('crypto: key exchange (X25519MLKEM768)', None, r'25519|x25519|X25519|\bfe_|fe4_|ge_|mlkem|MLKEM|keccak|KECCAK'),
    ('crypto: AEAD and header protection (AES-128-GCM)', None, r'aes|gcm|GCM|AEAD|ghash|chacha|poly1305'),
    ('crypto: SHA-256, HMAC, HKDF (transcript, key schedule)', None, r'sha256|SHA256|sha384|SHA384|sha512|SHA512|HMAC|HKDF|hkdf|EVP_Digest|EVP_MD|md_final'),
    ('crypto: random (CTR-DRBG)', None, r'RAND_|rand_|block_cipher_df|CTR_DRBG|getrandom'),
    ('quiche (QUIC, recovery, frames)', None, r'quiche|octets'),
    ('our code (h3core I/O loop, h3 layer, addon, napi)', None, r'h3core|h3_node|napi|quinn_udp|mio::|hashbrown|hash_one|DefaultHasher|slab|__rust_begin_short_backtrace'),
    ('BoringSSL: TLS handshake, other', None, r'bssl|SSL|ssl|CBB|CBS|cbb_|cbs_|CRYPTO|OPENSSL|ERR_|X509|x509|asn1|ASN1|EVP|BUF|OBJ_|tls'),
    ('libc and allocator (malloc/free, memcpy, Rust alloc)', lambda d: d.startswith('libc') or d.startswith('libstdc++') or d.startswith('ld-linux'), r''),
    ('libc and allocator (malloc/free, memcpy, Rust alloc)', None, r'__rdl_|__rust_alloc|__rust_dealloc|alloc::|RawVec'),
]


def classify(comm, dso, sym):
    for name, dso_test, pattern in CLASSES:
        if dso_test is not None:
            if dso_test(dso) and (not pattern or re.search(pattern, sym)):
                return name
            continue
        if ('h3core' in dso or 'h3-node' in dso) and re.search(pattern, sym):
            return name
    if 'h3core' in dso:
        return 'addon: other (Rust core, fmt, std)'
    if comm != 'h3-io':
        return 'JavaScript thread: V8, node, libuv'
    if dso == 'node':
        # The I/O thread calling into node: the handoff to JavaScript.
        return 'our code (h3core I/O loop, h3 layer, addon, napi)'
    return f'other ({dso})'


def record(native, connections, hz, data):
    port = 19700 + random.randrange(250)
    args = ['taskset', '-c', '0', 'node', 'bench/servers/h3-node.mjs', 'a', str(port)]
    if native:
        addon_dir = os.path.join(ROOT, 'bench/.work/addon-bench')
        addon = next(f for f in os.listdir(addon_dir) if f.endswith('.node'))
        args += ['--native', 'a', '--addon', os.path.join(addon_dir, addon)]
    server = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True)
    try:
        server.stdout.readline()  # {"listening": ...}
        url = f'https://127.0.0.1:{port}/login'
        client = ['taskset', '-c', '1', 'bench/loadclient/loadclient', '-url', url]
        # As in the full run: W1's warm-up, then W2's unmeasured fresh connections.
        subprocess.run(client + ['-conns', '1', '-streams', '20', '-requests', '10000'], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        subprocess.run(client + ['-fresh', '-requests', '100'], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        subprocess.run(['perf', 'record', '-q', '-F', str(hz), '-g', '-o', data, '-p', str(server.pid), '--'] + client + ['-fresh', '-requests', str(connections)],
                       cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    finally:
        server.terminate()
        server.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--native', action='store_true')
    ap.add_argument('--connections', type=int, default=2000)
    ap.add_argument('--hz', type=int, default=2999)
    ap.add_argument('--data')
    a = ap.parse_args()
    data = a.data
    if not data:
        data = f'/tmp/h3-handshake-{"native" if a.native else "ts"}-{int(time.time())}.perf.data'
        record(a.native, a.connections, a.hz, data)
    out = subprocess.run(['perf', 'report', '-i', data, '--no-children', '-g', 'none', '--sort', 'comm,dso,sym', '--stdio', '-q', '-F', 'sample,comm,dso,sym'],
                         capture_output=True, text=True, check=True).stdout
    per = collections.Counter()
    top = collections.defaultdict(collections.Counter)
    threads = collections.Counter()
    for line in out.splitlines():
        m = re.match(r'\s*(\d+)\s+(\S+)\s+(\S+)\s+\[(.)\]\s+(.*)$', line)
        if not m:
            continue
        samples, comm, dso, sym = int(m[1]), m[2], m[3], m[5].strip()
        thread = 'I/O thread (h3-io)' if comm == 'h3-io' else 'JavaScript thread and others'
        name = classify(comm, dso, sym)
        per[(thread, name)] += samples
        top[(thread, name)][sym] += samples
        threads[thread] += samples
    total = sum(per.values())
    us = lambda s: s / a.hz * 1e6 / a.connections
    print(f'{data}: {total} samples at {a.hz} Hz over {a.connections} fresh connections = {us(total):.0f} us of server CPU per connection')
    for t, s in threads.most_common():
        print(f'  {t}: {us(s):.0f} us ({100 * s / total:.0f} %)')
    print(f'| thread | class | us per connection | share | top functions |')
    print('|---|---|---:|---:|---|')
    for (t, name), s in sorted(per.items(), key=lambda kv: (kv[0][0] != 'I/O thread (h3-io)', -kv[1])):
        fns = ', '.join(f[:48] for f, _ in top[(t, name)].most_common(3))
        print(f'| {t} | {name} | {us(s):.1f} | {100 * s / total:.1f} % | {fns} |')


if __name__ == '__main__':
    sys.exit(main())
