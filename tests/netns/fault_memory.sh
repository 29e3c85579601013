#!/bin/bash
# 1. The server's relay buffer budget: max_buffer_memory 1M (16 relay buffers
# of 64 KiB) and 20 downloads of 3 MiB whose apps read at 256 KB/s each,
# with small socket buffers so that the backlog sits in the server's relay
# buffers.  While the budget is full:
#
#   - new flows are refused at once (status 9: the app gets a reset),
#     counted as memory refusals and logged once;
#   - the relays that found no buffer are paused, not failed;
#   - the budget is never exceeded (peak <= 1M in the status);
#
# and every one of the 20 downloads completes, byte for byte.  Afterwards
# the budget is empty again and new flows work.
#
# 2. The client's budget: client max_buffer_memory 1M, server unlimited,
# 10 downloads of 2 MiB read at 256 KB/s: what lwIP holds for the slow apps
# fills the budget; new flows get an RST on their SYN (ECONNREFUSED), the
# 10 downloads pause reading from the server and complete intact; the
# budget holds (peak at most 1M plus the requests' few bytes).
#
#   tsc: limits.py slowrecv ──ts0── client ══TLS══ server ── tst: tools.py serve
. "$(dirname "$0")/lib.sh"
ts_init fault_memory

ts_topology_up
# Small socket buffers on the server side and the client's receive side:
# what the slow apps do not take piles up in the server's relays.
ts_sysctl "$NS_S" net/ipv4/tcp_wmem "4096 16384 65536"
ts_sysctl "$NS_S" net/ipv4/tcp_rmem "4096 16384 65536"
ts_sysctl "$NS_C" net/ipv4/tcp_rmem "4096 16384 65536"
ts_make_pki
ts_write_configs "  pool: 0" "  max_buffer_memory: 1M"
ts_start_target
ts_start_server
ts_start_client

status() {
	ip netns exec "$NS_S" "$TUNSPLIT" status -s "$TS_TMP/server.sock" --json
}
field() {	# field JSON PY-EXPR (on st)
	printf '%s' "$1" | "$TS_PY" -c "import json,sys; st=json.load(sys.stdin); print($2)"
}

ts_bg "$NS_C" slowrecv timeout 150 "$TS_PY" -u "$TS_LIB_DIR/limits.py" \
    slowrecv --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --conns 20 \
    --bytes 3m --rate 256k --timeout 120
reader=$TS_LAST_PID
# Wait until the budget is too full to admit a new stream: 1M less two
# buffers (the new stream's reservation and the unit kept for the paused).
full=
for i in $(seq 200); do
	st=$(status) || ts_fail "server status"
	used=$(field "$st" 'st["limits"]["buffer_memory"]["used"]')
	[ "$used" -gt $((1048576 - 2 * 65536)) ] && { full=1; break; }
	ts_alive "$reader" || break
	sleep 0.1
done
[ -n "$full" ] || ts_fail "the budget never filled up (used $used): $(tail -n 3 "$TS_TMP/slowrecv.log")"
ts_log "budget full: $used bytes in use"
for i in 1 2 3 4 5; do
	ts_app refused --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --within 3 \
	    >>"$TS_TMP/refused.log" 2>&1 ||
	    ts_fail "new flow $i with the budget full: $(tail -n 1 "$TS_TMP/refused.log")"
done
ts_log "5 new flows refused: $(tail -n 1 "$TS_TMP/refused.log")"
st=$(status)
denied=$(field "$st" 'st["limits"]["buffer_memory"]["denied"]')
[ "$denied" -gt 0 ] || ts_fail "no relay was paused for memory: $st"
wait "$reader" || ts_fail "slow downloads: $(tail -n 5 "$TS_TMP/slowrecv.log")"
ts_log "$(tail -n 1 "$TS_TMP/slowrecv.log")"

st=$(status)
printf '%s\n' "$st" >"$TS_TMP/status.json"
"$TS_PY" - "$TS_TMP/status.json" <<'EOF' || ts_fail "status after: $st"
import json, sys
st = json.load(open(sys.argv[1]))
m = st["limits"]["buffer_memory"]
assert m["max"] == 1 << 20, m
assert 0 < m["peak"] <= m["max"], m
assert st["limits"]["refused"]["memory"] >= 5, st["limits"]
EOF
msgs=$(grep -c 'limit memory: max_buffer_memory' "$TS_TMP/server.log")
[ "$msgs" -ge 1 ] && [ "$msgs" -le 3 ] ||
    ts_fail "memory refusals logged $msgs times"
