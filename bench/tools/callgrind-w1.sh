#!/usr/bin/env bash
# Instructions per W1 request through the native handler, counted by
# callgrind (bench/tools/callgrind-requests.sh with the native handler's
# server): 3,000 W1 requests (1 connection x 20 streams) warm it, then N
# (10,000 unless told) are counted; prints the functions above 1 % and the
# total. Build the addon with `npm run build:native:bench`
# (bench/.work/addon-bench/h3core.linux-x64-gnu.node).
#   bash bench/tools/callgrind-w1.sh <addon .node built with bench-handler> [requests]
set -euo pipefail
cd "$(dirname "$0")/../.."
addon=${1:?usage: callgrind-w1.sh <addon.node> [requests]}
WARM=3000 TOP=1 exec bash bench/tools/callgrind-requests.sh w1 "${2:-10000}" -- \
  bench/servers/h3-node.mjs a PORT --native a --addon "$addon"
