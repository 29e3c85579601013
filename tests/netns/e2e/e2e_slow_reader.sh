#!/bin/bash
# A slow target: it reads at 64 KiB/s for the first 10 s of the flow, then at
# full speed, while the app sends 200 MiB.  Backpressure must hold memory
# down: client and server RSS, sampled every second, stay below 64 MiB; the
# transfer then completes with a matching SHA-256.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_slow_reader

size=200m slow_secs=10 limit_kb=$((64 << 10))
TS_TARGET_ARGS="--slow-rate 64k --slow-secs $slow_secs"
ts_standard_setup

c0=$(ts_rss_kb "$TS_CLIENT_PID") s0=$(ts_rss_kb "$TS_SERVER_PID")
ts_log "RSS before: client $c0 KiB, server $s0 KiB"

ts_bg "$NS_C" app timeout 300 "$TS_PY" -u "$TS_TOOLS" send \
    --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --bytes $size --seed 31 \
    --progress "$TS_TMP/app.progress"
app=$TS_LAST_PID

cmax=0 smax=0 t=0
: >"$TS_TMP/rss.log"
while ts_alive "$app"; do
	c=$(ts_rss_kb "$TS_CLIENT_PID") s=$(ts_rss_kb "$TS_SERVER_PID")
	p=$(cat "$TS_TMP/app.progress" 2>/dev/null || echo 0)
	echo "t=${t}s client_rss=${c}KiB server_rss=${s}KiB app_sent=$p" >>"$TS_TMP/rss.log"
	[ "$c" -gt "$cmax" ] && cmax=$c
	[ "$s" -gt "$smax" ] && smax=$s
	[ "$t" -eq $((slow_secs - 2)) ] && sent_slow=$p
	[ "$c" -ge "$limit_kb" ] && ts_fail "client RSS $c KiB >= 64 MiB at t=${t}s"
	[ "$s" -ge "$limit_kb" ] && ts_fail "server RSS $s KiB >= 64 MiB at t=${t}s"
	[ "$c" -eq 0 ] && ts_fail "the client died during the transfer"
	[ "$s" -eq 0 ] && ts_fail "the server died during the transfer"
	sleep 1
	t=$((t + 1))
done
cat "$TS_TMP/rss.log"
wait "$app"
rc=$?
[ $rc -eq 124 ] && ts_fail "transfer did not finish within 300 s"
[ $rc -eq 0 ] || ts_fail "$(tail -n 1 "$TS_TMP/app.log")"
[ "$t" -ge "$slow_secs" ] ||
    ts_fail "transfer finished after ${t}s, before the reader sped up (was the reader slow at all?)"
ts_log "$(tail -n 1 "$TS_TMP/app.log")"
ts_log "app had sent ${sent_slow:-?} bytes at t=$((slow_secs - 2))s while the reader was slow"
ts_check_alive
ts_pass "$size past a 64 KiB/s reader intact; peak RSS client $cmax KiB, server $smax KiB (< $limit_kb)"
