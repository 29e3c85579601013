#!/bin/bash
# The dialer threads (client.dial_threads, src/client/dialer.h): the
# outer connections' TCP connect and TLS handshake run off the TUN loop,
# and a dial cancelled in the middle of its handshake leaks nothing.
#
# 1. dial_threads: 2, pool: 2: a burst of 64 flows opened at once
#    (reuseflows.py burst: 16 KiB each way, SHA-256 both ways, the reply
#    only after the app's FIN crossed): every byte intact, and the
#    client's status counts the flows' and the pool's new connections as
#    handed back ready by the dialer (none failed, none left to the loop).
# 2. The server stopped (SIGSTOP: the kernel still completes its TCP
#    handshakes, but no TLS answer comes), the pool off (reload with
#    pool: 0): 8 flows start and their dials wait in the handshake on the
#    dialer threads; the apps reset their connections: every dial is
#    cancelled, and the client's open fds come back to what they were
#    before (each cancelled stream's socket closed).
# 3. A reload with pool: 2, 4 more flows: their dials and the pool's wait
#    in their handshakes; a reload back to pool: 0 retires that pool and
#    cancels exactly its dials; then the client is stopped with the 4
#    flows' dials in flight (SIGTERM twice: drain, then stop): it exits
#    0; under ASan its leak check at exit runs with them (lib.sh fails
#    the test on any report).
#
# Topology: lib.sh's (client tsc -- server tss -- target tst).
. "$(dirname "$0")/../lib.sh"
ts_init e2e_dialer

BURST=64
RF="$(dirname "$0")/reuseflows.py"

status() {	# status EXPR: EXPR of the client's status JSON (s)
	ip netns exec "$NS_C" "$TUNSPLIT" status -s "$TS_TMP/client.sock" \
	    --json >"$TS_TMP/client.json" || ts_fail "client status --json"
	"$TS_PY" -c 'import json, sys
s = json.load(open(sys.argv[1]))
print(eval(sys.argv[2]))' "$TS_TMP/client.json" "$1" ||
	    ts_fail "client status: $(cat "$TS_TMP/client.json")"
}

# wait_for EXPR WHAT: up to 10 s for EXPR (over the status JSON) to hold.
wait_for() {
	local i
	for i in $(seq 100); do
		[ "$(status "$1")" = True ] && return 0
		sleep 0.1
	done
	ts_fail "$2: $(cat "$TS_TMP/client.json")"
}

ts_standard_setup "  dial_threads: 2
  pool: 2"
threads=$(status 's["dialer"]["threads"]')
[ "$threads" -ge 1 ] && [ "$threads" -le "$(nproc)" ] ||
    ts_fail "dial_threads: 2 runs $threads threads on $(nproc) CPUs"

# 1. A burst, every connection handshaken on a dialer thread.
ip netns exec "$NS_C" timeout 60 "$TS_PY" -u "$RF" burst --host "$TS_T_ADDR4" \
    --port "$TS_TARGET_PORT" --flows "$BURST" --bytes 16384 --seed 5101 \
    >"$TS_TMP/burst.log" 2>&1 || ts_fail "burst: $(tail -n 2 "$TS_TMP/burst.log")"
ts_log "$(tail -n 1 "$TS_TMP/burst.log")"
wait_for 's["dialer"]["active"] == 0' "dials still in flight after the burst"
read -r ready failed declined pooled <<<"$(status '"%d %d %d %d" % (s["dialer"]["ready"], s["dialer"]["failed"], s["dialer"]["declined"], s["pool"]["pooled_flows"])')"
ts_log "dialer: $ready connections handed back ready, $failed failed, $declined left to the loop; $pooled flows on pool connections"
[ "$failed" = 0 ] && [ "$declined" = 0 ] ||
    ts_fail "dials failed or left to the loop: $(cat "$TS_TMP/client.json")"
# Every flow not started on a pool connection dialled its own, and the
# pool's own connections came from the dialer too.
[ "$ready" -ge $((BURST - pooled)) ] ||
    ts_fail "only $ready dials on the dialer threads for $BURST flows ($pooled pooled)"

