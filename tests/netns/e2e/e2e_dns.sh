#!/bin/bash
# DNS through the tunnel, with a real resolver (dnsmasq) on the target and
# dig in the client namespace (topology in lib.sh):
#  1. plain: A and AAAA over IPv4 and IPv6 to the resolver's own address,
#     and a truncated (TC) UDP answer that dig retries over TCP;
#  2. pinned (client.dns = the target's resolver): queries to an address
#     that is no resolver at all (192.0.2.53, 2001:db8::53, routed into the
#     TUN) are answered by the pinned resolver, appear to come from the
#     address asked, and the TC-then-TCP retry is pinned too.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_dns

for t in dig dnsmasq; do
	command -v $t >/dev/null 2>&1 || [ -x /usr/sbin/$t ] ||
	    ts_skip "missing tool: $t (apt-get install dnsmasq-base dnsutils)"
done
DNSMASQ=$(command -v dnsmasq || echo /usr/sbin/dnsmasq)
ts_standard_setup

# A TXT answer of about 1 KB: more than the 512 bytes of a UDP answer
# without EDNS, so the resolver sets TC and dig retries over TCP.
s=$(printf 'x%.0s' $(seq 200))
BIG=\"$s\",\"$s\",\"$s\",\"$s\",\"$s\"
ts_bg "$NS_T" dnsmasq "$DNSMASQ" -k --conf-file=/dev/null --no-resolv \
    --no-hosts --bind-interfaces --listen-address="$TS_T_ADDR4" \
    --listen-address="$TS_T_ADDR6" --port=53 --user=root --pid-file= \
    --log-queries --log-facility=- \
    --host-record=h.test,10.77.2.51,fd77:2::51 \
    --txt-record=big.test,"$BIG"
for i in $(seq 50); do
	ip netns exec "$NS_T" ss -Hltn 'sport = :53' | grep -q . && break
	sleep 0.1
done
ip netns exec "$NS_T" ss -Hltn 'sport = :53' | grep -q . ||
    ts_fail "dnsmasq did not start: $(tail -n 5 "$TS_TMP/dnsmasq.log")"

dig_c() { ip netns exec "$NS_C" timeout 30 dig +time=3 +tries=2 "$@"; }

# expect SERVER NAME TYPE WANT: the answer section must be WANT.
expect() {
	local got
	got=$(dig_c +short "@$1" "$2" "$3" 2>&1)
	[ "$got" = "$4" ] || ts_fail "dig @$1 $2 $3: got '$got', want '$4'"
}

# big SERVER: truncated over UDP, retried and answered over TCP.
big() {
	local out=$TS_TMP/dig-big-$1.log n
	dig_c +noedns "@$1" big.test TXT >"$out" 2>&1 ||
	    ts_fail "dig @$1 big.test TXT: $(tail -n 3 "$out")"
	grep -q "Truncated, retrying in TCP mode" "$out" ||
	    ts_fail "dig @$1: the UDP answer was not truncated: $(cat "$out")"
	grep -q "SERVER: $1#53.*(TCP)" "$out" ||
	    ts_fail "dig @$1: no TCP answer from $1: $(grep SERVER "$out")"
	n=$(grep -o "$s" "$out" | wc -l)
	[ "$n" -eq 5 ] || ts_fail "dig @$1: $n of 5 TXT strings"
}

for srv in "$TS_T_ADDR4" "$TS_T_ADDR6"; do
	expect "$srv" h.test A 10.77.2.51
	expect "$srv" h.test AAAA fd77:2::51
	big "$srv"
done
ts_log "plain: A, AAAA over IPv4 and IPv6, TC then TCP: all answered"

# The pin.  Nothing listens at 192.0.2.53 or 2001:db8::53; without the pin
# the server could not even route there.
kill -TERM "$TS_CLIENT_PID"
wait "$TS_CLIENT_PID" 2>/dev/null
printf '  dns: "%s:53"\n' "$TS_T_ADDR4" >>"$TS_TMP/client.yaml"
"$TUNSPLIT" check -c "$TS_TMP/client.yaml" >/dev/null 2>&1 ||
    ts_fail "client config with dns rejected"
ts_start_client
ip -n "$NS_C" route add 192.0.2.0/24 dev "$TS_TUN"
ip -n "$NS_C" -6 route add 2001:db8::/32 dev "$TS_TUN"
for srv in 192.0.2.53 2001:db8::53 "$TS_T_ADDR6"; do
	expect "$srv" h.test A 10.77.2.51
	expect "$srv" h.test AAAA fd77:2::51
	big "$srv"
done
q=$(grep -c "query\[" "$TS_TMP/dnsmasq.log")
ts_log "pinned: queries to 192.0.2.53, 2001:db8::53 and $TS_T_ADDR6 all" \
    "answered by $TS_T_ADDR4 ($q queries in dnsmasq's log)"
grep -q "query\[A\] h.test from $TS_S2_ADDR4" "$TS_TMP/dnsmasq.log" ||
    ts_fail "dnsmasq saw no query from the tunnel server"
ts_check_alive
kill -TERM "$TS_CLIENT_PID"
wait "$TS_CLIENT_PID" 2>/dev/null
pinned=$(ts_log_sum 's/.* \([0-9]*\) DNS queries pinned/\1/p' \
    "$TS_TMP/client.log")		# one line per worker
[ "$pinned" -ge 6 ] || ts_fail "client pinned $pinned UDP queries"
ts_pass "dig A/AAAA and TC->TCP through the tunnel, plain and pinned ($pinned UDP queries pinned)"
