#!/usr/bin/env bash
# Runs every test: the Rust unit tests, then the mocha suites against the
# built addon. Prints "N passed, N failed" last, counted from the real runs,
# and exits non-zero when anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."

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

# The benchmark's addon variant (cargo feature bench-handler) for
# test/bench-harness.test.ts; cargo reuses everything but the two crates.
npm run --silent build:native:bench || echo "build:native:bench failed; test/bench-harness.test.ts will say so"

# Every suite unless files are named: `npm test -- test/cli.test.ts`. The glob
# is here rather than in .mocharc.json, where mocha would add it to the files
# named on the command line, so `npx mocha test/x.test.ts` runs just that file.
if [[ $# -eq 0 ]]; then set -- 'test/**/*.test.ts'; fi
npx mocha "$@"
mocha_status=$?
if ! grep -q '"suite":"mocha"' "$counts"; then
  echo '{"suite":"mocha","passed":0,"failed":1}' >> "$counts"   # mocha died before reporting
fi

# Fuzzing, short: each cargo-fuzz target for 20 s (`npm run fuzz` runs 10 min
# each); every target counts as one test.
npm run --silent fuzz:ci
fuzz_status=$?

node -e '
  const lines = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse);
  const passed = lines.reduce((s, l) => s + l.passed, 0);
  const failed = lines.reduce((s, l) => s + l.failed, 0);
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed > 0 ? 1 : 0);
' "$counts"
status=$?
rm -f "$counts" "$cargo_out"
if [[ $cargo_status -ne 0 || $mocha_status -ne 0 || $fuzz_status -ne 0 ]]; then exit 1; fi
exit $status
