#!/usr/bin/env bash
# Everything `npm run bench` needs, installed the way CI would: Debian's
# caddy (the HTTP/3 peer) and nghttp2-client (h2load, for node:http2), the
# quic-go load client, the Python venv (aioquic: W4 and W7 clients), and
# this project's build.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(caddy nghttp2-client)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
command -v go >/dev/null || { echo "bench/setup.sh: Go is required for the load client (bench/loadclient)" >&2; exit 1; }

# A fresh clone: the project's own setup first (Debian build packages, npm
# dependencies, the Python venv).
[[ -d node_modules/tsx ]] || bash scripts/setup.sh

(cd bench/loadclient && go build -o loadclient .)
[[ -x .venv/bin/python ]] || bash scripts/setup-python.sh
[[ -f dist/server.js && -n "$(ls dist/native/*.node 2>/dev/null)" ]] || npm run build
