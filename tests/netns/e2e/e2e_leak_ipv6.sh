#!/bin/bash
# A TUN with only an IPv4 address and route: auto: IPv6 must not leave by
# the uplink around the tunnel unless client.ipv6: bypass says so (issue
# 20, defect 4).
#
#  tsc$$ (client)                      tss$$ (server, here also "the uplink")
#  TUN tsv$$: 198.18.0.1/15 only
#  eth0 10.77.1.1, fd77:1::1 --------- eth0 10.77.1.2, fd77:1::2
#  default via fd77:1::2 (IPv6)        lo fd77:3::2: an IPv6 host "out
#                                      there", tools.py serve on port 9100
#  target tst$$ as in lib.sh (10.77.2.2 via the tunnel)
#
# Without the client, the app reaches [fd77:3::2]:9100 by the IPv6 default
# route (the leak path is real).  With the client (ipv6 not set: block),
# the same connection fails and the host logs nothing, IPv4 still goes
# through the tunnel, and the daemon logs that IPv6 is blocked.  With
# client.ipv6: bypass the connection goes around the tunnel again, from
# the client's own address, and the daemon says so.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_leak_ipv6
export PATH="$TS_SRCDIR/src/route:$PATH"
command -v tunsplit-route >/dev/null || ts_fail "tunsplit-route not found"

V6_HOST=fd77:3::2 V6_PORT=9100
TS_TUN=tsv$$
STATE=/run/tunsplit/$TS_TUN.state
trap 'rm -f "$STATE"; ts_cleanup' EXIT

ts_topology_up
ip -n "$NS_S" addr add "$V6_HOST/128" dev lo
ip -n "$NS_C" -6 route add default via "$TS_S_ADDR6" ||
    ts_fail "IPv6 default route"
ts_bg "$NS_S" uplink "$TS_PY" -u "$TS_TOOLS" serve --bind "$V6_HOST" \
    --port "$V6_PORT"
ts_wait_port "$NS_S" "$V6_PORT" 10 "$TS_LAST_PID" ||
    ts_fail "the IPv6 host did not listen"
ts_start_target

v6_fetch() {	# v6_fetch SEED: 64 KiB from the IPv6 host, hash checked
	ts_app recv --host "$V6_HOST" --port "$V6_PORT" --bytes 64k \
	    --seed "$1" --timeout 5 2>&1
}
uplink_sends() { grep -c ' SEND ' "$TS_TMP/uplink.log"; }

out=$(v6_fetch 1) || ts_fail "no IPv6 path to $V6_HOST without the client: $out"
grep -q "target: \[$TS_C_ADDR6\]:[0-9]* SEND 65536 " "$TS_TMP/uplink.log" ||
    ts_fail "the IPv6 host did not see the client's address"
ts_log "without the client, [$V6_HOST]:$V6_PORT is reached by the IPv6 default route"

# ---- IPv4-only TUN, ipv6 not set: blocked ----------------------------------------
ts_make_pki
ts_write_configs "  mark: 0x7353
  route: auto"
sed -i 's|, "fdfe:dcba:9876::1/64"\]|]|' "$TS_TMP/client.yaml"
grep -q 'address: \[198.18.0.1/15\]}' "$TS_TMP/client.yaml" ||
    ts_fail "could not make the TUN IPv4-only: $(grep tun: "$TS_TMP/client.yaml")"
ts_start_server
ts_start_client_routed
n0=$(uplink_sends)
if out=$(ts_app probe --host "$V6_HOST" --port "$V6_PORT" --timeout 3 2>&1); then
	ts_fail "IPv6 left around the IPv4-only tunnel: $out"
fi
out2=$(v6_fetch 2) && ts_fail "IPv6 download around the tunnel worked: $out2"
sleep 0.5
[ "$(uplink_sends)" = "$n0" ] ||
    ts_fail "the IPv6 host served $(($(uplink_sends) - n0)) connections with IPv6 blocked"
grep -q "IPv6 is blocked" "$TS_TMP/client.log" ||
    ts_fail "the daemon did not log that IPv6 is blocked: $(grep -i ipv6 "$TS_TMP/client.log")"
ts_log "IPv6 blocked: $out"
out=$(ts_app recv --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --bytes 1m \
    --seed 3 2>&1) || ts_fail "IPv4 through the tunnel: $out"
grep -q "target: \[$TS_S2_ADDR4\]:[0-9]* SEND 1048576 " "$TS_TMP/target.log" ||
    ts_fail "IPv4 did not go through the tunnel"
ts_log "IPv4 through the tunnel: $out"
kill -TERM "$TS_CLIENT_PID"
wait "$TS_CLIENT_PID" 2>/dev/null
ts_wait_log "$TS_TMP/client.log" "routes through $TS_TUN removed" 50 ||
    ts_fail "the route helper did not remove the routes"

# ---- client.ipv6: bypass ---------------------------------------------------------
printf '  ipv6: bypass\n' >>"$TS_TMP/client.yaml"
"$TUNSPLIT" check -c "$TS_TMP/client.yaml" >"$TS_TMP/check-bypass.log" 2>&1 ||
    ts_fail "ipv6: bypass rejected: $(cat "$TS_TMP/check-bypass.log")"
: >"$TS_TMP/client.log"
ts_start_client_routed
grep -q "IPv6 bypasses the tunnel" "$TS_TMP/client.log" ||
    ts_fail "the daemon did not log that IPv6 bypasses: $(grep -i ipv6 "$TS_TMP/client.log")"
out=$(v6_fetch 4) || ts_fail "client.ipv6: bypass, IPv6 around the tunnel: $out"
[ "$(grep -c "target: \[$TS_C_ADDR6\]:[0-9]* SEND 65536 " "$TS_TMP/uplink.log")" = 2 ] ||
    ts_fail "with bypass the IPv6 host did not see the client's own address"
ts_log "client.ipv6: bypass: $out"
ts_check_alive
ts_pass "IPv4-only TUN: IPv6 to an uplink host refused (and logged) by default, reached with client.ipv6: bypass; IPv4 through the tunnel"
