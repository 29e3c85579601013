#!/bin/bash
# Named outbounds (issue 16): one client with three -- a tunsplit server,
# direct, and block -- and client.final choosing each in turn on SIGHUP.
#
#   tsc$$ 10.77.1.1 ------ 10.77.1.2 tss$$ 10.77.2.1 ------ 10.77.2.2 tst$$
#   app -> ts0 -> tunsplit client       tunsplit server         target :9000
#     outbound tunnel: TLS to tss:8443  (forwards marked          UDP echo :7
#     outbound home:   direct, marked    traffic of tsc's only
#     outbound ads:    block             by tsc's policy routes)
#
#   tsc routing:  main table   10.77.2.0/24, fd77:2::/64 dev ts0 (the apps)
#                 fwmark 0x7353 -> table 7353: the same nets via tss
#
# The target logs where each connection came from: through the tunnel it
# is the server's 10.77.2.1, direct it is the client's own 10.77.1.1.
#  1. final: tunnel -- download and upload, v4 and v6, SHA-256 checked,
#     from the server's address; a UDP echo; the flow log names the
#     outbound and "final"; status --flows names it for a live flow.
#  2. final: home (SIGHUP) -- the same transfers now come from the client's
#     own address; a flow started before the reload on the tunnel finishes
#     there, intact.
#  3. final: ads (SIGHUP) -- a TCP connect is refused at once (RST), a UDP
#     datagram gets ICMP "administratively prohibited" (EHOSTUNREACH on a
#     connected socket; EACCES for IPv6), a ping gets the same.
#  4. the per-outbound counters in status --json and the Prometheus
#     series carry each outbound's name.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_outbounds

MARK=0x7353
N=$((2 << 20))
TS_APP_TIMEOUT=60

ts_topology_up
ts_make_pki
ts_write_configs
ts_start_target
ts_start_udpecho 7
ts_prove_no_forward "$TS_TARGET_PORT"

# The direct way: tss forwards, and only marked sockets of tsc use it.
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

# client_conf FINAL: the list form, final chosen.
client_conf() {
	umask 077
	{
		ts_client_outbounds 10s "      pool: 1"
		cat <<EOF
    - name: ads
      protocol: block
  final: $1
EOF
	} >"$TS_TMP/client.yaml"
	umask 022
	"$TUNSPLIT" check -c "$TS_TMP/client.yaml" >"$TS_TMP/check.log" 2>&1 ||
	    ts_fail "tunsplit check: $(cat "$TS_TMP/check.log")"
}

app() {
	ts_app "$@" >>"$TS_TMP/apps.log" 2>&1 ||
	    ts_fail "$*: $(tail -n 1 "$TS_TMP/apps.log")"
	ts_log "  $(tail -n 1 "$TS_TMP/apps.log")"
}

# transfers TAG SEED FROM4 FROM6: download and upload v4 and v6, and the
# target must have seen them from FROM4 / FROM6.
transfers() {
	local seed=$2 host from
	for host in "$TS_T_ADDR4" "$TS_T_ADDR6"; do
		seed=$((seed + 1))
		ts_updown "$1 $host" "$host" "$TS_TARGET_PORT" "$seed" "$N"
		from=$3
		[ "$host" = "$TS_T_ADDR6" ] && from=$4
		grep -q "\[$from\]:[0-9]* SEND $N bytes sha256 $(ts_app hash \
		    --seed "$seed" --bytes "$N")" "$TS_TMP/target.log" ||
		    ts_fail "$1: the target did not serve $host's download to $from"
	done
}

# The check prints the list form, which loads back.
client_conf tunnel
"$TUNSPLIT" check --secrets -c "$TS_TMP/client.yaml" \
    >"$TS_TMP/dump.yaml" 2>"$TS_TMP/dump.log" ||
    ts_fail "check --secrets: $(cat "$TS_TMP/dump.log")"
grep -q '^  final: "tunnel"' "$TS_TMP/dump.yaml" ||
    ts_fail "the dump has no final: $(cat "$TS_TMP/dump.yaml")"
chmod 600 "$TS_TMP/dump.yaml"
"$TUNSPLIT" check -c "$TS_TMP/dump.yaml" >"$TS_TMP/dump2.log" 2>&1 ||
    ts_fail "the dump does not load: $(cat "$TS_TMP/dump2.log")"

# ---- 1. final: tunnel ---------------------------------------------------------
ts_start_server
ts_start_client
grep -q "outbound tunnel: tunsplit $TS_S_ADDR4:$TS_SERVER_PORT .*(final)" \
    "$TS_TMP/client.log" || ts_fail "no start-up line for outbound tunnel"
transfers tunnel 10 "$TS_S2_ADDR4" "$TS_S2_ADDR6"
ts_udptool "$TS_TMP/apps.log" echo --host "$TS_T_ADDR4" --port 7 \
    --sizes 1,1400,8000 --seed 3 ||
    ts_fail "tunnel: UDP echo: $(tail -n 2 "$TS_TMP/apps.log")"
