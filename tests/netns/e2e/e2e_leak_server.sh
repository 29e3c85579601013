#!/bin/bash
# route: auto lets only the daemon's own (marked) sockets reach the
# server's address around the TUN; an app's connection to that address
# goes through the tunnel like any other (issue 20, defect 5).
#
#  tsc$$ (client)                       tss$$ (server)
#  eth0 10.77.1.1 ---------------------- eth0 10.77.1.2
#  default via 10.77.1.2                 lo 10.77.3.2: the server's public
#  route: auto, server 10.77.3.2:8443         address, reached by the
#  TUN tsx$$                                  client's default route;
#                                            tunsplit on :8443, tools.py
#                                            serve on :9100 (egress allows
#                                            10.77.3.2/32 for this test)
#  target tst$$ as in lib.sh
#
# Without the client, the app reaches 10.77.3.2:9100 from 10.77.1.1.  With
# the client up, the tunnel to 10.77.3.2:8443 works (a download from the
# target through it), and the app's download from 10.77.3.2:9100 arrives
# intact but through the tunnel: the service sees the tunsplit server's
# own address, not 10.77.1.1, and the client's status counts the flow.
# With `to SERVER lookup main` the app's connection went around the TUN.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_leak_server
export PATH="$TS_SRCDIR/src/route:$PATH"
command -v tunsplit-route >/dev/null || ts_fail "tunsplit-route not found"

PUB=10.77.3.2 SVC_PORT=9100
TS_TUN=tsx$$
STATE=/run/tunsplit/$TS_TUN.state
trap 'rm -f "$STATE"; ts_cleanup' EXIT

ts_topology_up
ip -n "$NS_S" addr add "$PUB/32" dev lo
ip -n "$NS_C" route add default via "$TS_S_ADDR4" || ts_fail "default route"
ts_bg "$NS_S" svc "$TS_PY" -u "$TS_TOOLS" serve --bind "$PUB" \
    --port "$SVC_PORT"
ts_wait_port "$NS_S" "$SVC_PORT" 10 "$TS_LAST_PID" ||
    ts_fail "the service on the server's address did not listen"
ts_start_target

svc_fetch() {	# svc_fetch SEED: 256 KiB from the service, hash checked
	ts_app recv --host "$PUB" --port "$SVC_PORT" --bytes 256k \
	    --seed "$1" --timeout 10 2>&1
}

out=$(svc_fetch 1) || ts_fail "no path to $PUB:$SVC_PORT without the client: $out"
grep -q "target: \[$TS_C_ADDR4\]:[0-9]* SEND 262144 " "$TS_TMP/svc.log" ||
    ts_fail "without the client the service did not see $TS_C_ADDR4"
ts_log "without the client, $PUB:$SVC_PORT is reached directly from $TS_C_ADDR4"

ts_make_pki
ts_write_configs "  mark: 0x7353
  route: auto"
sed -i "s|^  server: \"$TS_S_ADDR4:$TS_SERVER_PORT\"\$|  server: \"$PUB:$TS_SERVER_PORT\"|" \
    "$TS_TMP/client.yaml"
sed -i -e "s|^  listen: \[\"$TS_S_ADDR4:$TS_SERVER_PORT\", |  listen: [\"$PUB:$TS_SERVER_PORT\", \"$TS_S_ADDR4:$TS_SERVER_PORT\", |" \
    -e "s|^  egress: {allow: \[$TS_T_NET4, |  egress: {allow: [$PUB/32, $TS_T_NET4, |" \
    "$TS_TMP/server.yaml"
grep -q "server: \"$PUB:" "$TS_TMP/client.yaml" &&
    grep -q "listen: \[\"$PUB:" "$TS_TMP/server.yaml" &&
    grep -q "allow: \[$PUB/32," "$TS_TMP/server.yaml" ||
    ts_fail "could not point the configs at $PUB"
"$TUNSPLIT" check -c "$TS_TMP/server.yaml" >"$TS_TMP/check-server2.log" 2>&1 ||
    ts_fail "server config: $(cat "$TS_TMP/check-server2.log")"
ts_start_server
ts_wait_port "$NS_S" "$TS_SERVER_PORT" 10 "$TS_SERVER_PID" ||
    ts_fail "the server does not listen"
ts_start_client_routed

# The tunnel itself, whose outer connections go to $PUB, works.
out=$(ts_app recv --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --bytes 1m \
    --seed 2 2>&1) || ts_fail "through the tunnel to the target: $out"
grep -q "target: \[$TS_S2_ADDR4\]:[0-9]* SEND 1048576 " "$TS_TMP/target.log" ||
    ts_fail "the target download did not come through the tunnel"
ts_log "the tunnel to $PUB:$TS_SERVER_PORT carries flows: $out"

out=$(svc_fetch 3) || ts_fail "app to $PUB:$SVC_PORT with the client up: $out"
peers=$(sed -n 's/.*target: \[\([0-9.]*\)\]:[0-9]* SEND 262144 .*/\1/p' \
    "$TS_TMP/svc.log")
[ "$(echo "$peers" | wc -l)" = 2 ] ||
    ts_fail "the service logged $(echo "$peers" | wc -l) downloads, want 2: $peers"
last=$(echo "$peers" | tail -n 1)
[ "$last" != "$TS_C_ADDR4" ] ||
    ts_fail "the app's connection to the server's address $PUB went around the TUN (the service saw $TS_C_ADDR4)"
ip netns exec "$NS_C" "$TUNSPLIT" status --json -s "$TS_TMP/client.sock" \
    >"$TS_TMP/status.json" 2>&1 || ts_fail "status: $(cat "$TS_TMP/status.json")"
"$TS_PY" - "$TS_TMP/status.json" <<'EOF' ||
import json, sys
f = json.load(open(sys.argv[1]))["flows"]
sys.exit(0 if f["total"] >= 2 and f["failed"] == 0 else 1)
EOF
    ts_fail "the client's status does not count both flows: $(cat "$TS_TMP/status.json")"
ts_log "app to $PUB:$SVC_PORT through the tunnel (the service saw $last): $out"
ts_check_alive
ts_pass "the server's address: the daemon's marked sockets reach it directly, an app's connection to it goes through the tunnel"
