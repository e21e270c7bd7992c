#!/usr/bin/env bash
# Writes an nftables ruleset that balances QUIC across machines by the
# QUIC-LB server ID in each packet's destination connection ID
# (draft-ietf-quic-load-balancers, plaintext IDs, as `quicLb` writes them),
# and prints it on stdout. Load it with `nft -f FILE`; loading it again
# replaces the table in one transaction (the first two lines), so a changed
# machine list goes in without a gap.
#
#   deploy/quic-lb-nft.sh --vip 203.0.113.10 --ingress eth0 --config-id 1 \
#       --server a1b2=10.0.1.11@eth1 --server c3d4=10.0.1.12@eth1 > quic-lb.nft
#
# Options:
#   --vip ADDR            the address clients send to (IPv4 or IPv6); every
#                         machine has it on `lo` (docs/deploy.md)
#   --port N              the UDP port (default 443)
#   --ingress DEV         the balancer's interface clients' packets arrive on
#   --config-id N         the machines' `quicLb.configId` (0-6)
#   --server ID=ADDR@DEV  one machine: its `quicLb.serverId` (hex, 1-15 bytes,
#                         the same length for all), its address on the link
#                         the balancer reaches it by, and that link
#   --table NAME          the nftables table (default quic_lb); run once per
#                         address family, with two tables, for dual stack
#
# What the rules do, per datagram to VIP:port, at the ingress hook (before
# routing and before conntrack, so there is no per-flow state at all):
#   1. A destination connection ID whose first byte carries --config-id in its
#      top three bits goes to the machine named by the server ID bytes after
#      it: short headers (the ID at byte 1) and long headers (the ID at byte 6,
#      its length at byte 5): every packet after the client's first flight,
#      before and after the client moves.
#   2. Anything else (a client's first Initials, whose ID the client chose; IDs
#      of other configurations or of a machine no longer listed) goes by a
#      hash of eight bytes of that ID, the same for every packet of the flight.
#   3. A datagram too short to hold a QUIC header is dropped.
# The datagram leaves unchanged (`fwd` to the machine's link address), so the
# machine sees the client's own address and answers it directly from the
# VIP: direct server return, the balancer never sees a reply.
set -euo pipefail

die() {
  echo "quic-lb-nft.sh: $*" >&2
  exit 2
}

command_line="deploy/quic-lb-nft.sh $*"
vip="" port=443 ingress="" config="" table="quic_lb"
ids=() addrs=() devs=()
while (($#)); do
  opt=$1
  (($# >= 2)) || die "$opt needs a value"
  val=$2
  shift 2
  case "$opt" in
    --vip) vip=$val ;;
    --port) port=$val ;;
    --ingress) ingress=$val ;;
    --config-id) config=$val ;;
    --table) table=$val ;;
    --server)
      [[ $val =~ ^([0-9A-Fa-f]+)=([^@]+)@(.+)$ ]] || die "--server takes ID=ADDR@DEV (hex ID, machine address, link), got '$val'"
      ids+=("${BASH_REMATCH[1],,}")
      addrs+=("${BASH_REMATCH[2]}")
      devs+=("${BASH_REMATCH[3]}")
      ;;
    *) die "unknown option $opt (see the header of this script)" ;;
  esac
done

