#!/bin/bash
# route: auto on a client with strict reverse-path filtering
# (net.ipv4.conf.{all,eth0}.rp_filter=1) whose server is reached by the
# default route.
#
#  tsc$$ (client)                       tss$$ (server)
#  eth0 10.77.1.1 ---------------------- eth0 10.77.1.2
#  default via 10.77.1.2                 lo 10.77.3.2: the server's public
#  rp_filter=1 (all, eth0)                    address, reached by the
#  route: auto, server 10.77.3.2:8443         client's default route
#  TUN tsx$$
#  target tst$$ as in lib.sh
#
# The daemon's connections to 10.77.3.2 carry client.mark and leave by the
# main table; the replies arrive unmarked, and strict rp_filter's reverse
# lookup of 10.77.3.2 would then take the "not fwmark" rule into the TUN
# table and drop them: the tunnel would carry nothing.  tunsplit-route up
# restores the mark on those replies (nftables conntrack mark) and sets
# net.ipv4.conf.all.src_valid_mark=1 so that the reverse lookup uses it.
#
# Checked: a download and an upload through the tunnel, both hash-checked;
# while up, src_valid_mark is 1 and the nftables table exists; after the
# daemon's SIGTERM (its helper runs tunsplit-route down) src_valid_mark is
# back to 0, the table is gone from `nft list tables`, and no rule of
# table 7353 is left.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_rpfilter
export PATH="$TS_SRCDIR/src/route:$PATH"
command -v tunsplit-route >/dev/null || ts_fail "tunsplit-route not found"
command -v nft >/dev/null || ts_skip "no nft (nftables): strict rp_filter needs it"

PUB=10.77.3.2
TS_TUN=tsx$$
STATE=/run/tunsplit/$TS_TUN.state
# The table tunsplit-route names after the device (tsx + digits).
NFT_TABLE=tunsplit_$TS_TUN
trap 'rm -f "$STATE"; ts_cleanup' EXIT

vmark() { ip netns exec "$NS_C" cat /proc/sys/net/ipv4/conf/all/src_valid_mark; }
nft_tables() { ip netns exec "$NS_C" nft list tables 2>&1; }

ts_topology_up
ip -n "$NS_S" addr add "$PUB/32" dev lo
ip -n "$NS_C" route add default via "$TS_S_ADDR4" || ts_fail "default route"
ts_sysctl "$NS_C" net/ipv4/conf/all/rp_filter 1 &&
    ts_sysctl "$NS_C" net/ipv4/conf/eth0/rp_filter 1 &&
    ts_sysctl "$NS_C" net/ipv4/conf/default/rp_filter 1 &&
    ts_sysctl "$NS_C" net/ipv4/conf/all/src_valid_mark 0 ||
    ts_fail "cannot set the client's rp_filter"
ts_start_target

ts_make_pki
ts_write_configs "  mark: 0x7353
  route: auto"
sed -i "s|^  server: \"$TS_S_ADDR4:$TS_SERVER_PORT\"\$|  server: \"$PUB:$TS_SERVER_PORT\"|" \
    "$TS_TMP/client.yaml"
sed -i "s|^  listen: \[\"$TS_S_ADDR4:$TS_SERVER_PORT\", |  listen: [\"$PUB:$TS_SERVER_PORT\", \"$TS_S_ADDR4:$TS_SERVER_PORT\", |" \
    "$TS_TMP/server.yaml"
grep -q "server: \"$PUB:" "$TS_TMP/client.yaml" &&
    grep -q "listen: \[\"$PUB:" "$TS_TMP/server.yaml" ||
    ts_fail "could not point the configs at $PUB"
ts_start_server
ts_wait_port "$NS_S" "$TS_SERVER_PORT" 10 "$TS_SERVER_PID" ||
    ts_fail "the server does not listen"
ts_start_client_routed
[ "$(ip netns exec "$NS_C" cat /proc/sys/net/ipv4/conf/eth0/rp_filter)" = 1 ] ||
    ts_fail "rp_filter on eth0 is no longer strict"

# Through the tunnel, both directions, data checked.
TS_APP_TIMEOUT=30
out=$(ts_app recv --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --bytes 2m \
    --seed 5 --timeout 15 2>&1) ||
    ts_fail "download through the tunnel with strict rp_filter: $out"
grep -q "target: \[$TS_S2_ADDR4\]:[0-9]* SEND 2097152 " "$TS_TMP/target.log" ||
    ts_fail "the download did not come through the tunnel"
ts_log "download: $out"
out=$(ts_app send --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --bytes 2m \
    --seed 6 2>&1) ||
    ts_fail "upload through the tunnel with strict rp_filter: $out"
ts_log "upload: $out"

[ "$(vmark)" = 1 ] || ts_fail "src_valid_mark is $(vmark) while up, want 1"
nft_tables | grep -qx "table inet $NFT_TABLE" ||
    ts_fail "no nftables table $NFT_TABLE while up: $(nft_tables)"
ts_check_alive

# SIGTERM: the daemon stops, its route helper runs tunsplit-route down.
kill -TERM "$TS_CLIENT_PID"
for _ in $(seq 100); do
	ts_alive "$TS_CLIENT_PID" || [ -f "$STATE" ] || break
	sleep 0.1
done
ts_alive "$TS_CLIENT_PID" && kill -TERM "$TS_CLIENT_PID"
for _ in $(seq 50); do
	[ -f "$STATE" ] || break
	sleep 0.1
done
[ ! -f "$STATE" ] || ts_fail "tunsplit-route down left $STATE: $(cat "$STATE")"
ts_wait_log "$TS_TMP/client.log" "routes through $TS_TUN removed" ||
    ts_fail "the daemon did not report its routes removed"
[ "$(vmark)" = 0 ] || ts_fail "src_valid_mark is $(vmark) after down, want 0 (as before)"
if nft_tables | grep -q "$NFT_TABLE"; then
	ts_fail "nftables table $NFT_TABLE left after down: $(nft_tables)"
fi
if ip -n "$NS_C" rule show | grep -q "lookup 7353"; then
	ts_fail "rules left after down: $(ip -n "$NS_C" rule show)"
fi
ts_log "after down: src_valid_mark=$(vmark), nft tables: $(nft_tables | tr '\n' ' ')"
ts_pass "strict rp_filter: the tunnel to a server behind the default route carries data both ways; down restores src_valid_mark and removes the nftables table"
