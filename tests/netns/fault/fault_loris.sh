#!/bin/bash
# Slow-loris at the server port: 300 TCP connections from a second address
# of the client host (10.77.1.3) that never finish the TLS handshake (half
# send the first bytes of a ClientHello, half nothing).  The server runs
# with max_conns 150, max_conns_per_source 100 and handshake_timeout 2s:
#
#   - 200 of the 300 are refused at accept (reset at once, within 1 s),
#     counted as per-source refusals and logged once;
#   - the other 100 are cut off by the handshake deadline within 5 s;
#   - meanwhile the real client (10.77.1.1, another source) still gets a
#     TLS handshake in well under the deadline and 100 real flows through
#     the tunnel work -- without the per-source limit the attacker would
#     hold all 150 connections and real users would wait for the deadline;
#   - afterwards the server holds no more descriptors than before.
#
#   tsc: soak.py loris (10.77.1.3) ─┐
#        tunsplit client (10.77.1.1) ┴─ tunsplit server ── tst: soak.py serve
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../soaklib.sh"
ts_init fault_loris

src2=10.77.1.3
ts_topology_up
ip -n "$NS_C" addr add "$src2/24" dev eth0 || ts_fail "second client address"
ts_make_pki
ts_write_configs "" "  handshake_timeout: 2s
  max_conns: 150
  max_conns_per_source: 100"
ts_start_soak_target
ts_start_server
ts_start_client
sfd0=$(ts_fd_count "$TS_SERVER_PID")

ready=$TS_TMP/loris.ready
ts_bg "$NS_C" loris "$TS_PY" -u "$TS_SOAK_PY" loris --host "$TS_S_ADDR4" \
    --port "$TS_SERVER_PORT" --conns 300 --within 5 --ready "$ready" \
    --source "$src2"
loris=$TS_LAST_PID
ts_wait_file "$ready" 20 "$loris" ||
    ts_fail "loris could not connect: $(tail -n 1 "$TS_TMP/loris.log")"
held=$(ts_fd_count "$TS_SERVER_PID")
# A real user's handshake during the attack: quick, not after the deadline.
probe=$(ip netns exec "$NS_C" timeout 20 "$TS_PY" -u "$TS_LIB_DIR/limits.py" \
    tlsprobe --server "$TS_S_ADDR4" --port "$TS_SERVER_PORT" \
    --ca "$TS_TMP/ca.pem" --sni "$TS_SNI" --source "$TS_C_ADDR4" --timeout 5) ||
    ts_fail "a real user's handshake during the attack: $probe"
secs=$(printf '%s' "$probe" | sed -n 's/.*done in \([0-9.]*\)s.*/\1/p')
awk -v s="$secs" 'BEGIN { exit !(s < 1.0) }' ||
    ts_fail "a real user's handshake took ${secs}s during the attack (deadline 2s)"
# Real users through the tunnel during the attack.
TS_APP_TIMEOUT=30
ts_soak_app churn --host "$TS_T_ADDR4" --port "$TS_SOAK_PORT" --conns 100 \
    --parallel 8 >"$TS_TMP/churn.log" 2>&1 ||
    ts_fail "real flows during the attack: $(tail -n 1 "$TS_TMP/churn.log")"
ts_log "during the attack (server holding $held descriptors): handshake ${secs}s; $(tail -n 1 "$TS_TMP/churn.log")"
wait "$loris"
rc=$?
ts_log "$(tail -n 1 "$TS_TMP/loris.log")"
[ $rc -eq 0 ] || ts_fail "$(tail -n 1 "$TS_TMP/loris.log")"
quick=$(sed -n 's/.*, \([0-9]*\) of them within 1s.*/\1/p' "$TS_TMP/loris.log")
[ "${quick:-0}" -ge 200 ] ||
    ts_fail "only ${quick:-0} loris connections refused at once, 200 expected"
st=$(ip netns exec "$NS_S" "$TUNSPLIT" status -s "$TS_TMP/server.sock" --json) ||
    ts_fail "server status"
refused=$(printf '%s' "$st" | "$TS_PY" -c 'import json,sys; print(json.load(sys.stdin)["limits"]["refused"]["source"])') ||
    ts_fail "no limits.refused.source in the server status: $st"
[ "$refused" -ge 200 ] || ts_fail "server counted $refused per-source refusals, 200 expected"
msgs=$(grep -c "source $src2: max_conns_per_source 100 reached" "$TS_TMP/server.log")
[ "$msgs" -eq 1 ] || ts_fail "per-source limit logged $msgs times, once expected"
for i in $(seq 30); do
	[ "$(ts_fd_count "$TS_SERVER_PID")" -le "$sfd0" ] && break
	sleep 0.1
done
[ "$(ts_fd_count "$TS_SERVER_PID")" -le "$sfd0" ] ||
    ts_fail "server holds $(ts_fd_count "$TS_SERVER_PID") descriptors, $sfd0 before"
ts_check_alive
ts_pass "300 half-open handshakes from one source: $quick refused at accept, the rest cut off by the deadline ($(sed -n 's/.*the last after \([0-9.]*s\).*/\1/p' "$TS_TMP/loris.log")); a real user's handshake ${secs}s and 100 real flows ok meanwhile"