ts_app recv --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --bytes 1m \
    --seed 7 >"$TS_TMP/after.log" 2>&1 ||
    ts_fail "a download after the budget emptied: $(tail -n 1 "$TS_TMP/after.log")"
for i in $(seq 30); do
	used=$(field "$(status)" 'st["limits"]["buffer_memory"]["used"]')
	[ "$used" = 0 ] && break
	sleep 0.1
done
[ "$used" = 0 ] || ts_fail "$used bytes still charged with no flows left"
ts_check_alive
speak=$(field "$st" 'st["limits"]["buffer_memory"]["peak"]')
ts_log "server: budget 1M held (peak $speak, $denied buffer allocations paused), new flows refused at once ($msgs log line(s)), 20 slow downloads of 3 MiB intact; empty and serving again afterwards"

# 2. The client's budget.
kill -TERM "$TS_CLIENT_PID" "$TS_SERVER_PID"
wait "$TS_CLIENT_PID" "$TS_SERVER_PID" 2>/dev/null
ts_write_configs "  pool: 0
  max_buffer_memory: 1M" "  max_buffer_memory: 0"
ts_start_server
ts_start_client
cstatus() {
	ip netns exec "$NS_C" "$TUNSPLIT" status -s "$TS_TMP/client.sock" --json
}
ts_bg "$NS_C" slowrecv2 timeout 150 "$TS_PY" -u "$TS_LIB_DIR/limits.py" \
    slowrecv --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --conns 10 \
    --bytes 2m --rate 256k --timeout 120
reader=$TS_LAST_PID
full=
for i in $(seq 200); do
	st=$(cstatus) || ts_fail "client status"
	used=$(field "$st" 'st["limits"]["buffer_memory"]["used"]')
	[ "$used" -gt $((1048576 - 2 * 16384)) ] && { full=1; break; }
	ts_alive "$reader" || break
	sleep 0.1
done
[ -n "$full" ] || ts_fail "the client's budget never filled up (used $used): $(tail -n 3 "$TS_TMP/slowrecv2.log")"
ts_log "client budget full: $used bytes in use"
for i in 1 2 3; do
	ts_app refused --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --within 3 \
	    >>"$TS_TMP/refused2.log" 2>&1 ||
	    ts_fail "client: new flow $i with the budget full: $(tail -n 1 "$TS_TMP/refused2.log")"
done
ts_log "client: 3 new flows refused: $(tail -n 1 "$TS_TMP/refused2.log")"
wait "$reader" || ts_fail "client: slow downloads: $(tail -n 5 "$TS_TMP/slowrecv2.log")"
ts_log "client: $(tail -n 1 "$TS_TMP/slowrecv2.log")"
st=$(cstatus)
printf '%s\n' "$st" >"$TS_TMP/cstatus.json"
"$TS_PY" - "$TS_TMP/cstatus.json" <<'EOF' || ts_fail "client status after: $st"
import json, sys
st = json.load(open(sys.argv[1]))
m = st["limits"]["buffer_memory"]
assert m["max"] == 1 << 20, m
assert 0 < m["peak"] <= m["max"] + 4096, m
assert m["denied"] > 0, m
assert st["limits"]["refused"]["memory"] >= 3, st["limits"]
assert st["tun"]["syn_refused"] >= 3, st["tun"]
EOF
cmsgs=$(grep -c 'limit memory: max_buffer_memory' "$TS_TMP/client.log")
[ "$cmsgs" -ge 1 ] && [ "$cmsgs" -le 3 ] ||
    ts_fail "client memory refusals logged $cmsgs times"
ts_app recv --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --bytes 1m \
    --seed 8 >"$TS_TMP/after2.log" 2>&1 ||
    ts_fail "client: a download after the budget emptied: $(tail -n 1 "$TS_TMP/after2.log")"
for i in $(seq 30); do
	used=$(field "$(cstatus)" 'st["limits"]["buffer_memory"]["used"]')
	[ "$used" = 0 ] && break
	sleep 0.1
done
[ "$used" = 0 ] || ts_fail "client: $used bytes still charged with no flows left"
ts_check_alive
ts_pass "server: budget 1M held (peak $speak, $denied allocations paused), new flows refused, 20 slow downloads intact; client: budget 1M held (peak $(field "$st" 'st["limits"]["buffer_memory"]["peak"]')), new SYNs reset, 10 slow downloads intact; both empty and serving afterwards"
