#!/usr/bin/env bash
# User-space instructions per request of any bench server, counted by
# callgrind (this VM has no hardware counters and its timings move by
# 10-40 % between runs). The server runs under valgrind with
# instrumentation off; WARM requests (20,000 unless told) on 1 connection x
# 20 streams let V8 finish compiling, then N requests are counted.
# PORT in the server's arguments is replaced by a free port; URL_PATH
# (default /login), LOAD_ARGS (e.g. "-method POST -body 4096"), CONNS and
# STREAMS (default 1 and 20) shape the load; TOP=1 also prints the functions above 1 %. Whole process,
# every thread, user space only (the kernel's UDP work is not counted).
#   bash bench/tools/callgrind-requests.sh <label> <requests> -- <node script and args>
#   bash bench/tools/callgrind-requests.sh demo 10000 -- bench/servers/h3-node.mjs a PORT
#   bash bench/tools/callgrind-requests.sh compat 10000 -- bench/servers/h3-node-compat.mjs PORT certs/demo-cert.pem certs/demo-key.pem
# The dump stays in bench/.work/callgrind/ for callgrind_annotate.
set -uo pipefail
cd "$(dirname "$0")/../.."
label=${1:?usage: callgrind-requests.sh <label> <requests> -- <script> [args]}
requests=${2:?requests}
shift 2
[ "${1:-}" = "--" ] && shift
command -v valgrind >/dev/null || { echo "callgrind-requests: valgrind is not installed (bash bench/setup.sh installs it)" >&2; exit 2; }
[ -x bench/loadclient/loadclient ] || { echo "callgrind-requests: build bench/loadclient first (bash bench/setup.sh)" >&2; exit 2; }
out=bench/.work/callgrind; mkdir -p "$out"
port=$((24000 + RANDOM % 1000))
args=("${@//PORT/$port}")
stamp=$(date +%s)
# The bench launchers read commands on stdin: keep it open and quiet.
sleep 3600 2>/dev/null | valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out/$label.$stamp.%p" \
  node "${args[@]}" > "$out/$label.$stamp.log" 2>&1 &
for _ in $(seq 180); do ss -ulpn | grep -q ":$port " && break; sleep 1; done
pid=$(ss -ulpn | grep ":$port " | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)
[ -n "$pid" ] || { echo "callgrind-requests: the server did not start (log: $out/$label.$stamp.log)" >&2; exit 1; }
trap 'kill "$pid" 2>/dev/null || true; pkill -P $$ -x sleep 2>/dev/null || true' EXIT
# shellcheck disable=SC2086 # LOAD_ARGS is a list of flags
load() { bench/loadclient/loadclient -url "https://127.0.0.1:$port${URL_PATH:-/login}" ${LOAD_ARGS:-} -conns "${CONNS:-1}" -streams "${STREAMS:-20}" -requests "$1" -timeout 120s; }
load "${WARM:-20000}" > /dev/null
callgrind_control -i on "$pid" > /dev/null 2>&1
load "$requests" | grep -o '"requests":[0-9]*,"errors":[0-9]*'
callgrind_control -i off "$pid" > /dev/null 2>&1
callgrind_control -d "$pid" > /dev/null 2>&1
sleep 2
dump=$(ls -t "$out"/$label.$stamp.*.1 | head -1)
total=$(callgrind_annotate --auto=no --threshold=100 "$dump" 2>/dev/null | grep "PROGRAM TOTALS" | awk '{print $1}' | tr -d ,)
if [ "${TOP:-0}" = 1 ]; then
  callgrind_annotate --auto=no --threshold=90 "$dump" 2>/dev/null | awk '/ \( *[1-9][0-9]*\.[0-9]+%\)/' | grep -v 'PROGRAM TOTALS' | head -30
fi
echo "$label: $total instructions, $((total / requests)) per request (dump: $dump)"
