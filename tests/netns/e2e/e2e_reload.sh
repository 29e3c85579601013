#!/bin/bash
# SIGHUP keeps every flow of every outbound (lib.sh draws the topology;
# tss also runs dante on :1080, and forwards for the direct part only).
#
# For each outbound -- native and trojan (to the tunsplit server, which
# reloads too), socks5 (dante), direct (marked sockets routed via tss) --
# spantool.py opens 60 TCP connections at once (half up, half down, 512 KiB
# each paced to 128 KiB/s, over IPv4 and IPv6 targets) and 8 UDP
# associations to the echo server, at TUN MTU 1500; once all of them move
# data, the client (and the server) get a changed file and SIGHUP, and the
# test waits for each daemon's "reloaded" log line.  Then every UDP
# association must answer from the same mapped address as before (the
# association lived on, not made anew) and every TCP connection must
# complete with its SHA-256 *after* the reload.  The client's status must
# show the changed max_flows, and no flow may have been reset.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_reload

ts_need danted dante-server
DANTE_PORT=1080
MARK=0x7353
PW=reload-$$-secret
CONNS=60
TS_MTU=1500	# app MSS 1460, as behind a router
UDPN=8

ts_topology_up
ts_make_pki
ts_write_configs "" "  trojan_passwords: [\"$PW\"]"
cp "$TS_TMP/client.yaml" "$TS_TMP/client-native.yaml"
ts_start_target
ts_start_udpecho 7
ts_prove_no_forward "$TS_TARGET_PORT"
ts_start_server

ts_start_danted "$DANTE_PORT" connect udpassociate udpreply

# client_conf PROTOCOL CLIENT-LINES
client_conf() {
	umask 077
	cat >"$TS_TMP/client.yaml" <<EOF
log: {level: ${TS_LOG_LEVEL:-info}, flows: true}
control: $TS_TMP/client.sock
tun: {name: $TS_TUN, mtu: $TS_MTU, address: [198.18.0.1/15, "fdfe:dcba:9876::1/64"]}
client:
  protocol: $1
  max_flows: 4096
  connect_timeout: 10s
$2
EOF
	umask 022
	"$TUNSPLIT" check -c "$TS_TMP/client.yaml" >"$TS_TMP/check.log" 2>&1 ||
	    ts_fail "tunsplit check ($1): $(cat "$TS_TMP/check.log")"
}

# span NAME SEED [server]: the spanning traffic through a running client,
# SIGHUP to the client (and the server) with a changed file in the middle.
span() {
	local name=$1 app max st i
	rm -f "$TS_TMP/ready" "$TS_TMP/mark"
	ts_bg "$NS_C" "span-$name" timeout 120 "$TS_PY" -u \
	    "$TS_LIB_DIR/spantool.py" --host "$TS_T_ADDR4" --host "$TS_T_ADDR6" \
	    --port "$TS_TARGET_PORT" --conns "$CONNS" --bytes 512k --rate 128k \
	    --seed "$2" --udp-host "$TS_T_ADDR4" --udp-host "$TS_T_ADDR6" \
	    --udp "$UDPN" --ready "$TS_TMP/ready" --mark "$TS_TMP/mark"
	app=$TS_LAST_PID
	for i in $(seq 300); do
		[ -e "$TS_TMP/ready" ] && break
		ts_alive "$app" || break
		sleep 0.1
	done
	[ -e "$TS_TMP/ready" ] ||
	    ts_fail "$name: traffic did not get going: $(tail -n 5 "$TS_TMP/span-$name.log")"
	max=$((4000 - $2))
	sed -i "s/max_flows: .*/max_flows: $max/" "$TS_TMP/client.yaml"
	ts_reload "$TS_CLIENT_PID" "$TS_TMP/client.log" "$name: client SIGHUP"
	if [ "${3:-}" = server ]; then
		sed -i "s/trojan_passwords: .*/trojan_passwords: [\"$PW\", \"other-$2\"]/" \
		    "$TS_TMP/server.yaml"
		ts_reload "$TS_SERVER_PID" "$TS_TMP/server.log" "$name: server SIGHUP"
	fi
	touch "$TS_TMP/mark"
	st=$(ip netns exec "$NS_C" "$TUNSPLIT" status --json -s "$TS_TMP/client.sock") ||
	    ts_fail "$name: tunsplit status after the reload"
	"$TS_PY" -c 'import json, sys
j = json.loads(sys.argv[1])
sys.exit(j["flows"]["max"] != int(sys.argv[2]))' "$st" "$max" ||
	    ts_fail "$name: max_flows not $max after the reload: $st"
	wait "$app" || ts_fail "$name: $(grep FAILED "$TS_TMP/span-$name.log" | head -n 5)"
	ts_log "$name: $(tail -n 1 "$TS_TMP/span-$name.log")"
	grep -Eq "reset|out of memory" "$TS_TMP/client.log" &&
	    ts_fail "$name: the client reset a flow: $(grep -E -m 3 "reset|out of memory" "$TS_TMP/client.log")"
	ts_check_alive
	kill -TERM "$TS_CLIENT_PID"
	wait "$TS_CLIENT_PID" 2>/dev/null
	ip -n "$NS_C" route del "$TS_T_NET4" 2>/dev/null
	ip -n "$NS_C" -6 route del "$TS_T_NET6" 2>/dev/null
	mv "$TS_TMP/client.log" "$TS_TMP/client-$name.log"
}

cp "$TS_TMP/client-native.yaml" "$TS_TMP/client.yaml"
ts_start_client
span native 100 server
client_conf trojan "  server: \"$TS_S_ADDR4:$TS_SERVER_PORT\"
  sni: $TS_SNI
  ca: $TS_TMP/ca.pem
  password: \"$PW\""
ts_start_client
span trojan 200 server
client_conf socks5 "  server: \"$TS_S_ADDR4:$DANTE_PORT\""
ts_start_client
span socks5 300

# direct: marked sockets leave by eth0 and tss forwards (this part only).
ts_sysctl "$NS_S" net/ipv4/ip_forward 1
ts_sysctl "$NS_S" net/ipv6/conf/all/forwarding 1
ts_sysctl "$NS_C" net/ipv4/conf/all/rp_filter 0
ip -n "$NS_C" rule add fwmark "$MARK" lookup 7353 pref 100 || ts_fail "ip rule"
ip -n "$NS_C" -6 rule add fwmark "$MARK" lookup 7353 pref 100 ||
    ts_fail "ip -6 rule"
ip -n "$NS_C" route add "$TS_T_NET4" via "$TS_S_ADDR4" table 7353
ip -n "$NS_C" -6 route add "$TS_T_NET6" via "$TS_S_ADDR6" table 7353
client_conf direct "  mark: $MARK"
ts_start_client
span direct 400
ts_pass "SIGHUP with $CONNS TCP flows and $UDPN UDP associations live, native, trojan (server reloaded too), socks5, direct: every flow intact across the reload, every association kept"
