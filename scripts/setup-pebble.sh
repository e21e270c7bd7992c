#!/usr/bin/env bash
# Let's Encrypt's ACME test server, Pebble, and its companion DNS/challenge
# server (pebble-challtestsrv), for examples/acme and its test: built from
# the Go module proxy into the ignored .cache/pebble/.
set -euo pipefail
cd "$(dirname "$0")/.."
PEBBLE_VERSION=${PEBBLE_VERSION:-v2.10.3}
command -v go >/dev/null || PATH="/usr/local/go/bin:$PATH"
if ! command -v go >/dev/null; then
  echo "setup-pebble: go not found; Go is needed to build Pebble" >&2
  exit 1
fi
out=$PWD/.cache/pebble
if [[ -x $out/pebble && -x $out/pebble-challtestsrv && $(cat "$out/version" 2>/dev/null) == "$PEBBLE_VERSION" ]]; then
  echo "setup-pebble: Pebble $PEBBLE_VERSION in .cache/pebble"
  exit 0
fi
mkdir -p "$out"
GOBIN=$out go install "github.com/letsencrypt/pebble/v2/cmd/pebble@$PEBBLE_VERSION" "github.com/letsencrypt/pebble/v2/cmd/pebble-challtestsrv@$PEBBLE_VERSION"
echo "$PEBBLE_VERSION" > "$out/version"
echo "setup-pebble: built Pebble $PEBBLE_VERSION into .cache/pebble"
