#!/usr/bin/env bash
# Builds the installable packages, napi-rs's layout: the main package
# (JavaScript, declarations, demo identity; no addon) and one package per
# platform with an addon built (npm/<platform>/: its os, cpu and libc
# fields make npm install only the one that fits). The main package lists
# every platform package as an optional dependency of the same version.
# Addons come from dist/native (this machine's `npm run build`) and from
# dist/platforms/<platform>/ (scripts/build-platforms.sh); their debug info
# is stripped (38 MB -> 4 MB; panic locations do not need it).
# Usage: bash scripts/pack.sh [output-dir]
# Prints each tarball's path, the main package's last.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath "${1:-.}")
mkdir -p "$out"
ls dist/native/h3core.*.node >/dev/null 2>&1 || { echo "pack: no addon in dist/native; run npm run build first" >&2; exit 1; }
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
version=$(node -p 'require("./package.json").version')

strip_addon() {
  case "$(file -b "$1")" in
    *x86-64*) strip --strip-debug "$1" ;;
    # binutils-aarch64-linux-gnu (scripts/setup-arm64.sh), else LLVM's strip.
    *aarch64*)
      if command -v aarch64-linux-gnu-strip >/dev/null; then aarch64-linux-gnu-strip --strip-debug "$1"
      elif command -v llvm-strip >/dev/null; then llvm-strip --strip-debug "$1"; fi ;;
    *) ;;  # Mach-O: as built (zig's linker writes no DWARF into the dylib)
  esac
}

# Platform packages, for each addon there is.
for dir in npm/*/; do
  platform=$(basename "$dir")
  addon="h3core.$platform.node"
  src=""
  for candidate in "dist/native/$addon" "dist/platforms/$platform/$addon"; do
    if [[ -f $candidate ]]; then src=$candidate; break; fi
  done
  [[ -n $src ]] || continue
  mkdir -p "$stage/$platform"
  cp "$dir/package.json" "$dir/README.md" "$stage/$platform/"
  cp "$src" "$stage/$platform/$addon"
  strip_addon "$stage/$platform/$addon"
  (cd "$stage/$platform" && npm pack --silent --pack-destination "$out" | tail -1 | sed "s|^|$out/|")
done

# The main package: no addon of its own, every platform as an optional dependency.
mkdir -p "$stage/main"
cp package.json README.md "$stage/main/"
cp -r certs deploy dist "$stage/main/"
rm -rf "$stage/main/dist/native/"*.node "$stage/main/dist/platforms" "$stage/main/dist/packages"
node -e '
  const fs = require("fs");
  const file = process.argv[1];
  const pkg = JSON.parse(fs.readFileSync(file, "utf8"));
  const platforms = fs.readdirSync("npm");
  pkg.optionalDependencies = Object.fromEntries(platforms.map((p) => [`h3-node-${p}`, pkg.version]));
  delete pkg.devDependencies;
  delete pkg.scripts;
  fs.writeFileSync(file, JSON.stringify(pkg, null, 2) + "\n");
' "$stage/main/package.json"
(cd "$stage/main" && npm pack --silent --pack-destination "$out" | tail -1 | sed "s|^|$out/|")
