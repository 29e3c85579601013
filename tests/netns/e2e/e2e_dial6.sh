#!/bin/bash
# The client dials its server or proxy over IPv6: `server:` is an IPv6
# literal for each outbound that has one, and the far end listens on
# nothing else.
#
#   tsc$$ fd77:1::1 ------------ fd77:1::2 tss$$ ------------- tst$$
#   app -> ts0 (MTU 1500)        tunsplit server [fd77:1::2]:8443    tools.py :9000
#   -> tunsplit client           (native and trojan, IPv6 only)      10.77.2.2,
#      server: "[fd77:1::2]:..." microsocks [fd77:1::2]:1080         fd77:2::2
#
# For the native protocol, trojan (the tunsplit server's
# trojan_passwords) and socks5 (microsocks): the listener has no IPv4
# address, so every flow crossed IPv6; 16 MiB down and 16 MiB up to the
# target's IPv4 and IPv6 address, SHA-256 checked at both ends; the
# tunsplit server logged the client's IPv6 source for each session, and
# the client's status names the IPv6 server.  The TUN MTU is 1500 (TS_MTU
# overrides), so the apps announce MSS 1460 and 1440 as LAN hosts do.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_dial6
ts_need microsocks microsocks
MICROSOCKS=$(command -v microsocks || echo /usr/sbin/microsocks)
TS_MTU=${TS_MTU:-1500}
N=$((16 << 20))
PW="pw-$$-dial6"
SOCKS_PORT=1080
DIAL6="[$TS_S_ADDR6]"

# set_dial6 PORT: the client config dials $DIAL6:PORT, and still checks.
set_dial6() {
	sed -i -e "s|^  server: .*|  server: \"$DIAL6:$1\"|" "$TS_TMP/client.yaml"
	grep -q "^  server: \"\[$TS_S_ADDR6\]:$1\"\$" "$TS_TMP/client.yaml" ||
	    ts_fail "client config: no IPv6 server line"
	"$TUNSPLIT" check -c "$TS_TMP/client.yaml" >"$TS_TMP/check6.log" 2>&1 ||
	    ts_fail "tunsplit check: $(cat "$TS_TMP/check6.log")"
}

restart_client() {
	if [ -n "${TS_CLIENT_PID:-}" ] && ts_alive "$TS_CLIENT_PID"; then
		kill -TERM "$TS_CLIENT_PID" 2>/dev/null
		wait "$TS_CLIENT_PID" 2>/dev/null
	fi
	: >"$TS_TMP/client.log"
	ts_start_client
}

# transfers TAG SEED: down and up to both of the target's addresses.
transfers() {
	local h s=$2
	for h in "$TS_T_ADDR4" "$TS_T_ADDR6"; do
		s=$((s + 1))
		ts_updown "$1 $h" "$h" "$TS_TARGET_PORT" "$s" "$N"
	done
}

# client_status TAG WANT-SERVER: the client's status names the server it
# dials and counts 4 flows, none failed.
client_status() {
	for _ in $(seq 50); do
		ip netns exec "$NS_C" "$TUNSPLIT" status --json \
		    -s "$TS_TMP/client.sock" >"$TS_TMP/status.json" 2>&1 ||
		    ts_fail "$1: tunsplit status: $(cat "$TS_TMP/status.json")"
		grep -q '"active":0[,}]' "$TS_TMP/status.json" && break
		sleep 0.1
	done
	"$TS_PY" - "$TS_TMP/status.json" "$2" <<'EOF' ||
import json, sys
j = json.load(open(sys.argv[1]))
f = j["flows"]
sys.exit(0 if j.get("server") == sys.argv[2] and f["total"] == 4 and
         f["active"] == 0 and f["failed"] == 0 and
         f.get("internal", 0) == 0 else 1)
EOF
	    ts_fail "$1: status, want server $2 and 4 flows: $(cat "$TS_TMP/status.json")"
}