family_of() {
  if [[ $1 =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
    echo ip
  elif [[ $1 == *:* && $1 =~ ^[0-9A-Fa-f:.]+$ ]]; then
    echo ip6
  else
    echo none
  fi
}

[[ -n $vip ]] || die "--vip is required"
fam=$(family_of "$vip")
[[ $fam != none ]] || die "--vip must be an IPv4 or IPv6 address, got '$vip'"
[[ -n $ingress ]] || die "--ingress is required (the interface clients' packets arrive on)"
[[ $port =~ ^[0-9]+$ ]] && ((port >= 1 && port <= 65535)) || die "--port must be 1 to 65535, got '$port'"
[[ $config =~ ^[0-6]$ ]] || die "--config-id must be 0 to 6 (7 marks IDs no balancer can route), got '${config:-nothing}'"
[[ $table =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "--table must be a plain name, got '$table'"
((${#ids[@]} >= 1)) || die "at least one --server is required"

hexlen=${#ids[0]}
for i in "${!ids[@]}"; do
  id=${ids[$i]}
  ((${#id} % 2 == 0)) || die "--server ${id}: the server ID must be whole bytes (an even number of hex digits)"
  ((${#id} >= 2 && ${#id} <= 30)) || die "--server ${id}: the server ID must be 1 to 15 bytes"
  ((${#id} == hexlen)) || die "--server ${id}: every server ID must be as long as the first (${ids[0]}, $((hexlen / 2)) byte(s))"
  [[ $(family_of "${addrs[$i]}") == "$fam" ]] || die "--server ${id}: '${addrs[$i]}' is not an address of the VIP's family ($fam)"
  for ((j = 0; j < i; j++)); do
    [[ ${ids[$j]} != "$id" ]] || die "--server ${id}: listed twice"
  done
done

n=${#ids[@]}
idbits=$((hexlen * 4))
idbytes=$((hexlen / 2))
# Bit offsets in nftables' transport-header base (@th): the UDP header is 8
# bytes, so the QUIC packet's first byte is bit 64.
first=64              # header form: the top bit of byte 0
short_dcid=72         # short header: the DCID from byte 1
long_dcid_len=104     # long header: byte 5, the DCID's length
long_dcid=112         # long header: the DCID from byte 6
config_bits=$(printf "0x%02x" $((config << 5)))

# A vmap's entries, one per machine: by server ID to id_<i> (id), or by
# hash bucket to hash_<i> (hash).
vmap_of() {
  local sep="" out="" key i
  for i in "${!ids[@]}"; do
    if [[ $1 == id ]]; then key="0x${ids[$i]}"; else key=$i; fi
    out+="${sep}${key} : goto ${1}_${i}"
    sep=", "
  done
  echo "$out"
}

cat <<EOF
#!/usr/sbin/nft -f
# QUIC-LB routing for ${vip} port ${port} (config ${config}, ${idbytes}-byte server IDs, ${n} machines),
# written by: ${command_line}
# Do not edit: run the script again (docs/deploy.md, "Many machines").
table netdev ${table}
delete table netdev ${table}

table netdev ${table} {
	chain ingress {
		type filter hook ingress device "${ingress}" priority filter; policy accept;
		${fam} daddr ${vip} udp dport ${port} jump quic
	}

	chain quic {
		# Short header, a routable ID: byte 1 carries the configuration, bytes 2.. the server ID.
		@th,${first},1 0 @th,${short_dcid},8 & 0xe0 == ${config_bits} @th,$((short_dcid + 8)),${idbits} vmap { $(vmap_of id) }
		# Long header (Handshake, and Initial or 0-RTT after the server's first answer), a routable ID.
		@th,${first},1 1 @th,${long_dcid_len},8 >= $((1 + idbytes)) @th,${long_dcid},8 & 0xe0 == ${config_bits} @th,$((long_dcid + 8)),${idbits} vmap { $(vmap_of id) }
		# A client's first flight, or an ID no listed machine issued: a hash of the ID's first eight bytes.
		@th,${first},1 1 @th,${long_dcid_len},8 >= 8 jhash @th,${long_dcid},64 mod ${n} vmap { $(vmap_of hash) }
		@th,${first},1 0 jhash @th,${short_dcid},64 mod ${n} vmap { $(vmap_of hash) }
		# Too short for any QUIC packet the machines accept.
		counter drop
	}
EOF
for i in "${!ids[@]}"; do
  cat <<EOF

	# Machine ${i}: server ID ${ids[$i]}, at ${addrs[$i]} on ${devs[$i]}.
	chain id_${i} {
		counter
		fwd ${fam} to ${addrs[$i]} device "${devs[$i]}"
	}

	chain hash_${i} {
		counter
		fwd ${fam} to ${addrs[$i]} device "${devs[$i]}"
	}
EOF
done
echo "}"
