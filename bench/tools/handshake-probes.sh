#!/usr/bin/env bash
# Counts what one fresh connection costs in BoringSSL calls, on the real
# server: uprobes on the addon's signing, key-exchange, context and
# certificate entry points, then W2's traffic (fresh connections, one
# GET /login each) and the calls per connection. Proves that the signing key
# works once per handshake (one ECDSA_sign) and that nothing built once per
# server (SSL_CTX, the parsed certificate and key) is built again per
# connection. Needs root (tracefs) and perf; the probes are removed at exit.
#   bench/tools/handshake-probes.sh [connections=500] [--native]
# --native runs the bench addon variant's native handler (no JavaScript
# request path; `npm run build:native:bench` first).
set -euo pipefail
cd "$(dirname "$0")/../.."
n=${1:-500}
addon=$PWD/dist/native/$(ls dist/native | grep '\.node$' | head -1)
extra=()
if [[ ${2:-} == --native ]]; then
  addon=$PWD/bench/.work/addon-bench/$(ls bench/.work/addon-bench | grep '\.node$' | head -1)
  extra=(--native a --addon "$addon")
fi
symbols=$(nm "$addon")
tracing=/sys/kernel/tracing
group=h3hs
# File offset of a symbol: its address minus the text segment's address-offset gap.
read -r text_offset text_addr < <(readelf -lW "$addon" | awk '$1 == "LOAD" && / R E / { print $2, $3; exit }')
gap=$((text_addr - text_offset))
probes=(
  ECDSA_sign "signing key (CertificateVerify)"
  SSL_new "TLS connection objects"
  SSL_free ""
  SSL_CTX_new "TLS contexts (once per server)"
  PEM_read_bio_X509 "certificate parsed from PEM (once per server)"
  PEM_read_bio_PrivateKey "private key parsed (once per server)"
  X25519_keypair "key exchange: X25519 key pair"
  X25519 "key exchange: X25519 shared secret"
  MLKEM768_encap "key exchange: ML-KEM-768 encapsulation (X25519MLKEM768)"
  _ZN4bssl18ssl_encrypt_ticketEPNS_13SSL_HANDSHAKEEP6cbb_stPKNS_10SSLSessionE "session tickets issued"
  RAND_bytes "random bytes drawn"
  HKDF_expand "HKDF expansions (key schedule, QUIC keys)"
  EVP_AEAD_CTX_seal_scatter "packets sealed (AEAD)"
  EVP_AEAD_CTX_open "packets opened (AEAD)"
)
added=()
cleanup() {
  for p in "${added[@]}"; do echo "-:$group/$p" >> $tracing/uprobe_events 2>/dev/null || true; done
  if [[ -n ${server:-} ]]; then kill "$server" 2>/dev/null || true; fi
}
trap cleanup EXIT
for ((i = 0; i < ${#probes[@]}; i += 2)); do
  sym=${probes[i]}
  addr=$(awk -v s="$sym" '$3 == s && ($2 == "t" || $2 == "T") { print $1; exit }' <<< "$symbols")
  if [[ -z $addr ]]; then
    echo "no symbol $sym in $addon" >&2
    continue
  fi
  name=p$((i / 2))
  printf 'p:%s/%s %s:0x%x\n' $group $name "$addon" $((0x$addr - gap)) >> $tracing/uprobe_events
  added+=("$name")
done
port=$((19000 + RANDOM % 300))
out=$(mktemp)
setsid taskset -c 0 node bench/servers/h3-node.mjs a $port "${extra[@]}" > "$out" 2> /dev/null < /dev/null &
server=$!
for _ in $(seq 1 100); do grep -q listening "$out" && break; sleep 0.1; done
url=https://127.0.0.1:$port/login
taskset -c 1 bench/loadclient/loadclient -url $url -fresh -requests 50 > /dev/null
counts=$(perf stat -x, -e "$group:*" -p $server -- taskset -c 1 bench/loadclient/loadclient -url $url -fresh -requests "$n" 2>&1 >/dev/null)
echo "$n fresh connections, $(basename "$addon")$([[ ${2:-} == --native ]] && echo ' (native handler)')"
printf '%-28s %10s %14s  %s\n' function calls "per connection" what
for ((i = 0; i < ${#probes[@]}; i += 2)); do
  c=$(echo "$counts" | awk -F, -v e="$group:p$((i / 2))" '$3 == e { print $1 }')
  if [[ -z $c ]]; then continue; fi
  sym=${probes[i]}
  if [[ $sym == _ZN4bssl18ssl_encrypt_ticket* ]]; then sym=ssl_encrypt_ticket; fi
  printf '%-28s %10s %14s  %s\n' "$sym" "$c" "$(awk -v c="$c" -v n="$n" 'BEGIN { printf "%.2f", c / n }')" "${probes[i + 1]}"
done
