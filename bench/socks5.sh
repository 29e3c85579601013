#!/bin/bash
# bench/socks5.sh: tunsplit's TUN stack in front of a SOCKS5 proxy, single
# flow, compared in the same run with the same transfer through the same
# proxy without the TUN, and with plain TCP.
#
#   (as root) TUNSPLIT=build/tunsplit bench/socks5.sh [SIZE_MIB [RUNS]]
#
#   tsc$$ 10.77.1.1 ------------ 10.77.1.2 tss$$ 10.77.2.1 ---- 10.77.2.2 tst$$
#   curl                           danted :1080 (no auth)         nginx :8080
#   tunsplit client (socks5)       forwards (for "plain")         /big
#
# Three paths, one curl download of SIZE MiB each (default 512), RUNS
# rounds (default 5) interleaved so that load from elsewhere hits all
# three alike; the median of each is reported:
#   tun    curl -> ts0 -> tunsplit client (protocol: socks5) -> danted -> nginx
#   socks  curl --socks5 10.77.1.2:1080 -> danted -> nginx   (curl speaks SOCKS)
#   plain  curl -> routed through tss -> nginx                (no proxy)
# plus the tunsplit client's CPU time (user + system, its workers' too)
# per GiB on the tun path.  DELAY=MS adds that much one-way delay (netem)
# on the client's link, both directions, when tc is available;
# TS_CLIENT_WORKERS=N gives the client N workers.  Needs root, danted
# (dante-server), nginx and curl; uses the namespaces of tests/netns/lib.sh
# and leaves nothing behind.
set -u
TS_DEADLINE=1800
. "$(dirname "$0")/../tests/netns/lib.sh"
ts_init bench_socks5

SIZE=${1:-512}
RUNS=${2:-5}
DELAY=${DELAY:-0}
DANTE_PORT=1080
HTTP_PORT=8080
DANTED=$(command -v danted || echo /usr/sbin/danted)
[ -x "$DANTED" ] || ts_skip "danted not found (apt-get install dante-server)"
command -v curl >/dev/null || ts_skip "curl not found"
TCK=$(getconf CLK_TCK)

ts_topology_up
ts_sysctl "$NS_S" net/ipv4/ip_forward 1
if [ "$DELAY" != 0 ]; then
	ip netns exec "$NS_C" tc qdisc add dev eth0 root netem delay "${DELAY}ms" &&
	    ip netns exec "$NS_S" tc qdisc add dev eth0 root netem delay "${DELAY}ms" ||
	    ts_skip "DELAY=$DELAY needs tc with netem (kernel module sch_netem)"
fi
mkdir -p "$TS_TMP/www"
truncate -s "${SIZE}M" "$TS_TMP/www/big"
ts_start_http "$TS_TMP/www" "$HTTP_PORT"

sed -e "s/@INTERNAL@/$TS_S_ADDR4/" -e "s/@PORT@/$DANTE_PORT/" \
    -e "s/@EXTERNAL@/eth1/" "$(dirname "$0")/danted.conf" \
    >"$TS_TMP/danted.conf" || ts_fail "cannot write danted.conf"
ts_bg "$NS_S" danted "$DANTED" -f "$TS_TMP/danted.conf" \
    -p "$TS_TMP/danted.pid" -N 1
ts_wait_port "$NS_S" "$DANTE_PORT" 10 "$TS_LAST_PID" ||
    ts_fail "danted did not listen"

cat >"$TS_TMP/client.yaml" <<EOF
log: {level: warn}
control: $TS_TMP/client.sock
tun: {name: $TS_TUN, mtu: 9000, address: [198.18.0.1/15, "fdfe:dcba:9876::1/64"]}
client:
  protocol: socks5
  server: "$TS_S_ADDR4:$DANTE_PORT"${TS_CLIENT_WORKERS:+
  workers: $TS_CLIENT_WORKERS}
EOF
ts_start_client

URL=http://$TS_T_ADDR4:$HTTP_PORT/big
BYTES=$((SIZE << 20))

# cpu_ticks PID: the client's and its workers' clock ticks.
. "$(dirname "$0")/cpu.sh"

# one PATH: prints "bytes_per_s client_cpu_ticks"
one() {
	local path=$1 out c0 c1 extra=()
	case $path in
	tun)	ip -n "$NS_C" route replace "$TS_T_NET4" dev "$TS_TUN" ;;
	plain)	ip -n "$NS_C" route replace "$TS_T_NET4" via "$TS_S_ADDR4" ;;
	socks)	extra=(--socks5 "$TS_S_ADDR4:$DANTE_PORT") ;;
	esac
	c0=$(cpu_ticks "$TS_CLIENT_PID")
	out=$(ip netns exec "$NS_C" timeout 300 curl -s -o /dev/null \
	    "${extra[@]}" -w '%{size_download} %{speed_download}' "$URL") ||
	    ts_fail "$path: curl failed ($out)"
	c1=$(cpu_ticks "$TS_CLIENT_PID")
	set -- $out
	[ "$1" = "$BYTES" ] || ts_fail "$path: got $1 bytes, want $BYTES"
	echo "${2%.*} $((c1 - c0))"
}

declare -A rate cpu
for p in tun socks plain; do rate[$p]=""; cpu[$p]=""; done
one tun >/dev/null	# warm-up
for r in $(seq "$RUNS"); do
	for p in tun socks plain; do
		set -- $(one "$p")
		rate[$p]="${rate[$p]} $1"
		cpu[$p]="${cpu[$p]} $2"
		ts_log "run $r $p: $(awk -v b="$1" 'BEGIN { printf "%.0f Mbit/s", b * 8 / 1e6 }')"
	done
done
ip -n "$NS_C" route replace "$TS_T_NET4" dev "$TS_TUN"

median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
tun=$(median <<<"${rate[tun]}")
socks=$(median <<<"${rate[socks]}")
plain=$(median <<<"${rate[plain]}")
ticks=$(median <<<"${cpu[tun]}")
idle=$(median <<<"${cpu[socks]}")
awk -v t="$tun" -v s="$socks" -v p="$plain" -v k="$ticks" -v i="$idle" \
    -v hz="$TCK" -v size="$SIZE" -v runs="$RUNS" -v delay="$DELAY" 'BEGIN {
	gib = size / 1024
	printf "\nsingle flow, %d MiB download x %d runs (median), one-way delay %s ms\n", size, runs, delay
	printf "  %-40s %8.0f Mbit/s\n", "tun: app -> tunsplit (socks5) -> danted", t * 8 / 1e6
	printf "  %-40s %8.0f Mbit/s\n", "socks: curl --socks5 -> danted", s * 8 / 1e6
	printf "  %-40s %8.0f Mbit/s\n", "plain: curl -> routed", p * 8 / 1e6
	printf "  ratio tun/socks %.2f, tun/plain %.2f, socks/plain %.2f\n", t / s, t / p, s / p
	printf "  tunsplit client CPU: %.2f s per GiB (user+system; %.2f s while idle on the socks path)\n", k / hz / gib, i / hz / gib
}' | tee "$TS_TMP/result.txt"
ts_alive "$TS_CLIENT_PID" || ts_fail "the client died"
ts_pass "$(tr '\n' ' ' <"$TS_TMP/result.txt")"
