#!/usr/bin/env bash
# Everything `npm run bench` needs, installed the way CI would: Debian's
# caddy (the HTTP/3 peer) and nghttp2-client (h2load, for node:http2), the
# quic-go load client, W9's webtransport-go echo server and client, the Python venv (aioquic: W4 and W7 clients),
# valgrind (bench/tools/callgrind-w1.sh), Bun from npm (the JavaScript HTTP/3
# peer of the fetch rows), and this project's build.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(caddy nghttp2-client valgrind)
bash scripts/apt-install.sh "${packages[@]}"
command -v go >/dev/null || { echo "bench/setup.sh: Go is required for the load client (bench/loadclient)" >&2; exit 1; }

# A fresh clone: the project's own setup first (Debian build packages, npm
# dependencies, the Python venv).
[[ -d node_modules/tsx ]] || bash scripts/setup.sh

bash bench/loadclient/build.sh
(cd bench/wtpeer && go build -o wtpeer .)
[[ -x .venv/bin/python ]] || bash scripts/setup-python.sh
# Bun 1.4.4, W1's and W3's peer for serve({ fetch }) (bench/peers/bun-fetch.mjs):
# the npm package carries the binary. Kept under bench/.work, out of the
# project's dependencies.
bun_dir=bench/.work/bun
if ! [[ -x $bun_dir/node_modules/bun/bin/bun.exe ]] || [[ $("$bun_dir/node_modules/bun/bin/bun.exe" --version 2>/dev/null) != 1.4.4 ]]; then
  mkdir -p "$bun_dir"
  npm install --prefix "$bun_dir" --no-save --no-audit --no-fund bun@1.4.4
fi
[[ -f dist/server.js && -n "$(ls dist/native/*.node 2>/dev/null)" ]] || npm run build