# server_saw_v6 TAG: the tunsplit server logged 4 more sessions, all from
# the client's IPv6 address.
server_saw_v6() {
	local n
	n=$(grep -c "sess [0-9]*: closed: \[$TS_C_ADDR6\]:[0-9]* -> " \
	    "$TS_TMP/server.log")
	[ "$n" -ge $((seen + 4)) ] ||
	    ts_fail "$1: the server logged $((n - seen)) sessions from [$TS_C_ADDR6], want 4"
	grep -q "sess [0-9]*: closed: $TS_C_ADDR4:" "$TS_TMP/server.log" &&
	    ts_fail "$1: a session came over IPv4"
	seen=$n
}

ts_topology_up
ts_make_pki
ts_write_configs "  pool: 0" "  trojan_passwords: [\"$PW\"]"
# The server listens on its IPv6 address only.
sed -i -e "s|^  listen: .*|  listen: [\"$DIAL6:$TS_SERVER_PORT\"]|" \
    "$TS_TMP/server.yaml"
"$TUNSPLIT" check -c "$TS_TMP/server.yaml" >"$TS_TMP/check-s6.log" 2>&1 ||
    ts_fail "server config: $(cat "$TS_TMP/check-s6.log")"
set_dial6 "$TS_SERVER_PORT"
ts_start_target
ts_prove_no_forward "$TS_TARGET_PORT"
ts_start_server
ip netns exec "$NS_S" ss -Hltn "sport = :$TS_SERVER_PORT" >"$TS_TMP/listen.txt"
grep -q "$TS_S_ADDR4" "$TS_TMP/listen.txt" &&
    ts_fail "the server listens on IPv4: $(cat "$TS_TMP/listen.txt")"
seen=0

# ---- native ------------------------------------------------------------------
ts_start_client
ts_log "native: client dials $DIAL6:$TS_SERVER_PORT (TUN MTU $TS_MTU)"
transfers native 10
client_status native "$DIAL6:$TS_SERVER_PORT"
server_saw_v6 native

# ---- trojan --------------------------------------------------------------------
sed -i -e "s|^  key: .*|  protocol: trojan\n  password: \"$PW\"|" \
    "$TS_TMP/client.yaml"
set_dial6 "$TS_SERVER_PORT"
restart_client
ts_log "trojan: client dials $DIAL6:$TS_SERVER_PORT"
transfers trojan 20
client_status trojan "$DIAL6:$TS_SERVER_PORT"
server_saw_v6 trojan
grep -q "user trojan#0" "$TS_TMP/server.log" ||
    ts_fail "trojan: the server did not log the trojan password's sessions"

# ---- socks5 --------------------------------------------------------------------
ts_bg "$NS_S" microsocks "$MICROSOCKS" -i "$TS_S_ADDR6" -p "$SOCKS_PORT"
ts_wait_port "$NS_S" "$SOCKS_PORT" 10 "$TS_LAST_PID" ||
    ts_fail "microsocks did not listen on $DIAL6:$SOCKS_PORT"
ip netns exec "$NS_S" ss -Hltn "sport = :$SOCKS_PORT" | grep -q "$TS_S_ADDR4" &&
    ts_fail "microsocks listens on IPv4"
sed -i -e "s|^  protocol: trojan|  protocol: socks5|" -e '/^  password: /d' \
    -e '/^  sni: /d' -e '/^  ca: /d' -e '/^  congestion: /d' \
    -e '/^  pool: /d' "$TS_TMP/client.yaml"
set_dial6 "$SOCKS_PORT"
restart_client
ts_log "socks5: client dials microsocks at $DIAL6:$SOCKS_PORT"
transfers socks5 30
client_status socks5 "$DIAL6:$SOCKS_PORT"
n=$(grep -c "sess [0-9]*: closed:" "$TS_TMP/server.log")
[ "$n" = "$seen" ] || ts_fail "socks5: flows went to the tunsplit server"

ts_check_alive
ts_pass "native, trojan and socks5 dialed [$TS_S_ADDR6] (IPv6 only): $((N >> 20)) MiB down and up to IPv4 and IPv6 targets each, intact, TUN MTU $TS_MTU"
