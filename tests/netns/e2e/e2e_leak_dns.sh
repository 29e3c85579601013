#!/bin/bash
# A pinned resolver (client.dns) with route: auto: a query to a resolver on
# a directly connected network must go through the tunnel to the pinned
# one, not to that network (issue 20, defect 3).
#
#  tsl$$ (LAN resolver)   tsc$$ (client)          tss$$ (server)   tst$$ (target)
#  eth0 192.168.99.53 --- lan0 192.168.99.1
#       fd99::53/64            fd99::1/64
#  dnsmasq: h.test is     route: auto, dns:        tunsplit run     dnsmasq: h.test
#  192.168.99.99          10.77.2.2:53             (lib.sh)         is 10.77.2.51
#                         eth0 10.77.1.1 --------- 10.77.1.2
#
# Before the client starts, dig @192.168.99.53 is answered by the LAN
# resolver (the leak path is real).  With the client up, dig @192.168.99.53
# and @fd99::53 over UDP and over TCP are answered by the pinned resolver
# through the tunnel (10.77.2.51, seen from the tunsplit server), and the
# LAN resolver logs no query at all.  Without the port-53 rules the
# connected route 192.168.99.0/24 wins over the tunnel and the LAN answers.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_leak_dns

for t in dig dnsmasq; do
	command -v $t >/dev/null 2>&1 || [ -x /usr/sbin/$t ] ||
	    ts_skip "missing tool: $t (apt-get install dnsmasq-base dnsutils)"
done
DNSMASQ=$(command -v dnsmasq || echo /usr/sbin/dnsmasq)
export PATH="$TS_SRCDIR/src/route:$PATH"
command -v tunsplit-route >/dev/null || ts_fail "tunsplit-route not found"

NS_L=tsl$$
L_ADDR4=192.168.99.53 L_ADDR6=fd99::53
C_LAN4=192.168.99.1 C_LAN6=fd99::1
TS_TUN=tsq$$
STATE=/run/tunsplit/$TS_TUN.state
trap 'rm -f "$STATE"; ts_cleanup' EXIT

ts_topology_up
ts_ns_add "$NS_L"
ip -n "$NS_L" link add eth0 type veth peer name lan0 netns "$NS_C" ||
    ts_fail "veth LAN-client"
ip -n "$NS_L" addr add "$L_ADDR4/24" dev eth0
ip -n "$NS_L" addr add "$L_ADDR6/64" dev eth0 nodad
ip -n "$NS_C" addr add "$C_LAN4/24" dev lan0
ip -n "$NS_C" addr add "$C_LAN6/64" dev lan0 nodad
ip -n "$NS_L" link set eth0 up
ip -n "$NS_C" link set lan0 up

# dnsmasq NS LOG ADDR4 ADDR6 ANSWER4: a resolver that knows only h.test.
dnsmasq_in() {
	ts_bg "$1" "$2" "$DNSMASQ" -k --conf-file=/dev/null --no-resolv \
	    --no-hosts --bind-interfaces --listen-address="$3" \
	    --listen-address="$4" --port=53 --user=root --pid-file= \
	    --log-queries --log-facility=- --host-record=h.test,"$5"
	for _ in $(seq 50); do
		ip netns exec "$1" ss -Hltn 'sport = :53' | grep -q . && return
		sleep 0.1
	done
	ts_fail "dnsmasq in $1 did not start: $(tail -n 5 "$TS_TMP/$2.log")"
}
dnsmasq_in "$NS_L" lan "$L_ADDR4" "$L_ADDR6" 192.168.99.99
dnsmasq_in "$NS_T" pinned "$TS_T_ADDR4" "$TS_T_ADDR6" 10.77.2.51

dig_c() { ip netns exec "$NS_C" timeout 20 dig +time=3 +tries=1 "$@" 2>&1; }
lan_queries() { grep -c 'query\[' "$TS_TMP/lan.log"; }

# ---- without the tunnel: the LAN resolver answers ------------------------------
got=$(dig_c +short "@$L_ADDR4" h.test A)
[ "$got" = 192.168.99.99 ] ||
    ts_fail "the LAN resolver does not answer directly: '$got'"
n0=$(lan_queries)
[ "$n0" -ge 1 ] || ts_fail "the LAN resolver logged no query: $(cat "$TS_TMP/lan.log")"
ts_log "without the tunnel dig @$L_ADDR4 is answered by the LAN ($n0 queries logged)"

# ---- the client, dns pinned, route: auto ---------------------------------------
ts_make_pki
ts_write_configs "  mark: 0x7353
  route: auto
  dns: \"$TS_T_ADDR4:53\""
ts_start_server
ts_start_client_routed

for srv in "$L_ADDR4" "$L_ADDR6"; do
	for tcp in +notcp +tcp; do
		got=$(dig_c +short "$tcp" "@$srv" h.test A)
		[ "$got" = 10.77.2.51 ] ||
		    ts_fail "dig $tcp @$srv h.test: '$got', want the pinned resolver's 10.77.2.51 (192.168.99.99: the query leaked to the LAN)"
	done
done
n=$(lan_queries)
[ "$n" = "$n0" ] ||
    ts_fail "the LAN resolver saw $((n - n0)) queries with the tunnel up: $(grep 'query\[' "$TS_TMP/lan.log" | tail -n 4)"
p=$(grep -c "query\[A\] h.test from $TS_S2_ADDR4" "$TS_TMP/pinned.log")
[ "$p" -ge 4 ] ||
    ts_fail "the pinned resolver saw $p queries from the tunnel server, want 4"
ts_check_alive
ts_pass "dig @LAN resolver (IPv4, IPv6; UDP, TCP) answered through the tunnel by the pinned resolver ($p queries); the LAN resolver saw none"
