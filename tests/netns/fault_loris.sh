#!/bin/bash
# Slow-loris at the server port: 300 TCP connections from the client host
# that never finish the TLS handshake (half send the first bytes of a
# ClientHello, half nothing).  With handshake_timeout 2s the server must
# cut every one of them off within 5 s, while real flows through the tunnel
# keep working during the attack; afterwards the server holds no more
# descriptors than before.  (The server has no per-source limit yet: only
# the deadline and max_conns bound such a client.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/soaklib.sh"
ts_init fault_loris

ts_topology_up
ts_make_pki
ts_write_configs "" "  handshake_timeout: 2s"
ts_start_soak_target
ts_start_server
ts_start_client
sfd0=$(ts_fd_count "$TS_SERVER_PID")

ready=$TS_TMP/loris.ready
ts_bg "$NS_C" loris "$TS_PY" -u "$TS_SOAK_PY" loris --host "$TS_S_ADDR4" \
    --port "$TS_SERVER_PORT" --conns 300 --within 5 --ready "$ready"
loris=$TS_LAST_PID
ts_wait_file "$ready" 20 "$loris" ||
    ts_fail "loris could not connect: $(tail -n 1 "$TS_TMP/loris.log")"
held=$(ts_fd_count "$TS_SERVER_PID")
# Real users during the attack.
TS_APP_TIMEOUT=30
ts_soak_app churn --host "$TS_T_ADDR4" --port "$TS_SOAK_PORT" --conns 100 \
    --parallel 8 >"$TS_TMP/churn.log" 2>&1 ||
    ts_fail "real flows during the attack: $(tail -n 1 "$TS_TMP/churn.log")"
ts_log "during the attack (server holding $held descriptors): $(tail -n 1 "$TS_TMP/churn.log")"
wait "$loris"
rc=$?
ts_log "$(tail -n 1 "$TS_TMP/loris.log")"
[ $rc -eq 0 ] || ts_fail "$(tail -n 1 "$TS_TMP/loris.log")"
for i in $(seq 30); do
	[ "$(ts_fd_count "$TS_SERVER_PID")" -le "$sfd0" ] && break
	sleep 0.1
done
[ "$(ts_fd_count "$TS_SERVER_PID")" -le "$sfd0" ] ||
    ts_fail "server holds $(ts_fd_count "$TS_SERVER_PID") descriptors, $sfd0 before"
ts_check_alive
ts_pass "300 half-open handshakes cut off by the deadline ($(sed -n 's/.*the last after \([0-9.]*s\).*/\1/p' "$TS_TMP/loris.log")); 100 real flows ok meanwhile"
