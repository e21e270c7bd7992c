#!/usr/bin/env bash
# System packages the build and the tests need, installed from Debian.
#   cmake, clang, libclang-dev: quiche builds BoringSSL (cmake) and generates
#                               its bindings with bindgen (libclang).
#   python3-venv:               the aioquic test client's virtualenv.
#   chromium:                   the real-browser tests (driven by playwright-core).
#   tshark:                     the TLS key-log test captures loopback traffic (dumpcap)
#                               and decrypts it; preseeded to skip the setuid question.
#   ngtcp2-client:              ngtcp2's example HTTP/3 client (gtlsclient), for the interop matrix.
#   openssl:                    the interop runner's amplificationlimit case makes a large certificate.
#   curl, patch:                scripts/patch-quiche.sh fetches quiche from crates.io and patches it.
#   nftables:                   deploy/'s QUIC-LB ruleset is loaded by nft in the balancer test.
set -euo pipefail

packages=(cmake clang libclang-dev python3-venv chromium chromium-driver tshark ngtcp2-client openssl curl patch nftables)
bash "$(dirname "$0")/apt-install.sh" "${packages[@]}"
