#!/bin/bash
# Server egress policy end to end.  The server namespace gets "secret"
# services the tunnel must never reach: on a network outside the allow list
# (10.77.3.1, fd77:3::1, extra addresses of its loopback: private ranges,
# denied by default)
# and on 127.0.0.1; and on the server host's own addresses inside the
# allowed target network (10.77.2.1 and fd77:2::1 on eth1, and 10.77.2.9
# added while the server runs: an address change the server must notice).
# Flows to them through the tunnel must be reset within 2 s, the secret
# services must see no connection at all, and the server must log "egress
# denied"; the allowed target keeps working.
#
#   tsc: app ──ts0── client ══TLS══ server ──eth1── tst: target (allowed)
#                                     │  10.77.2.1, fd77:2::1, 10.77.2.9
#                                     │  (the server's own: denied)
#                                     └──lo 10.77.3.1, fd77:3::1, 127.0.0.1
#                                           (secret services: denied)
#
# 127.0.0.1 cannot normally leave a host through an interface: in the
# client namespace the local routing rule is moved behind a rule sending
# 127.0.0.1 to ts0, and route_localnet allows such packets out of ts0.
# ::1 never leaves a host on Linux, so IPv6 loopback is covered by the unit
# tests (test_server) and by name in e2e_resolve.sh, which also tries a
# name for every other default-denied range, IPv4 and IPv6.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_egress

ts_standard_setup
ip -n "$NS_S" addr add 10.77.3.1/32 dev lo || ts_fail "secret address"
ip -n "$NS_S" addr add fd77:3::1/128 dev lo nodad || ts_fail "secret address6"
ts_bg "$NS_S" secret "$TS_PY" -u "$TS_TOOLS" serve --bind 10.77.3.1 \
    --bind fd77:3::1 --bind 127.0.0.1 --port 9000
ts_wait_port "$NS_S" 9000 10 "$TS_LAST_PID" || ts_fail "secret services did not start"
# The secret services work, from inside the server namespace.
ip netns exec "$NS_S" "$TS_PY" "$TS_TOOLS" send --host 10.77.3.1 --port 9000 \
    --bytes 1k >/dev/null 2>&1 || ts_fail "secret service not reachable locally"
# The server's own addresses on the allowed network, one of them new.
ip -n "$NS_S" addr add 10.77.2.9/32 dev eth1 || ts_fail "new address"
ts_bg "$NS_S" secret "$TS_PY" -u "$TS_TOOLS" serve --bind "$TS_S2_ADDR4" \
    --bind "$TS_S2_ADDR6" --bind 10.77.2.9 --port 9001
ts_wait_port "$NS_S" 9001 10 "$TS_LAST_PID" || ts_fail "own-address services did not start"
ip netns exec "$NS_S" "$TS_PY" "$TS_TOOLS" send --host 10.77.2.9 --port 9001 \
    --bytes 1k >/dev/null 2>&1 || ts_fail "own-address service not reachable locally"
before=$(grep -c '^target: \[' "$TS_TMP/secret.log")

ip -n "$NS_C" route add 10.77.3.0/24 dev "$TS_TUN"
ip -n "$NS_C" -6 route add fd77:3::/64 dev "$TS_TUN"
ip -n "$NS_C" rule add pref 100 lookup local
ip -n "$NS_C" rule del pref 0
ip -n "$NS_C" rule add pref 10 to 127.0.0.1 lookup 77
ip -n "$NS_C" route add 127.0.0.1/32 dev "$TS_TUN" table 77
ts_sysctl "$NS_C" "net/ipv4/conf/$TS_TUN/route_localnet" 1
ts_sysctl "$NS_C" net/ipv4/conf/all/route_localnet 1

out=$TS_TMP/apps.log
TS_APP_TIMEOUT=30
for hp in 10.77.3.1/9000 fd77:3::1/9000 127.0.0.1/9000 \
    "$TS_S2_ADDR4/9001" "$TS_S2_ADDR6/9001" 10.77.2.9/9001; do
	host=${hp%/*} port=${hp#*/}
	ts_app refused --host "$host" --port "$port" --within 2 >>"$out" 2>&1 ||
	    ts_fail "$host:$port through the tunnel: $(tail -n 1 "$out")"
	ts_log "$host:$port: $(tail -n 1 "$out")"
done
after=$(grep -c '^target: \[' "$TS_TMP/secret.log")
[ "$after" -eq "$before" ] ||
    ts_fail "a secret service was reached through the tunnel: $(tail -n 2 "$TS_TMP/secret.log")"
denied=$(grep -c 'egress denied' "$TS_TMP/server.log")
[ "$denied" -ge 6 ] ||
    ts_fail "the server logged $denied egress denials, 6 expected"
ts_app send --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --bytes 1m \
    --seed 5 >>"$out" 2>&1 || ts_fail "allowed target: $(tail -n 1 "$out")"
ts_check_alive
ts_pass "10.77.3.1, fd77:3::1, 127.0.0.1 and the server's own $TS_S2_ADDR4, $TS_S2_ADDR6, 10.77.2.9 (added live) reset within 2 s and never reached ($denied denials logged); allowed target intact"
