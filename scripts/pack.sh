#!/usr/bin/env bash
# Builds the installable package: `npm pack` of a staged copy of what
# package.json "files" lists, with the prebuilt addon's debug info stripped
# (38 MB -> 4 MB; panic locations do not need it). A plain `npm pack` in the
# checkout works too and ships the unstripped addon.
# Usage: bash scripts/pack.sh [output-dir]   (prints the tarball's path last)
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath "${1:-.}")
mkdir -p "$out"
ls dist/native/h3core.*.node >/dev/null 2>&1 || { echo "pack: no prebuilt addon in dist/native; run npm run build first" >&2; exit 1; }
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cp package.json README.md "$stage/"
cp -r certs dist "$stage/"
if command -v strip >/dev/null; then
  strip --strip-debug "$stage"/dist/native/h3core.*.node
fi
name=$(cd "$stage" && npm pack --silent --pack-destination "$out" | tail -1)
echo "$out/$name"