# 2. Dials cancelled in the middle of their handshakes.
# A connect_timeout far beyond the test's waits, even under load.
sed -i 's/^  pool: 2$/  pool: 0/; s/^  connect_timeout: 10s$/  connect_timeout: 2m/' \
    "$TS_TMP/client.yaml"
grep -q '^  pool: 0$' "$TS_TMP/client.yaml" &&
    grep -q '^  connect_timeout: 2m$' "$TS_TMP/client.yaml" ||
    ts_fail "pool: 0, connect_timeout: 2m not written"
kill -STOP "$TS_SERVER_PID"
ts_reload "$TS_CLIENT_PID" "$TS_TMP/client.log" "reload with pool: 0"
sleep 0.3	# the retired pool's connections closed
base=$(ts_fds)
cancelled=$(status 's["dialer"]["cancelled"]')
ts_stalled 8 reset
wait_for 's["dialer"]["active"] == 8' "8 dials waiting in their handshakes"
grep -q "open 8" "$TS_TMP/reset.log" || ts_fail "apps: $(cat "$TS_TMP/reset.log")"
ts_fds_settle $((base + 8)) ||
    ts_fail "8 dials in flight hold $(($(ts_fds) - base)) fds, not 8"
now=$(ts_fds)
ts_log "8 dials waiting in their TLS handshakes ($base fds, now $now)"
touch "$TS_TMP/reset.go"
wait_for "s[\"dialer\"][\"active\"] == 0 and s[\"dialer\"][\"cancelled\"] >= $cancelled + 8" \
    "the apps' resets did not cancel the 8 dials"
ts_fds_settle "$base" ||
    ts_fail "after 8 cancelled dials the client holds $(ts_fds) fds, $base before"
ts_log "the apps' resets cancelled the 8 dials; fds back to $base"

# 3. The pool's dials cancelled by a reload, the flows' by the stop.
sed -i 's/^  pool: 0$/  pool: 2/' "$TS_TMP/client.yaml"
ts_reload "$TS_CLIENT_PID" "$TS_TMP/client.log" "reload with pool: 2"
ts_stalled 4 stop
# The 4 flows' dials, and the pool's (it warms up for the flows after
# them): all waiting in their handshakes.
wait_for 's["dialer"]["active"] == 4 + s["pool"]["connecting"] and s["pool"]["connecting"] >= 1' \
    "4 flows' dials and the pool's waiting in their handshakes"
# From that same answer (a flow's dial and the pool's it prompts start
# in one event: no answer shows one without the other).
read -r cancelled pooldials <<<"$("$TS_PY" -c 'import json, sys
s = json.load(open(sys.argv[1]))
print(s["dialer"]["cancelled"], s["pool"]["connecting"])' "$TS_TMP/client.json")"
sed -i 's/^  pool: 2$/  pool: 0/' "$TS_TMP/client.yaml"
ts_reload "$TS_CLIENT_PID" "$TS_TMP/client.log" "reload with pool: 0 again"
wait_for "s[\"dialer\"][\"active\"] == 4 and s[\"dialer\"][\"cancelled\"] == $cancelled + $pooldials" \
    "the reload did not cancel the retired pool's $pooldials dials"
ts_log "a reload cancelled the retired pool's $pooldials dials in their handshakes; the flows' 4 go on"
kill -TERM "$TS_CLIENT_PID"
sleep 0.3
kill -TERM "$TS_CLIENT_PID"
rc=
for i in $(seq 100); do
	ts_any_running "$TS_CLIENT_PID" || { wait "$TS_CLIENT_PID"; rc=$?; break; }
	sleep 0.1
done
[ "$rc" = 0 ] || ts_fail "client stopped with 4 dials in flight: status ${rc:-(still running)}"
grep -q "client stopped" "$TS_TMP/client.log" ||
    ts_fail "no 'client stopped' line: $(tail -n 3 "$TS_TMP/client.log")"
touch "$TS_TMP/stop.go"
kill -CONT "$TS_SERVER_PID"
ts_log "client stopped with 4 dials in their handshakes: exit 0"

ts_pass "a burst of $BURST flows byte for byte with the handshakes on the dialer threads; dials cancelled mid-handshake by the apps' resets, a reload and the stop free their streams"
