#!/bin/bash
# Target reset storm: TS_STORM downloads (default 100, 400 with TS_SOAK=1)
# of 2 MiB run at once; the target aborts every second one (RST) a third of
# the way in.  Each reset must reach its app as an error, with the bytes
# before it intact; every other download completes intact; afterwards the
# daemons hold no more descriptors than before and a new flow works.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../soaklib.sh"
ts_init fault_reset_storm

conns=${TS_STORM:-$(ts_soak_size 100 400)}
ts_topology_up
ts_soak_sysctls
ts_make_pki
# A pool of a fixed size from the start (the adaptive one is empty until
# the first flow and follows the storm after), so that the descriptors
# before and after compare.
ts_write_configs "  pool: {min: 2, max: 2}
  pool_idle: 0"
ts_start_soak_target
ts_start_server
ts_start_client
cfd0=$(ts_fd_count "$TS_CLIENT_PID") sfd0=$(ts_fd_count "$TS_SERVER_PID")

out=$TS_TMP/storm.log
TS_APP_TIMEOUT=150
ts_soak_app storm --host "$TS_T_ADDR4" --port "$TS_SOAK_PORT" \
    --conns "$conns" --parallel "$conns" --bytes $((2 << 20)) --timeout 60 \
    >"$out" 2>&1
rc=$?
ts_log "$(tail -n 1 "$out")"
[ $rc -eq 0 ] || ts_fail "$(tail -n 1 "$out")"
for i in $(seq 50); do
	[ "$(ts_fd_count "$TS_CLIENT_PID")" -le "$cfd0" ] &&
	    [ "$(ts_fd_count "$TS_SERVER_PID")" -le "$sfd0" ] && break
	sleep 0.2
done
[ "$(ts_fd_count "$TS_CLIENT_PID")" -le "$cfd0" ] ||
    ts_fail "client holds $(ts_fd_count "$TS_CLIENT_PID") descriptors, $cfd0 before"
[ "$(ts_fd_count "$TS_SERVER_PID")" -le "$sfd0" ] ||
    ts_fail "server holds $(ts_fd_count "$TS_SERVER_PID") descriptors, $sfd0 before"
TS_APP_TIMEOUT=30
ts_soak_app churn --host "$TS_T_ADDR4" --port "$TS_SOAK_PORT" --conns 20 \
    >>"$out" 2>&1 || ts_fail "flows after the storm: $(tail -n 1 "$out")"
ts_check_alive
ts_pass "$((conns / 2)) target resets propagated to their apps, $((conns - conns / 2)) neighbours intact; no descriptors left over"
