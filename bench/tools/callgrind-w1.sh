#!/usr/bin/env bash
# Instructions per W1 request through the native handler, counted by
# callgrind: exact where this VM's timings move by 10-40 % between runs.
# The server runs under valgrind with instrumentation off; 3,000 W1
# requests (1 connection x 20 streams) warm it, then instrumentation is
# switched on for N requests (10,000 unless told) and the counts dumped.
# Whole process, user space only (the kernel's UDP work is not counted).
#   bash bench/tools/callgrind-w1.sh <addon .node built with bench-handler> [requests]
# Prints the total and the functions above 1 %; the dump stays in
# bench/.work/callgrind/ for callgrind_annotate. Build the addon with
# `npm run build:native:bench` (bench/.work/addon-bench/h3core.linux-x64-gnu.node).
set -euo pipefail
cd "$(dirname "$0")/../.."
addon=${1:?usage: callgrind-w1.sh <addon.node> [requests]}
requests=${2:-10000}
command -v valgrind >/dev/null || { echo "callgrind-w1: valgrind is not installed (bash bench/setup.sh installs it)" >&2; exit 2; }
[ -x bench/loadclient/loadclient ] || { echo "callgrind-w1: build bench/loadclient first (bash bench/setup.sh)" >&2; exit 2; }
out=bench/.work/callgrind; mkdir -p "$out"
port=$((24000 + RANDOM % 1000))
stamp=$(date +%s)
# The launcher reads commands on stdin: keep it open and quiet.
sleep 3600 2>/dev/null | valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out/w1.$stamp.%p" \
  node bench/servers/h3-node.mjs a "$port" --native a --addon "$addon" > "$out/w1.$stamp.log" 2>&1 &
for _ in $(seq 180); do ss -ulpn | grep -q ":$port " && break; sleep 1; done
pid=$(ss -ulpn | grep ":$port " | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)
[ -n "$pid" ] || { echo "callgrind-w1: the server did not start (log: $out/w1.$stamp.log)" >&2; exit 1; }
# The stdin-holding sleep goes too, or a reader of this script's output waits an hour.
trap 'kill "$pid" 2>/dev/null || true; pkill -P $$ -x sleep 2>/dev/null || true' EXIT
load() { bench/loadclient/loadclient -url "https://127.0.0.1:$port/login" -conns 1 -streams 20 -requests "$1" -timeout 60s; }
load 3000 > /dev/null
callgrind_control -i on "$pid" > /dev/null
load "$requests" | grep -o '"requests":[0-9]*,"errors":[0-9]*'
callgrind_control -i off "$pid" > /dev/null
callgrind_control -d "$pid" > /dev/null
sleep 2
dump=$(ls "$out"/w1.$stamp.*.1 | head -1)
callgrind_annotate --auto=no --threshold=90 "$dump" 2>/dev/null | awk '/PROGRAM TOTALS/ || / \( *[1-9][0-9]*\.[0-9]+%\)/' | head -30
echo "dump: $dump"
