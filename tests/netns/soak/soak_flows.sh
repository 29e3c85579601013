#!/bin/bash
# Many concurrent idle flows: TS_FLOWS connections (default 10,000, about
# 20 s; 2,000 in a sanitizer build) are opened through the tunnel and each
# proven with a round trip, held open together, then proven again.  The client runs with
# max_flows 12000, the server with max_conns (and per source) 12000.  Reports the resident
# memory of client and server before, while holding (per flow) and at peak,
# and checks that both fall back once the flows are gone: descriptors to
# where they were, 90 % of the resident memory they added within 5 s,
# and within 30 s more all of it but 25 % of the level before the burst
# (taken after a warm-up of 300 connections; not checked under a
# sanitizer, whose allocator is not glibc's).
#
#   tsc: soak.py hold ──ts0── tunsplit client ══TLS══ tunsplit server ── tst: soak.py serve
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../soaklib.sh"
ts_init soak_flows

flows=${TS_FLOWS:-$(ts_soak_size 10000 10000 2000)}
# Every flow is one descriptor in the client, the app and the target, and
# two in the server (client side and target side).  Without
# CAP_SYS_RESOURCE the hard limit is what we get; when one server process
# cannot hold twice the flows, a second one shares the port (SO_REUSEPORT,
# as a multi-process deployment would), and the server figures are the
# sum of both.
ulimit -n "$(ulimit -Hn)" || ts_fail "cannot raise the descriptor limit"
nofile=$(ulimit -n)
[ "$flows" -lt $((nofile - 64)) ] ||
    ts_skip "descriptor hard limit $nofile is too low for $flows flows"
TS_MAX_FLOWS=12000
ts_topology_up
ts_soak_sysctls
ts_make_pki
# One client is one source: max_conns_per_source (default 4096) too.
ts_write_configs "" "  max_conns: 12000
  max_conns_per_source: 12000"
ts_start_soak_target
ts_start_server
servers=$TS_SERVER_PID
if [ $((2 * flows + 64)) -gt "$nofile" ]; then
	sed "s|^control: .*|control: $TS_TMP/server2.sock|" "$TS_TMP/server.yaml" \
	    >"$TS_TMP/server2.yaml"
	ts_bg "$NS_S" server2 "$TUNSPLIT" run -c "$TS_TMP/server2.yaml"
	servers="$servers $TS_LAST_PID"
	sleep 0.5
	ts_alive "$TS_LAST_PID" || ts_fail "second server did not start: $(tail -n 3 "$TS_TMP/server2.log")"
	ts_log "descriptor limit $nofile: two server processes share port $TS_SERVER_PORT"
fi
ts_start_client

# Sums over the server processes.
srv_sum() {	# srv_sum FUNCTION
	local p t=0
	for p in $servers; do t=$((t + $("$1" "$p"))); done
	echo "$t"
}
srv_alive() {
	local p
	for p in $servers; do ts_alive "$p" || ts_fail "server $p died"; done
}

# The level before the burst is that of daemons that have served flows:
# a few hundred connections load what stays for good (the code of the
# handshakes, session tickets, the warm pool), then one periodic trim.
TS_APP_TIMEOUT=60
ts_soak_app churn --host "$TS_T_ADDR4" --port "$TS_SOAK_PORT" --conns 300 \
    --parallel 8 >"$TS_TMP/warm.log" 2>&1 ||
    ts_fail "warm-up: $(tail -n 1 "$TS_TMP/warm.log")"
sleep 11
c0=$(ts_rss_kb "$TS_CLIENT_PID") s0=$(srv_sum ts_rss_kb)
cfd0=$(ts_fd_count "$TS_CLIENT_PID") sfd0=$(srv_sum ts_fd_count)
ts_log "before: client RSS $(ts_mb "$c0") MiB ($cfd0 fds), server $(ts_mb "$s0") MiB ($sfd0 fds)"

