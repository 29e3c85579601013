#!/bin/bash
# UDP with client.protocol socks5 through real SOCKS5 servers from Debian
# (issue 7): dante-server without authentication, v2ray 4.34's socks inbound
# (udp: true) with username/password.
#
#   tsc$$ 10.77.1.1 ------- 10.77.1.2 tss$$ 10.77.2.1 ------- 10.77.2.2 tst$$
#   app -> ts0 -> tunsplit       danted :1080 (no auth)        UDP echo on
#   (protocol socks5)            v2ray  :1081 (alice/pw)       ports 7, 8, 53
#
# For each proxy: one app socket sends datagrams of 1 to 8000 bytes (IPv4;
# 1400 with v2ray, which cuts datagrams at 2048 bytes)
# to two target ports and gets every one back byte for byte from the port
# it went to (one association: a control connection, one relayed UDP
# socket, many destinations); the same over IPv6 (dante); DNS to any
# address on port 53 is pinned to 10.77.2.2:53 through the proxy and
# answered as from the address asked; ICMP echo is dropped with one log
# line.  With dante the association's lifetime follows the control
# connection: when dante stops, the client ends the association ("proxy
# closed the control connection" or a reset), and after dante is back the
# next datagram works on a new one.  A wrong password fails the
# association (v2ray).  Skipped only if a package cannot be installed.
. "$(dirname "$0")/../lib.sh"
ts_init interop_udp_socks5

ts_need danted dante-server
ts_need v2ray v2ray
DANTED=$(command -v danted || echo /usr/sbin/danted)
DANTE_PORT=1080
V2RAY_PORT=1081

ts_topology_up
ts_start_udpecho 7 8 53

# ---- the proxies --------------------------------------------------------------
cat >"$TS_TMP/danted.conf" <<EOF
logoutput: stderr
internal: $TS_S_ADDR4 port = $DANTE_PORT
external: eth1
socksmethod: none
clientmethod: none
user.privileged: root
user.unprivileged: nobody
client pass { from: 0/0 to: 0/0 }
socks pass { from: 0/0 to: 0/0 command: udpassociate udpreply }
EOF
start_dante() {
	ts_bg "$NS_S" danted "$DANTED" -f "$TS_TMP/danted.conf" \
	    -p "$TS_TMP/danted.pid" -N 1
	DANTE_PID=$TS_LAST_PID
	ts_wait_port "$NS_S" "$DANTE_PORT" 10 "$DANTE_PID" ||
	    ts_fail "danted did not listen on $DANTE_PORT: $(tail -n 5 "$TS_TMP/danted.log")"
}
start_dante

cat >"$TS_TMP/v2ray.json" <<EOF
{
  "log": {"loglevel": "warning"},
  "inbounds": [{
    "listen": "$TS_S_ADDR4", "port": $V2RAY_PORT, "protocol": "socks",
    "settings": {"auth": "password", "udp": true, "ip": "$TS_S_ADDR4",
      "accounts": [{"user": "alice", "pass": "s3cret-$$"}]}
  }],
  "outbounds": [{"protocol": "freedom"}]
}
EOF
ts_bg "$NS_S" v2ray v2ray -config "$TS_TMP/v2ray.json"
V2RAY_PID=$TS_LAST_PID
ts_wait_port "$NS_S" "$V2RAY_PORT" 15 "$V2RAY_PID" ||
    ts_fail "v2ray did not listen on $V2RAY_PORT: $(tail -n 5 "$TS_TMP/v2ray.log")"

# ---- the client -----------------------------------------------------------------
# write_client PORT [EXTRA-YAML]
write_client() {
	cat >"$TS_TMP/client.yaml" <<EOF
log: {level: info, flows: true}
control: $TS_TMP/client.sock
tun: {name: $TS_TUN, mtu: 9000, address: [198.18.0.1/15, "fdfe:dcba:9876::1/64"]}
client:
  protocol: socks5
  server: "$TS_S_ADDR4:$1"
  dns: "$TS_T_ADDR4:53"
  udp_timeout: 30s
${2:-}
EOF
	"$TUNSPLIT" check -c "$TS_TMP/client.yaml" >"$TS_TMP/check.log" 2>&1 ||
	    ts_fail "tunsplit check: $(cat "$TS_TMP/check.log")"
}

stop_client() {
	kill -TERM "$TS_CLIENT_PID" 2>/dev/null
	wait "$TS_CLIENT_PID" 2>/dev/null
	mv "$TS_TMP/client.log" "$TS_TMP/client-$1.log"
}

