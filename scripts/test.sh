#!/usr/bin/env bash
# Runs every test: the Rust unit tests, then the mocha suites against the
# built addon. Prints "N passed, N failed" last, counted from the real runs,
# and exits non-zero when anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."

# What the run must leave as it found it: the temp directory's entries and
# the work tree's status (checked at the end, each counted as one test).
tmp_dir=${TMPDIR:-/tmp}
tmp_before=$(ls -A "$tmp_dir" | sort)
tree_before=$(git status --porcelain 2>/dev/null || true)

# Node's module compile cache (tsx turns it on) in the project, not in the
# temp directory.
export NODE_COMPILE_CACHE=${NODE_COMPILE_CACHE:-$PWD/.cache/node-compile-cache}

counts=$(mktemp)
export TEST_COUNTS_FILE=$counts

# Rust unit tests (framing, varints, request validation, settings).
cargo_out=$(mktemp)
# Same target triple as `napi build`, so the dependencies it compiled are reused.
host=$(rustc -vV | sed -n 's/^host: //p')
cargo test --workspace --release --lib --target "$host" 2>&1 | tee "$cargo_out"
cargo_status=${PIPESTATUS[0]}
rust_passed=$(grep -Eo '[0-9]+ passed' "$cargo_out" | awk '{s+=$1} END {print s+0}')
rust_failed=$(grep -Eo '[0-9]+ failed' "$cargo_out" | awk '{s+=$1} END {print s+0}')
if [[ $cargo_status -ne 0 && $rust_failed -eq 0 ]]; then rust_failed=1; fi  # build failure counts as a failure
echo "{\"suite\":\"cargo\",\"passed\":$rust_passed,\"failed\":$rust_failed}" >> "$counts"

# Static checks, each counted as one test: Rust formatting and clippy (on
# the release build's target, so its dependencies are reused), the
# TypeScript of src/, test/ and bench/ type-checked, and ESLint.
check() {
  local name=$1; shift
  echo "== check: $name"
  if "$@"; then
    echo "{\"suite\":\"check-$name\",\"passed\":1,\"failed\":0}" >> "$counts"
  else
    echo "check $name failed: $*"
    echo "{\"suite\":\"check-$name\",\"passed\":0,\"failed\":1}" >> "$counts"
  fi
}
check cargo-fmt cargo fmt --all --check
check clippy cargo clippy --workspace --all-targets --all-features --release --target "$host" --quiet -- -D warnings
check typecheck npm run --silent typecheck
check eslint npm run --silent lint

# The benchmark's addon variant (cargo feature bench-handler) for
# test/integration/bench-harness.test.ts; cargo reuses everything but the two crates.
npm run --silent build:native:bench || echo "build:native:bench failed; test/integration/bench-harness.test.ts will say so"

# Node versions (scripts/node-versions.sh, installed by
# scripts/setup-node-versions.sh): every suite on the newest LTS, and a
# representative subset (profiles, compat, frameworks, the fetch adapter,
# WebTransport, workers, TLS material) on the older maintained lines.
source scripts/node-versions.sh
for major in $NODE_MAJORS; do
  if [[ ! -x "$(node_bin "$major")/node" ]]; then
    echo "test: no Node $major in .nodes/$major; run npm run setup (scripts/setup-node-versions.sh)" >&2
    echo "{\"suite\":\"node-$major\",\"passed\":0,\"failed\":1}" >> "$counts"
  fi
done
SUBSET_SUITES=(
  test/integration/profile-a.test.ts test/integration/profile-b.test.ts test/integration/profile-c.test.ts
  test/integration/compat-h3.test.ts test/unit/compat-unit.test.ts
  test/frameworks/frameworks-h3.test.ts test/frameworks/frameworks-tcp.test.ts
  test/integration/fetch-adapter.test.ts test/unit/lazy-request.test.ts
  test/integration/webtransport-app.test.ts test/integration/workers.test.ts test/integration/key-material.test.ts
)

# mocha under Node <major>, its counts filed as suite <name>.
run_mocha() {
  local major=$1 name=$2; shift 2
  [[ -x "$(node_bin "$major")/node" ]] || return 1   # counted as failed above
  echo "== mocha on Node $("$(node_bin "$major")/node" --version): $name"
  PATH="$(node_bin "$major"):$PATH" TEST_SUITE_NAME=$name npx mocha "$@"
  local status=$?
  if ! grep -q "\"suite\":\"$name\"" "$counts"; then
    echo "{\"suite\":\"$name\",\"passed\":0,\"failed\":1}" >> "$counts"   # mocha died before reporting
  fi
  return $status
}

# Every suite unless files are named: `npm test -- test/integration/cli.test.ts` (then
# on the newest Node only). The glob is here rather than in .mocharc.json,
# where mocha would add it to the files named on the command line, so
# `npx mocha test/x.test.ts` runs just that file.
mocha_status=0
if [[ $# -eq 0 ]]; then
  run_mocha "$FULL_NODE" "mocha-node$FULL_NODE" 'test/**/*.test.ts' || mocha_status=1
  for major in $NODE_MAJORS; do
    [[ $major == "$FULL_NODE" ]] && continue
    run_mocha "$major" "mocha-node$major-subset" "${SUBSET_SUITES[@]}" || mocha_status=1
  done
else
  run_mocha "$FULL_NODE" "mocha-node$FULL_NODE" "$@" || mocha_status=1
fi

# Fuzzing, short: each cargo-fuzz target for 20 s (`npm run fuzz` runs 10 min
# each); every target counts as one test.
npm run --silent fuzz:ci
fuzz_status=$?

rm -f "$cargo_out"
# Nothing left behind: no new entry in the temp directory (a key copy, a
# test's scratch folder), and no tracked file changed (generated docs are
# written only with H3_UPDATE_DOCS=1).
leftovers_failed=0
# tsx's compile cache (tsx-<uid>) is the test runner's own, kept on purpose.
tmp_added=$(comm -13 <(echo "$tmp_before") <(ls -A "$tmp_dir" | grep -vxF -e "$(basename "$counts")" -e "tsx-$(id -u)" | sort))
if [[ -n $tmp_added ]]; then
  echo "the test run left these in $tmp_dir:"; echo "$tmp_added" | sed 's/^/  /'
  leftovers_failed=$((leftovers_failed + 1))
fi
tree_after=$(git status --porcelain 2>/dev/null || true)
if [[ "$tree_after" != "$tree_before" ]]; then
  echo "the test run changed the work tree:"; diff <(echo "$tree_before") <(echo "$tree_after") | sed 's/^/  /'
  leftovers_failed=$((leftovers_failed + 1))
fi
echo "{\"suite\":\"leftovers\",\"passed\":$((2 - leftovers_failed)),\"failed\":$leftovers_failed}" >> "$counts"

node -e '
  const lines = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse);
  const passed = lines.reduce((s, l) => s + l.passed, 0);
  const failed = lines.reduce((s, l) => s + l.failed, 0);
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed > 0 ? 1 : 0);
' "$counts"
status=$?
rm -f "$counts"
if [[ $cargo_status -ne 0 || $mocha_status -ne 0 || $fuzz_status -ne 0 ]]; then exit 1; fi
exit $status
