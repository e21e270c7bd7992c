#!/usr/bin/env bash
# Everything a fresh machine needs before build and test: Debian packages,
# npm dependencies, Node 22/24/26, the aioquic test client's virtualenv, the
# quic-go interop client, Pebble (the ACME test server), and the linux-arm64-gnu addon with qemu-user to run
# it (scripts/setup-arm64.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-system.sh
# quiche with our patches, where Cargo.toml's [patch.crates-io] expects it.
bash scripts/patch-quiche.sh
# Exactly what package-lock.json says, and nothing rewrites it. The lock
# lists every platform's optional packages (@napi-rs/*, @emnapi/*), as
# `npm install` writes it on this machine; a lock pruned to one platform is
# what `npm install` rewrote on every fresh clone.
npm ci --no-audit --no-fund
bash scripts/setup-node-versions.sh
bash scripts/setup-python.sh
bash scripts/setup-go.sh
bash scripts/setup-pebble.sh
bash scripts/setup-arm64.sh
