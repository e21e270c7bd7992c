#!/usr/bin/env bash
# Unpacks quiche as published on crates.io into native/vendor/ and applies
# our patches (native/patches/quiche-<version>-*.patch), for Cargo.toml's
# [patch.crates-io]. Why each patch exists: its own header, and
# docs/quiche-patches.md (what it touches, the test that fails without it,
# upstream status, when it can go; 07 and 09 were dropped).
# Does nothing when the tree there already carries exactly these patches.
set -euo pipefail
cd "$(dirname "$0")/.."

version=0.30.0
# The published crate's checksum, as Cargo.lock had it before the patch.
sha256=52b35a721a2a56797347929745fa783fc99e680d9484b80324ce40106b75493a
dest=native/vendor/quiche-$version
patches=(native/patches/quiche-"$version"-*.patch)

stamp=$(cat "${patches[@]}" | sha256sum | cut -d' ' -f1)
if [[ -f $dest/.h3-node-patches && $(cat "$dest/.h3-node-patches") == "$stamp" ]]; then exit 0; fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
crate=$work/quiche-$version.crate
# Cargo's download cache; if it is not there, cargo fetches it (through
# whatever registry or mirror cargo is set up for) into that cache; failing
# that, crates.io directly.
from_cache() { ls "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/quiche-$version.crate 2>/dev/null | head -1 || true; }
cached=$(from_cache)
if [[ -z $cached ]]; then
  mkdir -p "$work/fetch/src"
  touch "$work/fetch/src/lib.rs"
  printf '[package]\nname = "fetch-quiche"\nversion = "0.0.0"\nedition = "2021"\n\n[dependencies]\nquiche = "=%s"\n' "$version" > "$work/fetch/Cargo.toml"
  (cd "$work/fetch" && cargo fetch --quiet) || echo "patch-quiche: cargo fetch failed; trying crates.io directly" >&2
  cached=$(from_cache)
fi
if [[ -n $cached ]]; then cp "$cached" "$crate"; else
  curl -fsSL --retry 3 -o "$crate" "https://static.crates.io/crates/quiche/quiche-$version.crate"
fi
if [[ $(sha256sum "$crate" | cut -d' ' -f1) != "$sha256" ]]; then
  echo "patch-quiche: quiche-$version.crate does not have the published checksum $sha256" >&2
  exit 1
fi
tar -xzf "$crate" -C "$work"
for p in "${patches[@]}"; do patch -s -p1 -d "$work/quiche-$version" < "$p"; done
echo "$stamp" > "$work/quiche-$version/.h3-node-patches"
rm -rf "$dest"
mkdir -p "$(dirname "$dest")"
mv "$work/quiche-$version" "$dest"
echo "patch-quiche: $dest (quiche $version + ${#patches[@]} patch(es))"
