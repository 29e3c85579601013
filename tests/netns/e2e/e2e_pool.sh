#!/bin/bash
# The warm pool: flows start on pre-established TLS connections (the client
# counts them), pool connections expire and are replaced, and a pool that
# cannot reach the server never stalls a flow -- it dials directly.
#
# Same topology as lib.sh.  Sequence: the client starts while the server is
# down (the pool fails and backs off), the server comes up, a flow must work
# at once; later flows must be served from the pool.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_pool

ts_topology_up
ts_make_pki
ts_write_configs "  pool: 2
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
kill -TERM "$TS_CLIENT_PID"
wait "$TS_CLIENT_PID" 2>/dev/null
line=$(grep "client stopped" "$TS_TMP/client.log")
pooled=$(sed -n 's/.*(\([0-9][0-9]*\) on warm pool connections).*/\1/p' <<<"$line")
[ -n "$pooled" ] || ts_fail "no pool count in: $line"
[ "$pooled" -ge 5 ] || ts_fail "only $pooled of 7 flows used the pool: $line"
expired=$(grep -c "sess .*closed unused" "$TS_TMP/server.log")
ts_log "server saw $expired pool connections close unused (expiry)"
[ "$expired" -ge 1 ] || ts_fail "no pool connection ever expired (lifetime 3s)"
ts_pass "$pooled of 7 flows started on warm connections; cold pool did not stall; expiry seen"
