#!/bin/bash
# Per-user limits and the global max_udp on the server, enforced after
# authentication with an answer of status 9 (limit), counted and logged
# once per interval, refusing only the new work.  Sessions are opened
# straight to the server in the native protocol (limits.py native, two user
# keys), each TCP one proven with a round trip through the echo target:
#
#   tsc: limits.py (alice, bob) ══TLS══ tunsplit server ── tst: soak.py serve
#
#   alice: max_conns 5, max_udp 2      bob: the server's defaults
#   trojan password "tpw": max_conns 2
#   server: max_conns_per_user 50, max_udp 4
#
# 1. alice, 3 UDP sessions: 2 ok, 1 refused (her max_udp); held.
# 2. alice, 8 TCP sessions: 3 ok (her 2 UDP count as connections), 5
#    refused (her max_conns); held, and intact afterwards.
# 3. bob, 8 TCP sessions meanwhile: all 8 ok (not affected by alice).
# 4. bob, 3 UDP sessions: 2 ok, 1 refused (max_udp 4 for the server).
# 5. trojan with password tpw, 3 CONNECTs: 2 relayed, 1 closed (trojan has
#    no status byte).
# 6. All released: alice gets 5 TCP sessions again (counts given back).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../soaklib.sh"
ts_init fault_user_limits
TS_LIMITS_PY=$TS_LIB_DIR/limits.py

ts_topology_up
ts_make_pki
ts_write_configs "" "  max_conns_per_user: 50
  max_udp: 4
  trojan_passwords: [{password: tpw, max_conns: 2}]"
ka=$("$TUNSPLIT" genkey) && kb=$("$TUNSPLIT" genkey) || ts_fail "genkey"
ts_server_users "[{name: alice, key: \"$ka\", max_conns: 5, max_udp: 2}, {name: bob, key: \"$kb\"}]"
ts_start_soak_target
ts_start_server

# native NAME KEY KIND CONNS WANT_OK WANT_LIMIT: in the background, held
# until $TS_TMP/release; waits until all are open.  KEY trojan:PASSWORD
# makes trojan requests.
native() {
	local name=$1 key=$2 kind=$3 conns=$4 ok=$5 lim=$6 tag=$1-$3 cred
	cred=(--key "$key")
	[ "${key#trojan:}" = "$key" ] || cred=(--trojan "${key#trojan:}")
	ts_bg "$NS_C" "$tag" timeout 120 "$TS_PY" -u "$TS_LIMITS_PY" native \
	    --server "$TS_S_ADDR4" --port "$TS_SERVER_PORT" --ca "$TS_TMP/ca.pem" \
	    --sni "$TS_SNI" "${cred[@]}" --name "$name" --kind "$kind" \
	    --target "$TS_T_ADDR4" --tport "$TS_SOAK_PORT" --conns "$conns" \
	    --want-ok "$ok" --want-limit "$lim" --hold 90 \
	    --ready "$TS_TMP/$tag.ready" --release "$TS_TMP/release"
	eval "pid_${name}_$kind=$TS_LAST_PID"
	ts_wait_file "$TS_TMP/$tag.ready" 60 "$TS_LAST_PID" ||
	    ts_fail "$tag: $(tail -n 2 "$TS_TMP/$tag.log")"
	ts_log "$tag: $name $kind x$conns: $(cat "$TS_TMP/$tag.ready")"
	grep -q "\"ok\": $ok\b" "$TS_TMP/$tag.ready" ||
	    ts_fail "$tag: $ok ok expected: $(cat "$TS_TMP/$tag.ready")"
	if [ "$lim" -gt 0 ]; then
		grep -q "\"limit\": $lim\b" "$TS_TMP/$tag.ready" ||
		    ts_fail "$tag: $lim refused (status 9) expected: $(cat "$TS_TMP/$tag.ready")"
	else
		grep -q '"limit"' "$TS_TMP/$tag.ready" &&
		    ts_fail "$tag: refused, but not over any limit: $(cat "$TS_TMP/$tag.ready")"
	fi
	return 0
}

native alice "$ka" udp 3 2 1
native alice "$ka" tcp 8 3 5
native bob "$kb" tcp 8 8 0
native bob "$kb" udp 3 2 1
native trojan trojan:tpw tcp 3 2 1

# The refused sessions are closed by limits.py at once; the server may
# take a moment to see them go.
for i in $(seq 30); do
	st=$(ip netns exec "$NS_S" "$TUNSPLIT" status -s "$TS_TMP/server.sock" --json) ||
	    ts_fail "server status"
	printf '%s\n' "$st" | grep -q '"active":17,' && break
	sleep 0.1
done
printf '%s\n' "$st" >"$TS_TMP/status.json"
"$TS_PY" - "$TS_TMP/status.json" <<'EOF' || ts_fail "status counters: $st"
import json, sys
st = json.load(open(sys.argv[1]))
lim = st["limits"]
want = {"user_udp": 1, "user_conns": 6, "udp": 1, "source": 0, "conns": 0}
bad = {k: lim["refused"][k] for k in want if lim["refused"][k] != want[k]}
assert not bad, bad
assert lim["udp_sessions"] == 4 and lim["udp_max"] == 4, lim
assert st["sessions"]["active"] == 17, st["sessions"]
EOF
ts_log "status: refused user_udp 1, user_conns 6, udp 1; 17 sessions, 4 datagram"
for m in "user alice: max_udp 2 reached" "user alice: max_conns 5 reached" \
    "max_udp 4 reached"; do
	n=$(grep -c "$m" "$TS_TMP/server.log")
	[ "$n" -eq 1 ] || ts_fail "'$m' logged $n times, once expected"
done
# The trojan refusal came within 10 s of alice's: counted, not logged.
n=$(grep -c "limit user_conns: " "$TS_TMP/server.log")
[ "$n" -eq 1 ] || ts_fail "user_conns refusals logged $n times, once expected"

touch "$TS_TMP/release"
for p in "$pid_alice_udp" "$pid_alice_tcp" "$pid_bob_tcp" "$pid_bob_udp" \
    "$pid_trojan_tcp"; do
	wait "$p" || ts_fail "held sessions: $(cat "$TS_TMP"/*-tcp.log "$TS_TMP"/*-udp.log | grep held)"
done
ts_log "$(grep -h 'held' "$TS_TMP/alice-tcp.log" "$TS_TMP/bob-tcp.log" | tr '\n' ';')"
for i in $(seq 50); do
	a=$(ip netns exec "$NS_S" "$TUNSPLIT" status -s "$TS_TMP/server.sock" --json |
	    "$TS_PY" -c 'import json,sys; print(json.load(sys.stdin)["sessions"]["active"])')
	[ "$a" = 0 ] && break
	sleep 0.1
done
[ "$a" = 0 ] || ts_fail "$a sessions still live after the release"
rm -f "$TS_TMP/alice-tcp.ready"
native alice "$ka" tcp 5 5 0
wait "$pid_alice_tcp" || ts_fail "alice again: $(tail -n 1 "$TS_TMP/alice-tcp.log")"
ts_alive "$TS_SERVER_PID" || ts_fail "the server died"
ts_pass "alice refused past max_udp 2 and max_conns 5 (status 9), bob unaffected, max_udp 4 global, a trojan password past its max_conns 2 closed; counted, logged once per kind; counts given back"
