#!/bin/bash
# The warm pool: flows start on pre-established TLS connections (the client
# counts them), pool connections expire and are replaced, and a pool that
# cannot reach the server never stalls a flow -- it dials directly.  The
# server counts the expired ones as unused, not as failed sessions, and
# logs no line at info for them.
#
# Same topology as lib.sh.  Sequence: the client starts while the server is
# down (the pool fails and backs off), the server comes up, a flow must work
# at once; later flows must be served from the pool.
#
# The pool is the fixed one, {min: 2, max: 2} with pool_idle: 0 (never
# decays), so that it dials before any flow and its backoff is exercised;
# the default pool follows demand and opens nothing before a flow
# (e2e_pool_idle.sh).
. "$(dirname "$0")/../lib.sh"
ts_init e2e_pool

ts_topology_up
ts_make_pki
ts_write_configs "  pool: {min: 2, max: 2}
  pool_idle: 0
  pool_lifetime: 3s"
ts_start_target
ts_prove_no_forward "$TS_TARGET_PORT"

# Client first: its pool cannot connect yet.
ts_start_client
sleep 1
ts_start_server
out=$TS_TMP/app.log
ts_app send --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --bytes 1m --seed 7 \
    --timeout 10 >"$out" 2>&1 ||
    ts_fail "first flow after the server came up: $(tail -n 1 "$out")"
ts_log "flow with a cold pool: $(tail -n 1 "$out")"

# Give the pool time to back off, reconnect, and cycle through an expiry.
sleep 5
for i in 1 2 3 4 5 6; do
	ts_app recv --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --bytes 256k \
	    --seed $i --timeout 10 >"$out" 2>&1 ||
	    ts_fail "flow $i on the warm pool: $(tail -n 1 "$out")"
	sleep 0.5
done
ts_log "6 more flows intact: $(tail -n 1 "$out")"

ts_check_alive
# The server's view, while the client still runs (its shutdown may cut a
# pool connection mid-handshake): every flow done, the expired pool
# connections unused, none failed.
ip netns exec "$NS_S" "$TUNSPLIT" status -s "$TS_TMP/server.sock" --json \
    >"$TS_TMP/server.json" || ts_fail "server status --json"
counts=$("$TS_PY" -c 'import json, sys
s = json.load(open(sys.argv[1]))["sessions"]
print(s.get("unused", -1), s["failed"], s["total"])' "$TS_TMP/server.json") ||
    ts_fail "server status: $(cat "$TS_TMP/server.json")"
read -r unused failed total <<<"$counts"
ts_log "server sessions: $total total, $unused unused, $failed failed"
[ "$unused" -ge 1 ] || ts_fail "no pool connection counted unused (lifetime 3s): $counts"
[ "$failed" = 0 ] || ts_fail "$failed sessions failed: $(cat "$TS_TMP/server.json")"
kill -TERM "$TS_CLIENT_PID"
wait "$TS_CLIENT_PID" 2>/dev/null
# One line per worker process (client.workers): their sum.
line=$(grep "client stopped" "$TS_TMP/client.log")
pooled=$(sed -n 's/.*(\([0-9][0-9]*\) on warm pool connections).*/\1/p' <<<"$line" |
    awk '{ n += $1 } END { if (NR) print n }')
[ -n "$pooled" ] || ts_fail "no pool count in: $line"
[ "$pooled" -ge 5 ] || ts_fail "only $pooled of 7 flows used the pool: $line"
# At info (the tests' level) an idle client's pool is not worth a line.
if [ "${TS_LOG_LEVEL:-info}" = info ] &&
    grep "closed unused" "$TS_TMP/server.log" >"$TS_TMP/unused.log"; then
	ts_fail "server logged $(wc -l <"$TS_TMP/unused.log") unused pool connections at info: $(head -n 1 "$TS_TMP/unused.log")"
fi
ts_pass "$pooled of 7 flows started on warm connections; cold pool did not stall; $unused expired unused, not failed"
