#!/usr/bin/env bash
# Everything a fresh machine needs before build and test: Debian packages,
# npm dependencies, the aioquic test client's virtualenv, and the quic-go
# interop client.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-system.sh
# quiche with our patches, where Cargo.toml's [patch.crates-io] expects it.
bash scripts/patch-quiche.sh
# `npm ci` trips over an npm 11 lockfile bug with nested optional platform
# packages (@napi-rs/lzma-*), so install against the lockfile instead.
npm install --no-audit --no-fund
bash scripts/setup-python.sh
bash scripts/setup-go.sh
