#!/usr/bin/env bash
# Runs every cargo-fuzz target in fuzz/ for SECONDS each, one after the
# other, and prints one line per target: executions, edge coverage (libFuzzer
# "cov"), features ("ft") and corpus size. A crash, leak, timeout or
# out-of-memory fails that target (its input is kept in fuzz/artifacts/).
#
#   bash scripts/fuzz.sh 20      # npm run fuzz:ci (part of npm test)
#   bash scripts/fuzz.sh 600     # npm run fuzz (the long run in docs/reliability.md)
#
# With TEST_COUNTS_FILE set (scripts/test.sh), each target counts as one test.
set -uo pipefail
cd "$(dirname "$0")/.."
secs=${1:-20}
targets=(frame_reader request_validation stream_classifier)

# cargo-fuzz passes nightly-only -Z flags (-Zsanitizer=address); the stable
# toolchain accepts them with RUSTC_BOOTSTRAP, so no nightly is needed.
export RUSTC_BOOTSTRAP=1
if ! command -v cargo-fuzz >/dev/null 2>&1; then
  start=$(date +%s)
  cargo install cargo-fuzz --version 0.13.2 --locked || { echo "cannot install cargo-fuzz"; exit 1; }
  echo "fuzz: cargo-fuzz installed in $(( $(date +%s) - start )) s"
fi

# fuzz/Cargo.toml builds against our patched quiche, as the addon does.
bash scripts/patch-quiche.sh || { echo "fuzz: patch-quiche failed"; exit 1; }
start=$(date +%s)
if ! (cd fuzz && nice cargo fuzz build -O); then
  echo "fuzz: build failed"
  [[ -n "${TEST_COUNTS_FILE:-}" ]] && echo "{\"suite\":\"fuzz\",\"passed\":0,\"failed\":${#targets[@]}}" >> "$TEST_COUNTS_FILE"
  exit 1
fi
echo "fuzz: build took $(( $(date +%s) - start )) s"

passed=0
failed=0
summary=()
for t in "${targets[@]}"; do
  # New inputs go to fuzz/work (not committed); fuzz/corpus holds the seeds.
  mkdir -p "fuzz/work/$t" "fuzz/artifacts/$t"
  log="fuzz/work/$t.log"
  (cd fuzz && nice cargo fuzz run -O "$t" "work/$t" "corpus/$t" -- \
      -max_total_time="$secs" -timeout=10 -print_final_stats=1) > "$log" 2>&1
  status=$?
  done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1)
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -Eo 'cov: [0-9]+' <<<"$done_line" | awk '{print $2}')
  ft=$(grep -Eo 'ft: [0-9]+' <<<"$done_line" | awk '{print $2}')
  corp=$(grep -Eo 'corp: [0-9]+' <<<"$done_line" | awk '{print $2}')
  rate=$(grep -Eo 'exec/s: [0-9]+' <<<"$done_line" | awk '{print $2}')
  if [[ $status -eq 0 && -n "$done_line" ]]; then
    passed=$((passed + 1))
    summary+=("fuzz $t: ok, ${secs} s, ${runs:-?} executions (${rate:-?}/s), cov ${cov:-?}, ft ${ft:-?}, corpus ${corp:-?}")
  else
    failed=$((failed + 1))
    summary+=("fuzz $t: FAILED (exit $status), see $log and fuzz/artifacts/$t/")
    grep -E 'ERROR|panicked|SUMMARY|Test unit written' "$log" | head -5
  fi
done
printf '%s\n' "${summary[@]}"
[[ -n "${TEST_COUNTS_FILE:-}" ]] && echo "{\"suite\":\"fuzz\",\"passed\":$passed,\"failed\":$failed}" >> "$TEST_COUNTS_FILE"
[[ $failed -eq 0 ]]
