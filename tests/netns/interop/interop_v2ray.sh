#!/bin/bash
# trojan interoperability with v2ray 4.34 (Debian's v2ray), both ways.
#
#   (a) app -> dokodemo-door (127.0.0.1 in tsc) -> v2ray trojan outbound
#       ==TLS==> tunsplit server (trojan_passwords) -> target, TCP and UDP
#   (b) app -> ts0 -> tunsplit client (protocol: trojan) ==TLS==> v2ray
#       trojan inbound (in tss) -> freedom -> target, TCP and UDP
#
#   tsc$$ 10.77.1.1 ---- 10.77.1.2 tss$$ 10.77.2.1 ---- 10.77.2.2 tst$$
#   (a) v2ray client        tunsplit server :8443       tools.py :9000 (TCP)
#       dokodemo 127.0.0.1:  (trojan, egress allows     udptool  :7    (UDP)
#       10801.. (TCP) 10811.. (UDP)  10.77.2.0/24 only)
#   (b) tunsplit client     v2ray :8445
#
# TCP transfers are checked with SHA-256 on both ends (uploads against the
# hash the target logs at EOF: v2ray's relay may end a connection on the
# first EOF).  UDP datagrams are echoed by the target and compared byte for
# byte.  A datagram to the server's loopback must be denied by the tunsplit
# server's egress policy, counted and logged.
#
# Skipped, with a message, only when the v2ray package cannot be installed.
. "$(dirname "$0")/../lib.sh"
ts_init interop_v2ray

ts_need v2ray v2ray
V2RAY=$(command -v v2ray || echo /usr/sbin/v2ray)
PW=v2ray-$$-secret
V2RAY_PORT=8445
UDP_PORT=7
N=$((8 << 20))

# v2ray_start NS NAME JSON-FILE: v2ray in NS, checked by -test first.
v2ray_start() {
	"$V2RAY" -test -config "$3" >"$TS_TMP/$2-test.log" 2>&1 ||
	    ts_fail "v2ray rejects $3: $(tail -n 5 "$TS_TMP/$2-test.log")"
	ts_bg "$1" "$2" "$V2RAY" -config "$3"
}

# dokodemo TAG PORT NETWORK ADDRESS TARGET-PORT
dokodemo() {
	cat <<JSON
    { "tag": "$1", "listen": "127.0.0.1", "port": $2,
      "protocol": "dokodemo-door",
      "settings": { "address": "$4", "port": $5, "network": "$3" } },
JSON
}

udp() { ts_udptool "$TS_TMP/udpapp.log" "$@"; }

ts_topology_up
ts_make_pki
ts_write_configs "  protocol: trojan
  password: \"$PW\"" "  trojan_passwords: [\"other-password\", \"$PW\"]"
ts_start_target
ts_start_udpecho "$UDP_PORT"
ts_prove_no_forward "$TS_TARGET_PORT"
# Without forwarding, even routed, nothing reaches the target but through
# a proxy.
ip -n "$NS_C" route add "$TS_T_NET4" via "$TS_S_ADDR4"
ip -n "$NS_C" -6 route add "$TS_T_NET6" via "$TS_S_ADDR6"

# ---- (a) v2ray trojan outbound -> tunsplit server ---------------------------
ts_start_server
{
	cat <<JSON
{
  "log": { "loglevel": "info" },
  "inbounds": [
JSON
	dokodemo tcp4 10801 tcp "$TS_T_ADDR4" "$TS_TARGET_PORT"
	dokodemo tcp6 10802 tcp "$TS_T_ADDR6" "$TS_TARGET_PORT"
	dokodemo udp4 10811 udp "$TS_T_ADDR4" "$UDP_PORT"
	dokodemo udp6 10812 udp "$TS_T_ADDR6" "$UDP_PORT"
	dokodemo udplo 10813 udp 127.0.0.1 "$UDP_PORT"
	cat <<JSON
    { "tag": "unused", "listen": "127.0.0.1", "port": 10899,
      "protocol": "dokodemo-door",
      "settings": { "address": "127.0.0.1", "port": 9, "network": "tcp" } }
  ],
  "outbounds": [
    { "protocol": "trojan",
      "settings": { "servers": [ { "address": "$TS_S_ADDR4",
        "port": $TS_SERVER_PORT, "password": "$PW" } ] },
      "streamSettings": { "network": "tcp", "security": "tls",
        "tlsSettings": { "serverName": "$TS_SNI", "allowInsecure": false,
          "disableSystemRoot": true,
          "certificates": [ { "usage": "verify",
            "certificateFile": "$TS_TMP/ca.pem" } ] } } }
  ]
}
JSON
} >"$TS_TMP/v2ray-client.json"
v2ray_start "$NS_C" v2ray-client "$TS_TMP/v2ray-client.json"
V2RAY_CLIENT_PID=$TS_LAST_PID
ts_wait_port "$NS_C" 10899 10 "$V2RAY_CLIENT_PID" ||
    ts_fail "v2ray client did not listen"

