#!/bin/bash
# Configured limits: client max_flows 100, then server max_conns 100, then
# server max_conns_per_source 100 (the client's address is one source; a
# second address on the client host is another, and is still served while
# the first is at its limit).
# 150 apps connect at once; exactly the first 100 get through and work, the
# other 50 are refused at once (client: the app's SYN is answered with an
# RST; server: the connection is closed at accept and the app reset), the
# refusals are counted in `tunsplit status` and logged once per interval,
# and the 100 admitted flows are unaffected.  With them gone, new flows
# work again.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../soaklib.sh"
ts_init fault_limits

ts_topology_up
ts_make_pki

# run_case NAME [HOOK]: 150 apps against the configured limit of 100; HOOK
# runs while the 100 are held.
run_case() {
	local name=$1 ready=$TS_TMP/$1.ready release=$TS_TMP/$1.release
	ts_bg "$NS_C" "$name-held" "$TS_PY" -u "$TS_SOAK_PY" hold \
	    --host "$TS_T_ADDR4" --port "$TS_SOAK_PORT" --conns 100 \
	    --parallel 100 --hold 60 --ready "$ready" --release "$release"
	local held=$TS_LAST_PID
	ts_wait_file "$ready" 30 "$held" ||
	    ts_fail "$name: 100 flows below the limit: $(tail -n 1 "$TS_TMP/$name-held.log")"
	TS_APP_TIMEOUT=40
	ts_soak_app hold --host "$TS_T_ADDR4" --port "$TS_SOAK_PORT" \
	    --conns 50 --parallel 50 --timeout 10 --hold 0 --min-ok 0 \
	    >"$TS_TMP/$name-over.log" 2>&1
	ts_log "$name: over the limit: $(head -n 1 "$TS_TMP/$name-over.log")"
	grep -q '^hold: 0/50 open' "$TS_TMP/$name-over.log" ||
	    ts_fail "$name: flows over the limit got through: $(head -n 1 "$TS_TMP/$name-over.log")"
	grep -q '"timeout"' "$TS_TMP/$name-over.log" &&
	    ts_fail "$name: refused flows hung instead of being reset"
	[ -z "${2:-}" ] || "$2"
	touch "$release"
	wait "$held" || ts_fail "$name: admitted flows broke: $(tail -n 1 "$TS_TMP/$name-held.log")"
	ts_log "$name: $(tail -n 1 "$TS_TMP/$name-held.log")"
	TS_APP_TIMEOUT=40
	ts_soak_app churn --host "$TS_T_ADDR4" --port "$TS_SOAK_PORT" \
	    --conns 200 --parallel 8 >"$TS_TMP/$name-after.log" 2>&1 ||
	    ts_fail "$name: after the limit: $(tail -n 1 "$TS_TMP/$name-after.log")"
}

# status_field WHO KEYS: WHO's (client or server) status in st and its
# field KEYS (a Python subscript: ["tun"]["syn_refused"]) in field.
status_field() {
	local ns=$NS_S
	[ "$1" = client ] && ns=$NS_C
	st=$(ip netns exec "$ns" "$TUNSPLIT" status -s "$TS_TMP/$1.sock" --json) ||
	    ts_fail "$1 status"
	field=$(printf '%s' "$st" | "$TS_PY" -c \
	    "import json,sys; print(json.load(sys.stdin)$2)") ||
	    ts_fail "no $2 in the $1 status: $st"
}

# Both daemons, with the two SIGTERMs (drain, stop).
stop_both() {
	kill -TERM "$TS_CLIENT_PID" "$TS_SERVER_PID"
	sleep 0.3
	kill -TERM "$TS_CLIENT_PID" "$TS_SERVER_PID" 2>/dev/null
	wait "$TS_CLIENT_PID" "$TS_SERVER_PID" 2>/dev/null
}

# 1. The client's max_flows.
TS_MAX_FLOWS=100
ts_write_configs
ts_start_soak_target
ts_start_server
ts_start_client
nw=$(ts_procs "$TS_CLIENT_PID" | wc -w)	# worker processes
run_case client
status_field client '["tun"]["syn_refused"]'
refused=$field
[ "$refused" -ge 50 ] || ts_fail "client counted $refused refused SYNs, 50 expected"
# Rate-limited: once per worker process at most.
msgs=$(grep -c 'max_flows 100 reached' "$TS_TMP/client.log")
[ "$msgs" -ge 1 ] && [ "$msgs" -le "$nw" ] ||
    ts_fail "client logged the limit $msgs times, once per worker ($nw) expected"
ts_log "client: $refused SYNs refused (status), limit logged once"
stop_both

# 2. The server's max_conns.
# No warm pool here: its connections are admitted by the server ahead of
# time and would carry flows past a full server.
TS_MAX_FLOWS=4096
ts_write_configs "  pool: 0" "  max_conns: 100"
ts_start_server
ts_start_client
run_case server
status_field server '["sessions"]["refused"]'
refused=$field
[ "$refused" -ge 50 ] || ts_fail "server counted $refused refused connections, 50 expected: $st"
msgs=$(grep -c 'max_conns 100 reached' "$TS_TMP/server.log")
[ "$msgs" -ge 1 ] && [ "$msgs" -le 3 ] ||
    ts_fail "server logged the limit $msgs times"
ts_log "server: $refused connections refused (status), limit logged $msgs time(s)"
ts_check_alive
stop_both

# 3. The server's max_conns_per_source.
src2=10.77.1.3
ip -n "$NS_C" addr add "$src2/24" dev eth0 || ts_fail "second client address"
tlsprobe() {	# tlsprobe SOURCE
	ip netns exec "$NS_C" timeout 20 "$TS_PY" -u "$TS_LIB_DIR/limits.py" \
	    tlsprobe --server "$TS_S_ADDR4" --port "$TS_SERVER_PORT" \
	    --ca "$TS_TMP/ca.pem" --sni "$TS_SNI" --source "$1" --timeout 5
}
probe_sources() {
	local out
	out=$(tlsprobe "$TS_C_ADDR4" 2>&1) &&
	    ts_fail "source $TS_C_ADDR4 at its limit, yet served: $out"
	ts_log "source: first source at its limit: $out"
	out=$(tlsprobe "$src2" 2>&1) ||
	    ts_fail "second source refused while the first is at its limit: $out"
	ts_log "source: second source meanwhile: $out"
}
ts_write_configs "  pool: 0" "  max_conns_per_source: 100"
ts_start_server
ts_start_client
run_case source probe_sources
status_field server '["limits"]["refused"]["source"]'
refused=$field
[ "$refused" -ge 51 ] || ts_fail "server counted $refused refused by source, 51 expected: $st"
msgs=$(grep -c 'max_conns_per_source 100 reached' "$TS_TMP/server.log")
[ "$msgs" -ge 1 ] && [ "$msgs" -le 3 ] ||
    ts_fail "server logged the per-source limit $msgs times"
ts_log "source: $refused connections refused (status), limit logged $msgs time(s)"
ts_check_alive
ts_pass "max_flows, max_conns and max_conns_per_source refuse only the new work, at once, counted and logged once per interval; recovery at once"
