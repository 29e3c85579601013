#!/bin/bash
# The direct and block outbounds (no server, no proxy).
#
#   tsc$$ 10.77.1.1 ------ 10.77.1.2 tss$$ 10.77.2.1 ------ 10.77.2.2 tst$$
#   app -> ts0 -> tunsplit   forwards (this test only)          target :9000
#   client (direct, mark 0x7353)
#
#   tsc routing:  main table   10.77.2.0/24, fd77:2::/64 dev ts0 (the apps)
#                 fwmark 0x7353 -> table 7353: the same nets via tss
#
# direct: each flow is a fresh TCP connection from the client to the
# target, marked, so it leaves by eth0 instead of looping into ts0.  The
# mark is checked twice: the transfers only work when the policy rule
# catches the sockets, and an nftables counter on output packets with the
# mark to the target must have counted them.  Also: v4 and v6, 8 MiB each
# way with SHA-256, concurrent flows, a closed port resets the app
# (ECONNREFUSED in connect_mode faithful).
# block: every TCP flow's SYN is answered with an RST, counted.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_direct_block

MARK=0x7353
N=$((8 << 20))
TS_APP_TIMEOUT=120
closed=9999

client_conf() {	# PROTOCOL [EXTRA-YAML]
	cat >"$TS_TMP/client.yaml" <<EOF
log: {level: info, flows: true}
control: $TS_TMP/client.sock
tun: {name: $TS_TUN, mtu: 9000, address: [198.18.0.1/15, "fdfe:dcba:9876::1/64"]}
client:
  protocol: $1
  connect_timeout: 10s
${2:-}
EOF
	"$TUNSPLIT" check -c "$TS_TMP/client.yaml" >"$TS_TMP/check.log" 2>&1 ||
	    ts_fail "tunsplit check: $(cat "$TS_TMP/check.log")"
}

restart_client() {
	if [ -n "${TS_CLIENT_PID:-}" ] && ts_alive "$TS_CLIENT_PID"; then
		kill -TERM "$TS_CLIENT_PID" 2>/dev/null
		wait "$TS_CLIENT_PID" 2>/dev/null
	fi
	ts_start_client
}

app() {
	ts_app "$@" >>"$TS_TMP/apps.log" 2>&1 ||
	    ts_fail "$*: $(tail -n 1 "$TS_TMP/apps.log")"
	ts_log "  $(tail -n 1 "$TS_TMP/apps.log")"
}

ts_topology_up
ts_start_target
# The direct path exists only for marked sockets: the server namespace
# forwards here, and tsc routes the target's nets via tss in a table only
# marked traffic looks up.
ts_sysctl "$NS_S" net/ipv4/ip_forward 1
ts_sysctl "$NS_S" net/ipv6/conf/all/forwarding 1
ts_sysctl "$NS_C" net/ipv4/conf/all/rp_filter 0
ts_sysctl "$NS_C" net/ipv4/conf/default/rp_filter 0
ip -n "$NS_C" rule add fwmark "$MARK" lookup 7353 pref 100 ||
    ts_fail "ip rule"
ip -n "$NS_C" -6 rule add fwmark "$MARK" lookup 7353 pref 100 ||
    ts_fail "ip -6 rule"
ip -n "$NS_C" route add "$TS_T_NET4" via "$TS_S_ADDR4" table 7353
ip -n "$NS_C" -6 route add "$TS_T_NET6" via "$TS_S_ADDR6" table 7353
nft=
if command -v nft >/dev/null 2>&1 && ip netns exec "$NS_C" nft -f - <<EOF
table inet tsmark {
	chain out {
		type filter hook output priority 0; policy accept;
		meta mark $MARK ip daddr $TS_T_ADDR4 tcp dport $TS_TARGET_PORT counter
		meta mark $MARK ip6 daddr $TS_T_ADDR6 tcp dport $TS_TARGET_PORT counter
	}
}
EOF
then
	nft=1
else
	ts_log "no nftables: the mark is proven by the routing alone"
fi

# A direct config without a mark is refused, clearly.
cat >"$TS_TMP/nomark.yaml" <<EOF
client:
  protocol: direct
EOF
if "$TUNSPLIT" check -c "$TS_TMP/nomark.yaml" >"$TS_TMP/nomark.log" 2>&1; then
	ts_fail "protocol direct without a mark accepted"
fi
grep -q "needs a mark" "$TS_TMP/nomark.log" ||
    ts_fail "no clear error for direct without a mark: $(cat "$TS_TMP/nomark.log")"

