#!/bin/bash
# kill -9 of the server in the middle of two transfers (one each way): both
# app connections must fail with an error -- not hang, not end cleanly with
# truncated data -- within 15 s; the client keeps running; once the server
# is back, new flows (v4 and v6) carry intact data.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_server_restart

ts_standard_setup

big=2g rate=2m
ts_bg "$NS_C" app-down timeout 120 "$TS_PY" -u "$TS_TOOLS" recv \
    --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --bytes $big --rate $rate \
    --seed 21 --progress "$TS_TMP/down.progress"
down=$TS_LAST_PID
ts_bg "$NS_C" app-up timeout 120 "$TS_PY" -u "$TS_TOOLS" send \
    --host "$TS_T_ADDR6" --port "$TS_TARGET_PORT" --bytes $big --rate $rate \
    --seed 22 --progress "$TS_TMP/up.progress"
up=$TS_LAST_PID

# Wait until both flows really carry data.
progress() { cat "$TS_TMP/$1.progress" 2>/dev/null || echo 0; }
for i in $(seq 200); do
	[ "$(progress down)" -gt $((1 << 20)) ] && [ "$(progress up)" -gt $((1 << 20)) ] && break
	ts_alive "$down" || ts_fail "download ended early: $(tail -n 1 "$TS_TMP/app-down.log")"
	ts_alive "$up" || ts_fail "upload ended early: $(tail -n 1 "$TS_TMP/app-up.log")"
	sleep 0.1
done
[ "$(progress down)" -gt $((1 << 20)) ] && [ "$(progress up)" -gt $((1 << 20)) ] ||
    ts_fail "transfers did not get going (down $(progress down), up $(progress up) bytes)"
ts_log "mid-transfer: down $(progress down) bytes, up $(progress up) bytes"

killed_at=$(date +%s.%N)
ts_stop_server KILL

# Both apps must see an error, within 15 s.
check_app() {	# check_app PID NAME
	local pid=$1 name=$2 i rc
	for i in $(seq 150); do
		ts_alive "$pid" || break
		sleep 0.1
	done
	ts_alive "$pid" && ts_fail "$name still hangs 15 s after the server was killed"
	wait "$pid"
	rc=$?
	case $rc in
	2) ts_log "$name: $(tail -n 1 "$TS_TMP/app-$name.log")" ;;
	1) ts_fail "$name ended without an error after the server died (truncated data looked like a clean end): $(tail -n 1 "$TS_TMP/app-$name.log")" ;;
	0) ts_fail "$name completed although the server was killed?" ;;
	*) ts_fail "$name: exit status $rc: $(tail -n 1 "$TS_TMP/app-$name.log")" ;;
	esac
}
check_app "$down" down
check_app "$up" up
elapsed=$(awk -v a="$killed_at" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
ts_alive "$TS_CLIENT_PID" || ts_fail "the client died with the server"
ts_log "both flows failed with errors; client still running"

ts_start_server
out=$TS_TMP/apps.log
TS_APP_TIMEOUT=60
for host in "$TS_T_ADDR4" "$TS_T_ADDR6"; do
	ts_app send --host "$host" --port "$TS_TARGET_PORT" --bytes 8m --seed 23 \
	    >>"$out" 2>&1 || ts_fail "new upload after restart ($host): $(tail -n 1 "$out")"
	ts_log "$(tail -n 1 "$out")"
	ts_app recv --host "$host" --port "$TS_TARGET_PORT" --bytes 8m --seed 24 \
	    >>"$out" 2>&1 || ts_fail "new download after restart ($host): $(tail -n 1 "$out")"
	ts_log "$(tail -n 1 "$out")"
done
ts_check_alive
ts_pass "killed server reset both flows (both errors seen within ${elapsed} s of the kill), client survived, new flows intact"