ready=$TS_TMP/ready release=$TS_TMP/release
t0=$(date +%s.%N)
ts_bg "$NS_C" hold timeout 170 "$TS_PY" -u "$TS_SOAK_PY" hold \
    --host "$TS_T_ADDR4" --port "$TS_SOAK_PORT" --conns "$flows" \
    --parallel 200 --hold 150 --ready "$ready" --release "$release"
app=$TS_LAST_PID
ts_wait_file "$ready" 150 "$app" ||
    ts_fail "the flows were not all open within 150 s: $(tail -n 2 "$TS_TMP/hold.log")"
open_s=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
opened=$(cat "$ready")
sleep 1
c1=$(ts_rss_kb "$TS_CLIENT_PID") s1=$(srv_sum ts_rss_kb)
cfd1=$(ts_fd_count "$TS_CLIENT_PID") sfd1=$(srv_sum ts_fd_count)
ts_log "holding $opened flows: client RSS $(ts_mb "$c1") MiB ($cfd1 fds), server $(ts_mb "$s1") MiB ($sfd1 fds)"
# TS_SOAK_SETTLE=S (seconds): the per-flow figures again S s later, once
# the periodic trim (every 10 s) has run: what an idle flow costs when
# nothing else is going on.  Not set in CI (the bounds below are not on
# it).
if [ -n "${TS_SOAK_SETTLE:-}" ]; then
	sleep "$TS_SOAK_SETTLE"
	c1s=$(ts_rss_kb "$TS_CLIENT_PID") s1s=$(srv_sum ts_rss_kb)
	ts_log "settled ${TS_SOAK_SETTLE} s later: client $(( (c1s - c0) * 1024 / flows )) B/flow, server $(( (s1s - s0) * 1024 / flows )) B/flow"
fi
touch "$release"
wait "$app"
rc=$?
ts_log "$(tail -n 2 "$TS_TMP/hold.log" | tr '\n' ' ')"
[ $rc -eq 0 ] || ts_fail "not every flow opened and survived: $(tail -n 1 "$TS_TMP/hold.log")"
[ "$opened" -eq "$flows" ] || ts_fail "$opened of $flows flows opened"
[ "$cfd1" -ge "$flows" ] ||
    ts_fail "client holds $cfd1 descriptors for $flows flows: flows not concurrent?"

chwm=$(ts_hwm_kb "$TS_CLIENT_PID") shwm=$(srv_sum ts_hwm_kb)
cper=$(( (c1 - c0) * 1024 / flows )) sper=$(( (s1 - s0) * 1024 / flows ))

# Once the apps are gone every flow and session must be gone too.  Ten
# thousand closes (close_notify both ways) took over 20 s once on a loaded
# machine; a leak stays forever, so 60 s still tells the two apart.
t0=$(date +%s)
for i in $(seq 300); do
	[ "$(ts_fd_count "$TS_CLIENT_PID")" -le $((cfd0 + 2)) ] &&
	    [ "$(srv_sum ts_fd_count)" -le $((sfd0 + 2)) ] && break
	sleep 0.2