# ---- direct -------------------------------------------------------------------
client_conf direct "  mark: $MARK"
ts_start_client
seed=10
for host in "$TS_T_ADDR4" "$TS_T_ADDR6"; do
	seed=$((seed + 1))
	app recv --host "$host" --port "$TS_TARGET_PORT" --bytes "$N" --seed "$seed"
	app send --host "$host" --port "$TS_TARGET_PORT" --bytes "$N" --seed "$seed"
done
app multi --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --conns 12 \
    --bytes 1m --seed 20
app halfclose --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --seed 30
for host in "$TS_T_ADDR4" "$TS_T_ADDR6"; do
	app refused --host "$host" --port "$closed" --within 3
done
# The target saw the client's own address, not a server's.
grep -q "\[$TS_C_ADDR4\]:[0-9]* SEND" "$TS_TMP/target.log" ||
    ts_fail "the target did not see connections from $TS_C_ADDR4"
grep -q "\[$TS_C_ADDR6\]:[0-9]* SEND" "$TS_TMP/target.log" ||
    ts_fail "the target did not see connections from $TS_C_ADDR6"
if [ -n "$nft" ]; then
	out=$(ip netns exec "$NS_C" nft list table inet tsmark)
	pk=$(grep -o 'packets [0-9]*' <<<"$out" | awk '{ print $2 }')
	for p in $pk; do
		[ "$p" -gt 0 ] || ts_fail "no marked packets counted: $out"
	done
	ts_log "  nftables: marked packets to the target: $(echo $pk)"
fi
ts_log "direct passed"

client_conf direct "  mark: $MARK
  connect_mode: faithful"
restart_client
app recv --host "$TS_T_ADDR6" --port "$TS_TARGET_PORT" --bytes "$N" --seed 40
for host in "$TS_T_ADDR4" "$TS_T_ADDR6"; do
	app refused --host "$host" --port "$closed" --within 3
	grep -q ECONNREFUSED <(tail -n 1 "$TS_TMP/apps.log") ||
	    ts_fail "faithful: want the SYN refused: $(tail -n 1 "$TS_TMP/apps.log")"
done
# No route for the marked socket: its connect fails at once (nothing is
# sent), and the app's SYN is refused rather than dropped and retried.
ip -n "$NS_C" route replace unreachable "$TS_T_NET4" table 7353 ||
    ts_fail "ip route unreachable"
app refused --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --within 3
grep -q ECONNREFUSED <(tail -n 1 "$TS_TMP/apps.log") ||
    ts_fail "faithful, no route: want the SYN refused: $(tail -n 1 "$TS_TMP/apps.log")"
grep -q "target: .*: refused" "$TS_TMP/client.log" ||
    ts_fail "faithful, no route: no log line naming it"
ip -n "$NS_C" route replace "$TS_T_NET4" via "$TS_S_ADDR4" table 7353
app recv --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --bytes 1m --seed 41
ts_log "direct, faithful passed (refused port, no route)"

# ---- block ----------------------------------------------------------------------
client_conf block
restart_client
for host in "$TS_T_ADDR4" "$TS_T_ADDR6" "$TS_T_ADDR4"; do
	app refused --host "$host" --port "$TS_TARGET_PORT" --within 2
	grep -q ECONNREFUSED <(tail -n 1 "$TS_TMP/apps.log") ||
	    ts_fail "block: want the SYN refused: $(tail -n 1 "$TS_TMP/apps.log")"
done
st=$(ip netns exec "$NS_C" "$TUNSPLIT" status --json -s "$TS_TMP/client.sock") ||
    ts_fail "tunsplit status failed"
grep -q '"syn_refused":3' <<<"$st" || ts_fail "block: SYNs not counted: $st"
ts_alive "$TS_CLIENT_PID" || ts_fail "the client died"
kill -TERM "$TS_CLIENT_PID"
wait "$TS_CLIENT_PID" 2>/dev/null
# One exit line per worker process: their sum.
n=$(ts_log_sum 's/.*client stopped: .*, \([0-9][0-9]*\) blocked,.*/\1/p' \
    "$TS_TMP/client.log")
[ "$n" -eq 3 ] ||
    ts_fail "block: the exit lines count $n blocked flows, not 3"
ts_pass "direct (marked; v4+v6, 8 MiB each way, 12 concurrent, half-close, refused; faithful) and block (SYN reset, counted)"