ts_updown "(a) TCP via dokodemo 10801" 127.0.0.1 10801 41 "$N"
ts_updown "(a) TCP via dokodemo 10802" 127.0.0.1 10802 42 "$N"
grep -q "user trojan#1" "$TS_TMP/server.log" ||
    ts_fail "(a) the tunsplit server's log shows no trojan session"

# UDP: each datagram's echo byte for byte, both families.  Sizes stay
# below 2 KB: v2ray 4.34 handles trojan UDP in 2048-byte buffers, header
# included, and splits or corrupts larger datagrams on its own side (seen
# against a plain Python trojan peer as well); tunsplit then ends the
# association as malformed, as it must.
udp echo --host 127.0.0.1 --port 10811 --sizes 1,512,1400,2000 --seed 3 ||
    ts_fail "(a) UDP echo to $TS_T_ADDR4: $(tail -n 3 "$TS_TMP/udpapp.log")"
udp echo --host 127.0.0.1 --port 10812 --sizes 1,512,1400,2000 --seed 4 ||
    ts_fail "(a) UDP echo to $TS_T_ADDR6: $(tail -n 3 "$TS_TMP/udpapp.log")"
ts_log "(a) UDP: $(grep -c intact "$TS_TMP/udpapp.log") datagrams echoed intact (IPv4, IPv6)"
# Many datagrams in a row over one association: all come back.
udp stream --host 127.0.0.1 --port 10811 --count 200 --seconds 2 ||
    ts_fail "(a) UDP stream: $(tail -n 3 "$TS_TMP/udpapp.log")"
ts_log "(a) UDP stream: $(grep stream "$TS_TMP/udpapp.log" | tail -n 1)"
grep -q "udp: up [1-9][0-9]* dgrams .*(trojan)" "$TS_TMP/server.log" || {
	# The summary is logged when the association ends: v2ray closes
	# idle UDP after a while; stop it to get the summary now.
	kill -TERM "$V2RAY_CLIENT_PID" 2>/dev/null
	wait "$V2RAY_CLIENT_PID" 2>/dev/null
	ts_wait_log "$TS_TMP/server.log" "udp: up .*(trojan)"
}
grep -q "udp: up [1-9][0-9]* dgrams .*(trojan)" "$TS_TMP/server.log" ||
    ts_fail "(a) the tunsplit server logged no trojan UDP association"

# Egress policy: the server's loopback is not an allowed target.
ts_alive "$V2RAY_CLIENT_PID" || {
	v2ray_start "$NS_C" v2ray-client "$TS_TMP/v2ray-client.json"
	V2RAY_CLIENT_PID=$TS_LAST_PID
	ts_wait_port "$NS_C" 10899 10 "$V2RAY_CLIENT_PID" ||
	    ts_fail "v2ray client did not listen again"
}
if udp echo --host 127.0.0.1 --port 10813 --sizes 1 --timeout 1 --tries 2; then
	ts_fail "(a) a datagram to the server's loopback came back"
fi
ts_wait_log "$TS_TMP/server.log" \
    "udp to 127.0.0.1:$UDP_PORT denied by the egress policy" ||
    ts_fail "(a) no egress denial for 127.0.0.1 in the server log"
ts_log "(a) UDP to the server's loopback: denied and logged"
kill -TERM "$V2RAY_CLIENT_PID" 2>/dev/null
wait "$V2RAY_CLIENT_PID" 2>/dev/null
ts_wait_log "$TS_TMP/server.log" "udp: up .* [1-9][0-9]* denied.*(trojan)" ||
    ts_fail "(a) the denial was not counted in the association's summary"
