#!/bin/bash
# Out of descriptors (ulimit -n 256, applied with prlimit to the running
# daemon), first on the client, then on the server:
#  - 50 flows opened before keep working throughout;
#  - of 400 new flows, those beyond the limit are refused cleanly: the app
#    sees a reset (or its connect fails), the daemon neither dies nor spins
#    (its CPU time while refusing is measured), and says so in its log
#    once per interval, not once per flow;
#  - with the limit lifted, new flows work again at once.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../soaklib.sh"
ts_init fault_nofile

command -v prlimit >/dev/null 2>&1 || ts_skip "prlimit (util-linux) missing"
ts_topology_up
ts_make_pki
# Flows the server cannot accept sit in its backlog until the client's
# connect timeout: keep that short.
# One client worker: the limit is per process, and with several the
# flows would spread over as many limits.
ts_write_configs "  workers: 1"
sed -i 's/^  connect_timeout: .*/  connect_timeout: 3s/' "$TS_TMP/client.yaml"
ts_start_soak_target
ts_start_server
ts_start_client

# phase NAME PID: one daemon limited to 256 descriptors.
phase() {
	local name=$1 pid=$2 hard cpu0 cpu1 t0 t1 used pct n
	local ready=$TS_TMP/$name.ready release=$TS_TMP/$name.release

	ts_bg "$NS_C" "$name-old" "$TS_PY" -u "$TS_SOAK_PY" hold \
	    --host "$TS_T_ADDR4" --port "$TS_SOAK_PORT" --conns 50 \
	    --hold 120 --ready "$ready" --release "$release"
	local old=$TS_LAST_PID
	ts_wait_file "$ready" 30 "$old" ||
	    ts_fail "$name: 50 flows before the limit: $(tail -n 1 "$TS_TMP/$name-old.log")"

	hard=$(prlimit --pid "$pid" --nofile --noheadings --output HARD)
	prlimit --pid "$pid" --nofile=256:"$hard" ||
	    ts_fail "$name: prlimit failed"
	ts_log "$name: descriptor limit 256 (was $(ts_fd_count "$pid") open)"

	cpu0=$(ts_cpu_ticks "$pid")
	t0=$(date +%s.%N)
	TS_APP_TIMEOUT=60
	ts_soak_app hold --host "$TS_T_ADDR4" --port "$TS_SOAK_PORT" \
	    --conns 400 --parallel 400 --timeout 8 --hold 2 --min-ok 0 \
	    >"$TS_TMP/$name-new.log" 2>&1
	cpu1=$(ts_cpu_ticks "$pid")
	t1=$(date +%s.%N)
	ts_alive "$pid" || ts_fail "$name: the daemon died at the limit"
	n=$(sed -n 's/^hold: \([0-9]*\)\/400 open.*/\1/p' "$TS_TMP/$name-new.log")
	ts_log "$name: $(head -n 1 "$TS_TMP/$name-new.log")"
	[ -n "$n" ] && [ "$n" -lt 400 ] ||
	    ts_fail "$name: the limit refused nothing? $(head -n 1 "$TS_TMP/$name-new.log")"
	[ "$n" -gt 0 ] || ts_fail "$name: no new flow got through below the limit"
	grep -q '"timeout"' "$TS_TMP/$name-new.log" &&
	    [ "$name" = client ] &&
	    ts_fail "$name: refused flows hung instead of being reset"
	used=$(awk -v a="$cpu0" -v b="$cpu1" -v hz="$(getconf CLK_TCK)" \
	    'BEGIN { printf "%.2f", (b - a) / hz }')
	pct=$(awk -v u="$used" -v a="$t0" -v b="$t1" \
	    'BEGIN { printf "%d", 100 * u / (b - a) }')
	ts_log "$name: ${used} s CPU in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s at the limit ($pct %)"
	[ "$pct" -lt 60 ] || ts_fail "$name: ${pct} % CPU while refusing: spinning"

	touch "$release"
	wait "$old" || ts_fail "$name: flows opened before the limit broke: $(tail -n 1 "$TS_TMP/$name-old.log")"
	ts_log "$name: $(tail -n 1 "$TS_TMP/$name-old.log")"

	prlimit --pid "$pid" --nofile="$hard":"$hard"
	# Recovery: the refused flows are gone, new ones work.
	TS_APP_TIMEOUT=60
	ts_soak_app churn --host "$TS_T_ADDR4" --port "$TS_SOAK_PORT" \
	    --conns 200 --parallel 8 >"$TS_TMP/$name-after.log" 2>&1 ||
	    ts_fail "$name: no recovery after the limit was lifted: $(tail -n 1 "$TS_TMP/$name-after.log")"
	ts_log "$name: limit lifted: $(tail -n 1 "$TS_TMP/$name-after.log")"
	eval "${name}_summary=\"\$n of 400 new flows admitted, \${pct} % CPU while refusing\""
}

phase client "$TS_CLIENT_PID"
# One message per interval, not one per refused flow.
msgs=$(grep -c 'refusing new flows' "$TS_TMP/client.log")
ts_log "client log: $msgs refusal message(s)"
[ "$msgs" -ge 1 ] || ts_fail "the client did not log the refusals"
[ "$msgs" -le 5 ] || ts_fail "the client logged $msgs refusal messages: not rate limited"
phase server "$TS_SERVER_PID"
msgs=$(grep -c 'accept' "$TS_TMP/server.log")
ts_log "server log: $msgs accept message(s)"
ts_check_alive
ts_pass "client: $client_summary; server: $server_summary; existing flows intact, recovery at once"