out=$TS_TMP/apps.log
udp() { ts_udptool "$out" "$@"; }

# common TAG SIZES: what every proxy must do.
common() {
	udp fan --to "$TS_T_ADDR4:7" --to "$TS_T_ADDR4:8" \
	    --sizes "$2" || ts_fail "$1 IPv4: $(tail -n 3 "$out")"
	ts_log "$1 IPv4: $(tail -n 1 "$out")"
	udp echo --host 10.77.2.99 --port 53 --sizes 12,512 ||
	    ts_fail "$1 DNS pinning: $(tail -n 3 "$out")"
	ts_log "$1: DNS to 10.77.2.99:53 answered through the proxy by the pinned resolver"
	ts_expect_icmp_dropped "$1" socks5
}

# ---- dante, no authentication --------------------------------------------------
write_client "$DANTE_PORT"
ts_start_client
common dante 1,100,1400,8000
udp fan --to "[$TS_T_ADDR6]:7" --to "[$TS_T_ADDR6]:8" --sizes 1,1400,8000 \
    --seed 2 || ts_fail "dante IPv6: $(tail -n 3 "$out")"
ts_log "dante IPv6: $(tail -n 1 "$out")"

# The association lives as long as its control connection.
go=$TS_TMP/life.go
ip netns exec "$NS_C" timeout 60 "$TS_PY" -u - "$TS_T_ADDR4" "$go" \
    >>"$TS_TMP/life.log" 2>&1 <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(3)
def ping(tag):
    for _ in range(5):
        s.sendto(tag, (sys.argv[1], 7))
        try:
            d, _ = s.recvfrom(100)
            if d == tag:
                print("life: %s echoed" % tag.decode(), flush=True)
                return True
        except socket.timeout:
            pass
    print("life: %s lost" % tag.decode(), flush=True)
    return False
ok = ping(b"before")
print("life: waiting", flush=True)
while True:                 # the test restarts dante meanwhile
    try:
        open(sys.argv[2]).close()
        break
    except OSError:
        time.sleep(0.1)
ok = ping(b"after") and ok
sys.exit(0 if ok else 1)
PY
life=$!
ts_wait_log "$TS_TMP/life.log" "life: waiting" 100
grep -q "life: before echoed" "$TS_TMP/life.log" ||
    ts_fail "dante: no echo before the restart: $(cat "$TS_TMP/life.log")"
# dante's I/O children hold the sessions: stop all of ours (by PID, only
# those in our own namespace).
for pid in $(ip netns pids "$NS_S"); do
	[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = danted ] && kill -TERM "$pid"
done
wait "$DANTE_PID" 2>/dev/null
ts_wait_log "$TS_TMP/client.log" \
    "proxy \(closed\|reset\) the control connection" 100 ||
    ts_fail "dante stopped, but the client kept its associations"
start_dante
touch "$go"
wait "$life" || ts_fail "dante: no echo on a new association after the restart: $(cat "$TS_TMP/life.log")"
ts_log "dante: associations ended with the control connection; after the restart a new one works"
ts_alive "$TS_CLIENT_PID" || ts_fail "the client died"
stop_client dante

# ---- v2ray, username/password --------------------------------------------------
write_client "$V2RAY_PORT" "  username: alice
  password: \"s3cret-$$\""
ts_start_client
# v2ray relays at most 2048 bytes per datagram (its buffer size) and cuts
# longer ones: its limit, not ours.
common v2ray 1,100,1400
ts_alive "$TS_CLIENT_PID" || ts_fail "the client died"
stop_client v2ray

write_client "$V2RAY_PORT" "  username: alice
  password: wrong"
ts_start_client
if udp echo --host "$TS_T_ADDR4" --port 7 --sizes 10 --tries 1 --timeout 2; then
	ts_fail "v2ray: a wrong password got through"
fi
grep -q "proxy refused the username/password" "$TS_TMP/client.log" ||
    ts_fail "v2ray: wrong password, but no failure in the client log"
ts_log "v2ray: a wrong password fails the association"
ts_alive "$TS_CLIENT_PID" || ts_fail "the client died"
stop_client v2ray-wrong
ts_alive "$V2RAY_PID" || ts_fail "v2ray died"
ts_pass "UDP through dante (no auth, v4+v6, lifetime) and v2ray (username/password): several destinations per association, intact, DNS pinned, ICMP dropped"