ts_alive "$TS_SERVER_PID" || ts_fail "the tunsplit server died"
ts_stop_server
ts_log "(a) passed"

# ---- (b) tunsplit client -> v2ray trojan inbound ------------------------------
ip -n "$NS_C" route del "$TS_T_NET4" via "$TS_S_ADDR4"
ip -n "$NS_C" -6 route del "$TS_T_NET6" via "$TS_S_ADDR6"
cat >"$TS_TMP/v2ray-server.json" <<JSON
{
  "log": { "loglevel": "info" },
  "inbounds": [
    { "listen": "$TS_S_ADDR4", "port": $V2RAY_PORT, "protocol": "trojan",
      "settings": { "clients": [ { "password": "$PW" } ] },
      "streamSettings": { "network": "tcp", "security": "tls",
        "tlsSettings": { "certificates": [
          { "certificateFile": "$TS_TMP/server.pem",
            "keyFile": "$TS_TMP/server.key" } ] } } }
  ],
  "outbounds": [ { "protocol": "freedom" } ]
}
JSON
v2ray_start "$NS_S" v2ray-server "$TS_TMP/v2ray-server.json"
V2RAY_SERVER_PID=$TS_LAST_PID
ts_wait_port "$NS_S" "$V2RAY_PORT" 10 "$V2RAY_SERVER_PID" ||
    ts_fail "v2ray server did not listen on $V2RAY_PORT"
sed -i "s/:$TS_SERVER_PORT\"/:$V2RAY_PORT\"/" "$TS_TMP/client.yaml"
ts_start_client

ts_updown "(b) $TS_T_ADDR4" "$TS_T_ADDR4" "$TS_TARGET_PORT" 51 "$N"
ts_updown "(b) $TS_T_ADDR6" "$TS_T_ADDR6" "$TS_TARGET_PORT" 52 "$N"
# v2ray relayed it: its log names the target.
grep -q "$TS_T_ADDR4:$TS_TARGET_PORT" "$TS_TMP/v2ray-server.log" ||
    ts_fail "(b) v2ray's log does not show the target"

# UDP: the app's datagrams leave the TUN as a trojan UDP ASSOCIATE to
# v2ray, which sends them on (freedom); sizes below 2 KB as in (a).
udp echo --host "$TS_T_ADDR4" --port "$UDP_PORT" --sizes 1,512,1400,2000 \
    --seed 5 || ts_fail "(b) UDP echo from $TS_T_ADDR4: $(tail -n 3 "$TS_TMP/udpapp.log")"
udp echo --host "$TS_T_ADDR6" --port "$UDP_PORT" --sizes 1,512,1400,2000 \
    --seed 6 || ts_fail "(b) UDP echo from $TS_T_ADDR6: $(tail -n 3 "$TS_TMP/udpapp.log")"
udp stream --host "$TS_T_ADDR4" --port "$UDP_PORT" --count 200 --seconds 2 ||
    ts_fail "(b) UDP stream: $(tail -n 3 "$TS_TMP/udpapp.log")"
ts_log "(b) UDP: $(grep intact "$TS_TMP/udpapp.log" | tail -n 9 | grep -c 'bytes intact') datagrams echoed intact (IPv4, IPv6); $(grep stream "$TS_TMP/udpapp.log" | tail -n 1)"
grep -q "accepted udp:$TS_T_ADDR4:$UDP_PORT" "$TS_TMP/v2ray-server.log" ||
    ts_fail "(b) v2ray's log shows no UDP to $TS_T_ADDR4:$UDP_PORT"
ts_alive "$V2RAY_SERVER_PID" || ts_fail "v2ray server died"
ts_alive "$TS_CLIENT_PID" || ts_fail "the tunsplit client died"
ts_pass "(a) v2ray trojan outbound -> tunsplit server: TCP v4+v6 $N bytes each way sha256 match, UDP echo intact v4+v6, egress denial; (b) tunsplit client -> v2ray trojan inbound: TCP v4+v6 $N bytes each way sha256 match, UDP echo intact v4+v6"