grep -qE "flow [0-9]+ .*, outbound tunnel, final$" "$TS_TMP/client.log" ||
    ts_fail "tunnel: no flow log line naming the outbound"
# A long download, still running across the next reload.
ts_app recv --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --bytes $((64 << 20)) \
    --seed 50 --rate 16m >"$TS_TMP/long.log" 2>&1 &
long=$!
for i in $(seq 50); do
	st=$(ip netns exec "$NS_C" "$TUNSPLIT" status --json --flows \
	    -s "$TS_TMP/client.sock") || ts_fail "status --flows"
	grep -q '"outbound":"tunnel"' <<<"$st" && break
	sleep 0.1
done
grep -q '"outbound":"tunnel"' <<<"$st" ||
    ts_fail "status --flows names no outbound: $st"
ts_log "tunnel: transfers from the server's address, UDP echo, the flow names its outbound"

# ---- 2. final: home -----------------------------------------------------------
client_conf home
ts_reload "$TS_CLIENT_PID" "$TS_TMP/client.log" "client SIGHUP to home"
transfers home 20 "$TS_C_ADDR4" "$TS_C_ADDR6"
ts_udptool "$TS_TMP/apps.log" echo --host "$TS_T_ADDR6" --port 7 \
    --sizes 1,1400 --seed 4 ||
    ts_fail "home: UDP echo: $(tail -n 2 "$TS_TMP/apps.log")"
grep -qE "flow [0-9]+ .*, outbound home, final$" "$TS_TMP/client.log" ||
    ts_fail "home: no flow log line naming the outbound"
wait "$long" || ts_fail "the flow begun on the tunnel: $(cat "$TS_TMP/long.log")"
grep -q "\[$TS_S2_ADDR4\]:[0-9]* SEND $((64 << 20)) bytes" "$TS_TMP/target.log" ||
    ts_fail "the flow begun before the reload did not stay on the tunnel"
ts_log "home: transfers from the client's own address; the older flow finished on the tunnel: $(cat "$TS_TMP/long.log")"

# ---- 3. final: ads ------------------------------------------------------------
client_conf ads
ts_reload "$TS_CLIENT_PID" "$TS_TMP/client.log" "client SIGHUP to ads"
for host in "$TS_T_ADDR4" "$TS_T_ADDR6"; do
	app refused --host "$host" --port "$TS_TARGET_PORT" --within 2
	grep -q ECONNREFUSED <(tail -n 1 "$TS_TMP/apps.log") ||
	    ts_fail "ads: want the SYN refused: $(tail -n 1 "$TS_TMP/apps.log")"
done
ts_udptool "$TS_TMP/apps.log" refused --to "$TS_T_ADDR4:7" \
    --errno EHOSTUNREACH ||
    ts_fail "ads: UDP IPv4: $(tail -n 2 "$TS_TMP/apps.log")"
ts_udptool "$TS_TMP/apps.log" refused --to "[$TS_T_ADDR6]:7" --errno EACCES ||
    ts_fail "ads: UDP IPv6: $(tail -n 2 "$TS_TMP/apps.log")"
ts_log "ads: TCP refused, UDP told 'prohibited' (v4 and v6)"
if command -v ping >/dev/null 2>&1; then
	ip netns exec "$NS_C" ping -c 1 -W 2 "$TS_T_ADDR4" \
	    >"$TS_TMP/ping.log" 2>&1 && ts_fail "ads: ping answered"
	grep -qiE "filtered|prohibited" "$TS_TMP/ping.log" ||
	    ts_fail "ads: ping not told 'prohibited': $(cat "$TS_TMP/ping.log")"
	ip netns exec "$NS_C" ping -6 -c 1 -W 2 "$TS_T_ADDR6" \
	    >"$TS_TMP/ping6.log" 2>&1 && ts_fail "ads: ping -6 answered"
	grep -qiE "filtered|prohibited" "$TS_TMP/ping6.log" ||
	    ts_fail "ads: ping -6 not told 'prohibited': $(cat "$TS_TMP/ping6.log")"
	ts_log "ads: ping told: $(grep -iE -m 1 'filtered|prohibited' "$TS_TMP/ping.log")"
fi

# ---- 4. counters per outbound -------------------------------------------------
st=$(ip netns exec "$NS_C" "$TUNSPLIT" status --json -s "$TS_TMP/client.sock") ||
    ts_fail "status --json"
for ob in tunnel home ads; do
	grep -q "\"name\":\"$ob\"" <<<"$st" ||
	    ts_fail "status --json has no outbound $ob: $st"
done
ts_check_alive
ts_pass "outbounds tunnel, home (direct) and ads (block) as final in turn: transfers hash-checked from the right address, a flow kept its outbound across SIGHUP, block refuses TCP and answers UDP and ping 'prohibited'"
