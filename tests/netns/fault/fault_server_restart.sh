#!/bin/bash
# The server restarted again and again under load: eight apps keep opening
# short flows without pause while the server is killed (SIGKILL and, every
# other time, SIGTERM twice: drain, then stop) and started again, TS_RESTARTS
# times (default 3, 10 with TS_SOAK=1).  The client must survive all of it;
# the flows in between fail fast (reset, not hang); after each restart the
# time until the first successful flow is measured (limit 5 s), and at the
# end every new flow works again.  The recovery time runs from the moment
# the new server process is started.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../soaklib.sh"
ts_init fault_server_restart

restarts=${TS_RESTARTS:-$(ts_soak_size 3 10)}
ts_topology_up
ts_soak_sysctls
ts_make_pki
ts_write_configs
ts_start_soak_target
ts_start_server
ts_start_client

events=$TS_TMP/events
duration=$((restarts * 5 + 6))
ts_bg "$NS_C" churn "$TS_PY" -u "$TS_SOAK_PY" churn --host "$TS_T_ADDR4" \
    --port "$TS_SOAK_PORT" --parallel 8 --timeout 10 --duration "$duration" \
    --events "$events"
churn=$TS_LAST_PID
sleep 2
up_times=()
for i in $(seq "$restarts"); do
	if [ $((i % 2)) -eq 1 ]; then
		ts_stop_server KILL
	else
		kill -TERM "$TS_SERVER_PID"
		sleep 0.3
		ts_stop_server TERM
	fi
	sleep 1
	ts_alive "$TS_CLIENT_PID" || ts_fail "the client died with the server (restart $i)"
	up_times+=("$(date +%s.%N)")
	ts_start_server
	sleep 3
done
wait "$churn"
rc=$?
ts_log "$(tail -n 1 "$TS_TMP/churn.log")"
[ $rc -eq 0 ] || ts_fail "load generator: $(tail -n 1 "$TS_TMP/churn.log")"
grep -q '"timeout"' "$TS_TMP/churn.log" &&
    ts_fail "some flows hung until their timeout instead of failing: $(tail -n 1 "$TS_TMP/churn.log")"
out=$TS_TMP/recovery.log
"$TS_PY" "$TS_SOAK_PY" recovery --events "$events" --limit 5 \
    --restarts "${up_times[@]}" >"$out" 2>&1
rc=$?
ts_log "$(cat "$out")"
[ $rc -eq 0 ] || ts_fail "$(tail -n 1 "$out")"
TS_APP_TIMEOUT=60
ts_soak_app churn --host "$TS_T_ADDR4" --port "$TS_SOAK_PORT" --conns 200 \
    --parallel 8 >"$TS_TMP/after.log" 2>&1 ||
    ts_fail "after the restarts: $(tail -n 1 "$TS_TMP/after.log")"
ts_check_alive
ts_pass "$restarts restarts under load; $(sed 's/^recovery: //' "$out" | head -n 1); afterwards 200/200 flows ok"
