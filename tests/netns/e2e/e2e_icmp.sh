#!/bin/bash
# ICMP echo through the tunnel reports the real round trip.
#
# The topology of lib.sh, but the server-target link is the project's link
# emulator (bench/linkem) with a 50 ms one-way delay instead of a veth:
#
#   tsc (ping) --veth-- tss (tunsplit server) ==linkem 50 ms== tst (target)
#
# The server pings the target for real, so the app must see >= 100 ms and
# never the sub-millisecond answer of a stack that replies by itself; each
# reply's RTT must be at least the RTT the server measured for it (logged
# at debug).  An address where nobody answers gets no reply at all.  Runs
# with the server on raw ICMP sockets (root outside ping_group_range) and
# again on ICMP datagram sockets (ping_group_range opened).
. "$(dirname "$0")/../lib.sh"
ts_init e2e_icmp

command -v ping >/dev/null 2>&1 || ts_skip "missing tool: ping"
ts_find_linkem
DELAY=50

ts_topology_up
# The emulated link replaces the server-target veth.
ip -n "$NS_T" link del eth0 || ts_fail "cannot remove the target veth"
ts_start_linkem linkem "$NS_S" --a-netns "/run/netns/$NS_S" --a-name eth1 \
    --b-netns "/run/netns/$NS_T" --b-name eth0 --delay "$DELAY" --mtu 9000
ip -n "$NS_S" link set eth1 up
ip -n "$NS_T" link set eth0 up
ip -n "$NS_S" addr add "$TS_S2_ADDR4/24" dev eth1
ip -n "$NS_S" addr add "$TS_S2_ADDR6/64" dev eth1 nodad
ip -n "$NS_T" addr add "$TS_T_ADDR4/24" dev eth0
ip -n "$NS_T" addr add "$TS_T_ADDR6/64" dev eth0 nodad
ip -n "$NS_T" route add default via "$TS_S2_ADDR4"
ip -n "$NS_T" -6 route add default via "$TS_S2_ADDR6"
ts_log "server-target link: linkem, ${DELAY} ms each way"

# The link itself: the server's own ping sees the delay.
direct=$(ip netns exec "$NS_S" ping -c 2 -W 3 "$TS_T_ADDR4" |
    sed -n 's/.*time=\([0-9.]*\) ms/\1/p' | tail -n 1)
[ -n "$direct" ] || ts_fail "target not reachable over linkem"
ts_log "direct ping server -> target: $direct ms"

ts_make_pki
TS_LOG_LEVEL=debug ts_write_configs
ts_start_target
ts_prove_no_forward "$TS_TARGET_PORT"
ts_start_server
ts_start_client

# check_ping LABEL HOST MODE: 4 echoes, every one >= 2 * DELAY and >= the
# server's own measurement for that sequence number.
check_ping() {
	local label=$1 host=$2 mode=$3 log=$TS_TMP/ping-$1.log seq t srv
	local n=0 slo
	ip netns exec "$NS_C" ping -c 4 -i 0.5 -W 3 "$host" >"$log" 2>&1 ||
	    ts_fail "$label: ping failed: $(tail -n 3 "$log")"
	while read -r seq t; do
		n=$((n + 1))
		awk -v t="$t" -v d="$DELAY" 'BEGIN { exit !(t >= 2 * d) }' ||
		    ts_fail "$label: seq $seq took $t ms, less than $((2 * DELAY)) ms"
		srv=$(grep "echo reply from .*${host}.* seq $seq: rtt" \
		    "$TS_TMP/server.log" | tail -n 1 |
		    sed 's/.*rtt \([0-9.]*\) ms/\1/')
		[ -n "$srv" ] || ts_fail "$label: no server RTT logged for seq $seq"
		# ping prints whole milliseconds from 100 ms up ("time=101
		# ms" for 101.9): compare within that resolution.
		awk -v t="$t" -v s="$srv" 'BEGIN { exit !(t + 1 > s) }' ||
		    ts_fail "$label: seq $seq: app RTT $t ms below the server's $srv ms"
		slo="$slo $seq:${t}/${srv}"
	done < <(sed -n 's/.*icmp_seq=\([0-9]*\) .*time=\([0-9.]*\) ms/\1 \2/p' \
	    "$log")
	[ "$n" -eq 4 ] || ts_fail "$label: $n replies of 4"
	grep -q "icmp socket for IPv[46]$mode\$" "$TS_TMP/server.log" ||
	    ts_fail "$label: server did not use a${mode:- datagram} socket"
	ts_log "$label: seq:app/server ms$slo"
}

check_ping "IPv4 raw" "$TS_T_ADDR4" " (raw)"
check_ping "IPv6 raw" "$TS_T_ADDR6" " (raw)"

# Nobody at this address: no reply may come, from lwIP or anyone else.
if ip netns exec "$NS_C" ping -c 2 -i 0.5 -W 2 10.77.2.99 \
    >"$TS_TMP/ping-none.log" 2>&1; then
	ts_fail "a reply from 10.77.2.99, where nobody answers: $(cat "$TS_TMP/ping-none.log")"
fi
grep -q " 0 received" "$TS_TMP/ping-none.log" ||
    ts_fail "unexpected ping output: $(cat "$TS_TMP/ping-none.log")"
ts_log "no reply from an address nobody answers for"

# ICMP datagram sockets when the group range allows them.
ts_sysctl "$NS_S" net/ipv4/ping_group_range "0 2147483647"
check_ping "IPv4 dgram" "$TS_T_ADDR4" ""
check_ping "IPv6 dgram" "$TS_T_ADDR6" ""

ts_check_alive
ts_pass "ping through the tunnel shows the real RTT (>= $((2 * DELAY)) ms, >= the server's), raw and datagram ICMP sockets, no reply from nowhere"
