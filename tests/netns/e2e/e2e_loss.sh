#!/bin/bash
# Every outbound under loss: a hash-checked download and upload through
# the TUN (MTU 1500, so the app's MSS is 1460) while the client's own
# connection -- to the tunsplit server, the SOCKS5 proxy or, for direct,
# the target -- crosses the benchmark's link emulator with random loss
# and delay in both directions.
#
#   tsc$$                            tss$$                         tst$$
#  +-----------------+  linkem    +-------------------+  veth    +------------+
#  | app -> ts0 (MTU |--lk0==lk0--| tunsplit server   |----------| tools.py   |
#  | 1500) -> client | 1.5 % loss | :8443 (also trojan|  eth1    | serve :9000|
#  | lk0 10.77.1.1   | each way,  |  passwords), dante| 10.77.2.1| 10.77.2.2  |
#  +-----------------+ 5 ms delay | :1080; lk0        |          +------------+
#                      each way   | 10.77.1.2         |
#                                 +-------------------+
#
# Outbounds, one client after another over the same link:
#   native  tunsplit protocol to the tunsplit server (TLS, BBR)
#   trojan  trojan to the same server (server.trojan_passwords)
#   socks5  dante in tss (installed from Debian when missing)
#   direct  marked sockets routed via lk0 and tss, which forwards for this
#           part only (fwmark rule, as in e2e_direct_block.sh)
# For each: 8 MiB from the target (tools.py checks the SHA-256), then 8 MiB
# to it (the target logs the hash), and linkem's counters for that period
# must show packets lost in both directions, so the outer connection did
# see the loss.  Before the fix of issue 14 the MTU-1500 downloads were
# reset after a few hundred kilobytes.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_loss

ts_find_linkem
ts_need danted dante-server
DANTE_PORT=1080
MARK=0x7353
PW=loss-$$-secret
LOSS=${TS_LOSS:-1.5}
DELAY=5
N=$((8 << 20))
TS_MTU=1500
TS_APP_TIMEOUT=120

# ---- topology: lib.sh's, with linkem in place of the client-server veth -----
ts_ns_add "$NS_C"
ts_ns_add "$NS_S"
ts_ns_add "$NS_T"
ts_start_linkem linkem "$NS_C" --a-netns "/run/netns/$NS_C" --a-name lk0 \
    --b-netns "/run/netns/$NS_S" --b-name lk0 --delay "$DELAY" \
    --loss "$LOSS" --seed 14 --stats "$TS_TMP/stats.json"
LPID=$TS_LINKEM_PID
ts_client_link_up lk0
ts_target_link_up
ts_log "linkem between $NS_C and $NS_S: $LOSS % loss and $DELAY ms each way"

ts_make_pki
ts_write_configs "" "  trojan_passwords: [\"$PW\"]"
cp "$TS_TMP/client.yaml" "$TS_TMP/client-native.yaml"
ts_start_target
ts_prove_no_forward "$TS_TARGET_PORT"
ts_start_server

ts_start_danted "$DANTE_PORT"

# client_conf PROTOCOL CLIENT-LINES: a client config (TUN MTU 1500).
client_conf() {
	umask 077
	cat >"$TS_TMP/client.yaml" <<EOF
log: {level: ${TS_LOG_LEVEL:-info}, flows: true}
control: $TS_TMP/client.sock
tun: {name: $TS_TUN, mtu: $TS_MTU, address: [198.18.0.1/15, "fdfe:dcba:9876::1/64"]}
client:
  protocol: $1
  connect_timeout: 10s
$2
EOF
	umask 022
	"$TUNSPLIT" check -c "$TS_TMP/client.yaml" >"$TS_TMP/check.log" 2>&1 ||
	    ts_fail "tunsplit check ($1): $(cat "$TS_TMP/check.log")"
}

# stats FILE: linkem's counters since the last call (SIGUSR1).
stats() {
	local i
	rm -f "$TS_TMP/stats.json"
	kill -USR1 "$LPID" || ts_fail "linkem is gone"
	for i in $(seq 50); do
		[ -s "$TS_TMP/stats.json" ] && break
		sleep 0.02
	done
	mv "$TS_TMP/stats.json" "$1" 2>/dev/null ||
	    ts_fail "linkem wrote no counters on SIGUSR1"
}

# run_outbound NAME SEED: client up, download and upload N bytes through
# it, client down; linkem must have lost packets both ways meanwhile.
run_outbound() {
	local t0 t1 lost
	stats "$TS_TMP/idle-$1.json"
	ts_start_client
	t0=$(date +%s.%N)
	ts_updown "$1" "$TS_T_ADDR4" "$TS_TARGET_PORT" "$2" "$N"
	t1=$(date +%s.%N)
	stats "$TS_TMP/link-$1.json"
	lost=$("$TS_PY" - "$TS_TMP/link-$1.json" <<'PYEND'
import json, sys
s = json.load(open(sys.argv[1]))
a, b = s["a_to_b"], s["b_to_a"]
print("%d of %d client->server and %d of %d server->client packets lost"
      % (a["loss_pkts"], a["rx_pkts"], b["loss_pkts"], b["rx_pkts"]))
sys.exit(0 if a["loss_pkts"] > 0 and b["loss_pkts"] > 0 else 1)
PYEND
	) || ts_fail "$1: the outer link lost nothing in one direction: $lost"
	grep -q "lwIP out of memory" "$TS_TMP/client.log" &&
	    ts_fail "$1: the client logged lwIP out of memory"
	ts_check_alive
	kill -TERM "$TS_CLIENT_PID"
	wait "$TS_CLIENT_PID" 2>/dev/null
	ip -n "$NS_C" route del "$TS_T_NET4" 2>/dev/null
	ip -n "$NS_C" -6 route del "$TS_T_NET6" 2>/dev/null
	mv "$TS_TMP/client.log" "$TS_TMP/client-$1.log"
	ts_log "$1: $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s for $N bytes each way; $lost"
}

# ---- native, trojan, socks5 -----------------------------------------------------
cp "$TS_TMP/client-native.yaml" "$TS_TMP/client.yaml"
run_outbound native 51
client_conf trojan "  server: \"$TS_S_ADDR4:$TS_SERVER_PORT\"
  sni: $TS_SNI
  ca: $TS_TMP/ca.pem
  password: \"$PW\""
run_outbound trojan 52
grep -q "trojan" "$TS_TMP/server.log" ||
    ts_fail "trojan: the server logged no trojan session"
client_conf socks5 "  server: \"$TS_S_ADDR4:$DANTE_PORT\""
run_outbound socks5 53

# ---- direct: marked sockets leave by lk0, tss forwards to the target ------------
ts_sysctl "$NS_S" net/ipv4/ip_forward 1
ts_sysctl "$NS_C" net/ipv4/conf/all/rp_filter 0
ip -n "$NS_C" rule add fwmark "$MARK" lookup 7353 pref 100 ||
    ts_fail "ip rule"
ip -n "$NS_C" route add "$TS_T_NET4" via "$TS_S_ADDR4" dev lk0 table 7353 ||
    ts_fail "ip route table 7353"
client_conf direct "  mark: $MARK"
run_outbound direct 54
grep -q "\[$TS_C_ADDR4\]:[0-9]* SEND" "$TS_TMP/target.log" ||
    ts_fail "direct: the target saw no connection from $TS_C_ADDR4"
ts_alive "$LPID" || ts_fail "linkem died"
ts_pass "native, trojan, socks5 and direct over linkem ($LOSS % loss, $DELAY ms each way), TUN MTU 1500: $N bytes down and up each, sha256 match"
