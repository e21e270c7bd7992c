#!/usr/bin/env bash
# Builds the quic-go interop client (test/helpers/clients/quicgo) into its ignored
# .bin/ directory, fetching its modules through the Go module proxy. The
# interop test also builds it on first use; doing it here keeps that
# compile out of the test run.
set -euo pipefail
cd "$(dirname "$0")/../test/helpers/clients/quicgo"
command -v go >/dev/null || PATH="/usr/local/go/bin:$PATH"
if ! command -v go >/dev/null; then
  echo "setup-go: go not found; Go >= 1.26 is needed to build the quic-go test client" >&2
  exit 1
fi
go build -o .bin/quicgo-interop .
