#!/bin/bash
# UDP with client.protocol trojan (trojan UDP ASSOCIATE over TLS) through
# real trojan servers (issue 7):
#
#   (a) Debian's trojan (trojan-gfw 1.16), run_type server
#   (b) Debian's v2ray 4.34, trojan inbound, freedom outbound
#   (c) the tunsplit server with trojan_passwords
#
#   tsc$$ 10.77.1.1 ------- 10.77.1.2 tss$$ 10.77.2.1 ------- 10.77.2.2 tst$$
#   app -> ts0 -> tunsplit       (a) trojan :8444              UDP echo on
#   (protocol trojan, no key)    (b) v2ray  :8445              ports 7, 8, 53
#                                (c) tunsplit server :8443
#
# For each server: one app socket sends datagrams to two target ports and
# gets every one back byte for byte from the port it went to (one TLS
# stream, many destinations: full cone); IPv6 the same way; DNS to any
# address on port 53 is pinned to 10.77.2.2:53 and answered as from the
# address asked; ICMP echo is dropped with one log line.  Sizes: up to
# 8000 bytes (trojan-gfw's buffer is 8192), 1400 with v2ray (it cuts
# datagrams at 2048 bytes), 65000 with the tunsplit server.  Skipped
# only if a package cannot be installed.
. "$(dirname "$0")/../lib.sh"
ts_init interop_udp_trojan

ts_need trojan trojan
ts_need v2ray v2ray
PW=udp-$$-secret
TROJAN_PORT=8444
V2RAY_PORT=8445

ts_topology_up
ts_make_pki
ts_write_configs "  protocol: trojan
  password: \"$PW\"
  dns: \"$TS_T_ADDR4:53\"
  udp_timeout: 30s" "  trojan_passwords: [\"$PW\"]"
# No key needed any more for trojan's UDP: the client must not use it.
sed -i '/^  key: /d' "$TS_TMP/client.yaml"
"$TUNSPLIT" check -c "$TS_TMP/client.yaml" >"$TS_TMP/check.log" 2>&1 ||
    ts_fail "tunsplit check: $(cat "$TS_TMP/check.log")"
ts_start_udpecho 7 8 53

out=$TS_TMP/apps.log
udp() { ts_udptool "$out" "$@"; }

# run_client TAG PORT SIZES: the client against the server on PORT.
run_client() {
	sed -i "s/^  server: .*/  server: \"$TS_S_ADDR4:$2\"/" \
	    "$TS_TMP/client.yaml"
	ts_start_client
	udp fan --to "$TS_T_ADDR4:7" --to "$TS_T_ADDR4:8" --sizes "$3" ||
	    ts_fail "$1 IPv4: $(tail -n 3 "$out")"
	ts_log "$1 IPv4: $(tail -n 1 "$out")"
	udp fan --to "[$TS_T_ADDR6]:7" --to "[$TS_T_ADDR6]:8" --sizes "$3" \
	    --seed 2 || ts_fail "$1 IPv6: $(tail -n 3 "$out")"
	ts_log "$1 IPv6: $(tail -n 1 "$out")"
	udp echo --host 10.77.2.99 --port 53 --sizes 12,512 ||
	    ts_fail "$1 DNS pinning: $(tail -n 3 "$out")"
	ts_log "$1: DNS to 10.77.2.99:53 answered by the pinned resolver"
	ts_expect_icmp_dropped "$1" trojan
	grep -q "malformed\|TLS handshake with server failed" \
	    "$TS_TMP/client.log" && ts_fail "$1: $(grep -m1 malformed "$TS_TMP/client.log")"
	ts_alive "$TS_CLIENT_PID" || ts_fail "the client died"
	kill -TERM "$TS_CLIENT_PID" 2>/dev/null
	wait "$TS_CLIENT_PID" 2>/dev/null
	mv "$TS_TMP/client.log" "$TS_TMP/client-$1.log"
}

# ---- (a) Debian's trojan ---------------------------------------------------------
ts_bg "$NS_S" fallback "$TS_PY" -m http.server --bind 127.0.0.1 8081
ts_start_trojan_gfw "$TROJAN_PORT" "$PW"
run_client trojan-gfw "$TROJAN_PORT" 1,100,1400,8000
ts_alive "$TROJAN_PID" || ts_fail "trojan died"
grep -q "UDP" "$TS_TMP/trojan-$TROJAN_PORT.log" ||
    ts_fail "trojan-gfw's log shows no UDP session"

# ---- (b) v2ray's trojan inbound ------------------------------------------------
cat >"$TS_TMP/v2ray.json" <<EOF
{
  "log": {"loglevel": "warning"},
  "inbounds": [{
    "listen": "$TS_S_ADDR4", "port": $V2RAY_PORT, "protocol": "trojan",
    "settings": {"clients": [{"password": "$PW"}]},
    "streamSettings": {"network": "tcp", "security": "tls",
      "tlsSettings": {"certificates": [{"certificateFile":
        "$TS_TMP/server.pem", "keyFile": "$TS_TMP/server.key"}]}}
  }],
  "outbounds": [{"protocol": "freedom"}]
}
EOF
ts_bg "$NS_S" v2ray v2ray -config "$TS_TMP/v2ray.json"
V2RAY_PID=$TS_LAST_PID
ts_wait_port "$NS_S" "$V2RAY_PORT" 15 "$V2RAY_PID" ||
    ts_fail "v2ray did not listen on $V2RAY_PORT"
run_client v2ray "$V2RAY_PORT" 1,100,1400
ts_alive "$V2RAY_PID" || ts_fail "v2ray died"

# ---- (c) the tunsplit server -----------------------------------------------------
ts_start_server
run_client tunsplit "$TS_SERVER_PORT" 1,100,1400,8000,65000
ts_alive "$TS_SERVER_PID" || ts_fail "the server died"
grep -q "trojan" "$TS_TMP/server.log" ||
    ts_fail "(c) the tunsplit server's log shows no trojan session"
ts_pass "trojan UDP through trojan-gfw, v2ray and the tunsplit server: intact to several destinations per association, v4+v6, DNS pinned, ICMP dropped"