done
cfd2=$(ts_fd_count "$TS_CLIENT_PID") sfd2=$(srv_sum ts_fd_count)
ts_log "descriptors back to $cfd2 (client) and $sfd2 (server) $(( $(date +%s) - t0 )) s after the apps closed"
[ "$cfd2" -le $((cfd0 + 2)) ] || ts_fail "client still holds $cfd2 descriptors (was $cfd0) after the flows closed"
[ "$sfd2" -le $((sfd0 + 2)) ] || ts_fail "server still holds $sfd2 descriptors (was $sfd0) after the flows closed"
# And the memory: a few seconds after the flows are gone, at least 90 %
# of what they added is handed back (issue 19: a 128 MB router needs it
# back after a burst, not at the next periodic trim; before loop_trim_hint
# the client still held 42 of its 204 MiB 2 s after its last flow closed).
# What stays is heap fragmentation around ~1 MB of live allocations and
# library code pages the burst touched (doc/PERFORMANCE.md).
# wait_rss CMAX SMAX TRIES PAUSE: polls until the client's and the
# servers' RSS are at most CMAX and SMAX KiB, or TRIES times; leaves
# rss_c, rss_s and waited_s.
wait_rss() {
	local t0 i
	t0=$(date +%s.%N)
	for i in $(seq "$3"); do
		rss_c=$(ts_rss_kb "$TS_CLIENT_PID") rss_s=$(srv_sum ts_rss_kb)
		[ "$rss_c" -le "$1" ] && [ "$rss_s" -le "$2" ] && break
		sleep "$4"
	done
	waited_s=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
}
cmax=$((c0 + (c1 - c0) / 10)) smax=$((s0 + (s1 - s0) / 10))
wait_rss "$cmax" "$smax" 50 0.1
c2=$rss_c s2=$rss_s back_s=$waited_s
ts_log "after: client RSS $(ts_mb "$c2") MiB, server $(ts_mb "$s2") MiB (${back_s} s after the descriptors)"
# Then all of it (issue 19): within 25 % of the level before the burst,
# once the trims that follow it (0.5, 1, 2, 4, 8 s after the last flow's
# end, then every 10 s) have run.  What the 25 % covers is heap
# fragmentation around what the burst left live (session tickets, the
# pool's connections).  Before the per-thread cache was swapped out at
# each trim, 5,000 flows left the client 1.33x and the server 1.29x.
c3max=$((c0 * 5 / 4)) s3max=$((s0 * 5 / 4))
tries=60
[ -z "${TS_SANITIZED:-}" ] || tries=1	# only reported there (below)
wait_rss "$c3max" "$s3max" "$tries" 0.5
c3=$rss_c s3=$rss_s back3_s=$waited_s
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
ts_log "back: client RSS $(ts_mb "$c3") MiB ($(ratio "$c3" "$c0")x before), server $(ts_mb "$s3") MiB ($(ratio "$s3" "$s0")x) after ${back3_s} s more"
# A sanitizer build's allocator keeps freed memory in its quarantine and
# is not glibc's: there the numbers are only reported.
if [ -n "${TS_SANITIZED:-}" ]; then
	ts_log "SKIP of the memory bounds: a sanitizer build's allocator is not glibc's"
	cmax=$c2 smax=$s2 c3max=$c3 s3max=$s3
fi
[ "$c2" -le "$cmax" ] ||
    ts_fail "client RSS $(ts_mb "$c2") MiB 5 s after the flows closed: more than 10 % of the $(ts_mb $((c1 - c0))) MiB they added over $(ts_mb "$c0") MiB"
[ "$s2" -le "$smax" ] ||
    ts_fail "server RSS $(ts_mb "$s2") MiB 5 s after the flows closed: more than 10 % of the $(ts_mb $((s1 - s0))) MiB they added over $(ts_mb "$s0") MiB"
[ "$c3" -le "$c3max" ] ||
    ts_fail "client RSS $(ts_mb "$c3") MiB 30 s after the flows closed: $(ratio "$c3" "$c0")x the $(ts_mb "$c0") MiB before them (at most 1.25x)"
[ "$s3" -le "$s3max" ] ||
    ts_fail "server RSS $(ts_mb "$s3") MiB 30 s after the flows closed: $(ratio "$s3" "$s0")x the $(ts_mb "$s0") MiB before them (at most 1.25x)"
ts_alive "$TS_CLIENT_PID" || ts_fail "the client died"
srv_alive
ts_pass "$flows concurrent flows opened in ${open_s} s and held; client RSS $(ts_mb "$c0") -> $(ts_mb "$c1") -> $(ts_mb "$c2") -> $(ts_mb "$c3") MiB (${cper} B/flow, peak $(ts_mb "$chwm") MiB), server $(ts_mb "$s0") -> $(ts_mb "$s1") -> $(ts_mb "$s2") -> $(ts_mb "$s3") MiB (${sper} B/flow, peak $(ts_mb "$shwm") MiB)"
