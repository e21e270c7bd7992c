#!/usr/bin/env bash
# Builds the quic-go interop client (test/clients/quicgo) into its ignored
# .bin/ directory, fetching its modules through the Go module proxy. The
# interop test also builds it on first use; doing it here keeps that
# compile out of the test run.
set -euo pipefail
cd "$(dirname "$0")/../test/clients/quicgo"
go build -o .bin/quicgo-interop .
