#!/bin/bash
# Short connections in a row: TS_CHURN connections (default 5,000; 100,000
# with TS_SOAK=1; 1,500 in a sanitizer build), four at a time, each
# connect + greeting + one round trip + close through the tunnel.  Every one must succeed; afterwards client and
# server hold exactly the descriptors they held before, and their resident
# memory returns to within 10 % of what it was after a warm-up (the first
# connections allocate what is kept for good: TLS contexts, session
# tickets, the lwIP listener for the port) once what is kept for a while
# has expired (the server's replay cache: time_window 10s here; its fixed
# ring is allowed for once it has filled, see below).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../soaklib.sh"
ts_init soak_churn

total=${TS_CHURN:-$(ts_soak_size 5000 100000 1500)}
ts_topology_up
ts_soak_sysctls
ts_make_pki
# The server remembers every header's nonce for twice time_window (replay
# cache): 100,000 of them are megabytes until they expire.  A short window
# lets them expire within the wait below.
ts_write_configs "" "  time_window: 10s"
ts_start_soak_target
ts_start_server
ts_start_client

out=$TS_TMP/churn.log
TS_APP_TIMEOUT=60
ts_soak_app churn --host "$TS_T_ADDR4" --port "$TS_SOAK_PORT" --conns 500 \
    >>"$out" 2>&1 || ts_fail "warm-up: $(tail -n 1 "$out")"
# Freed heap goes back to the system every 10 s (loop_trim_memory).
sleep 11
c0=$(ts_rss_kb "$TS_CLIENT_PID") s0=$(ts_rss_kb "$TS_SERVER_PID")
cfd0=$(ts_fd_count "$TS_CLIENT_PID") sfd0=$(ts_fd_count "$TS_SERVER_PID")
ts_log "after warm-up: client RSS $(ts_mb "$c0") MiB ($cfd0 fds), server $(ts_mb "$s0") MiB ($sfd0 fds)"

# About 650 connections a second here; the full 100,000 take minutes.
TS_APP_TIMEOUT=$((120 + total / 200))
ts_soak_app churn --host "$TS_T_ADDR4" --port "$TS_SOAK_PORT" \
    --conns "$total" --parallel 4 >>"$out" 2>&1
rc=$?
line=$(tail -n 1 "$out")
ts_log "$line"
[ $rc -eq 0 ] || ts_fail "not every connection succeeded: $line"
c1=$(ts_rss_kb "$TS_CLIENT_PID") s1=$(ts_rss_kb "$TS_SERVER_PID")
chwm=$(ts_hwm_kb "$TS_CLIENT_PID") shwm=$(ts_hwm_kb "$TS_SERVER_PID")

# Flows close at once; memory is handed back at the next trim.  The
# server's replay cache is a fixed ring of 65,536 nonces (24 bytes each,
# auth.c), allocated at start and resident page by page as it first fills:
# after 65,536 headers it is 1.5 MiB more for good, which is a bound, not
# growth.
ring=0
[ "$total" -ge 65536 ] && ring=1536
ok=
for i in $(seq 150); do
	cfd=$(ts_fd_count "$TS_CLIENT_PID") sfd=$(ts_fd_count "$TS_SERVER_PID")
	c2=$(ts_rss_kb "$TS_CLIENT_PID") s2=$(ts_rss_kb "$TS_SERVER_PID")
	if [ "$cfd" -eq "$cfd0" ] && [ "$sfd" -eq "$sfd0" ] &&
	    [ $((c2 * 10)) -le $((c0 * 11)) ] &&
	    [ $((s2 * 10)) -le $((s0 * 11 + ring * 10)) ]; then
		ok=1
		break
	fi
	sleep 0.2
done
ts_check_alive
summary="client RSS $(ts_mb "$c0") -> $(ts_mb "$c1") -> $(ts_mb "$c2") MiB (peak $(ts_mb "$chwm")), fds $cfd0 -> $cfd; server RSS $(ts_mb "$s0") -> $(ts_mb "$s1") -> $(ts_mb "$s2") MiB (peak $(ts_mb "$shwm")), fds $sfd0 -> $sfd"
[ -n "$ok" ] || ts_fail "no return to the start within 30 s: $summary"
ts_pass "$total short connections ok ($(echo "$line" | sed 's/.* in \([0-9.]*s (.*\/s)\).*/\1/')); $summary"
