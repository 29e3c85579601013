#!/bin/bash
# The server with two worker loops (server.workers: 2): each has its own
# SO_REUSEPORT listener, and what they share -- limits, the replay cache,
# TLS session tickets, the configuration generation -- holds across them.
#
#   tsc: tunsplit client, ts_probe, limits.py ══TLS══ tss: server (2 workers)
#                                                        ── tst: tools.py :9000,
#                                                           soak.py :9100
#
# A session's id tells its worker (ids are first + n x workers: worker 0
# gives odd ids, worker 1 even ones), as does the status's per-worker
# count.
#   1. 24 sequential flows through the tunnel, each a hash-checked
#      download, each on a connection of its own (the client's reuse: 1;
#      reused, they would ride a few connections, all on one worker one
#      time in eight): the status shows sessions on both workers.
#   2. alice (max_conns 4) opens 10 sessions at once, held: 4 served,
#      6 refused with status 9 -- one count for both workers, not 4 each.
#   3. ts_probe sends a version 1 header (accept_v1), then replays it on
#      16 more TLS connections: the first served (status 0, the target's
#      stream hash-checked), all 16 replays refused ("replayed header"),
#      among them sessions of both workers (all on one: 2 in 65,536); every replay's TLS handshake
#      resumed the first connection's session ticket, on either worker.
#   4. SIGHUP with alice's max_conns lowered to 2: both workers switch
#      (6 sessions: 2 served, 4 refused), and the tunnel still carries a
#      hash-checked flow.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../soaklib.sh"
ts_init e2e_workers
TS_LIMITS_PY=$TS_LIB_DIR/limits.py
PROBE=${TS_PROBE:-$(dirname "$TUNSPLIT")/tests/tools/ts_probe}
[ -x "$PROBE" ] || ts_fail "ts_probe not built ($PROBE)"

ts_topology_up
ts_make_pki
ts_write_configs "  pool: 2
  reuse: 1" "  workers: 2
  accept_v1: true"
ka=$("$TUNSPLIT" genkey) || ts_fail "genkey"
ts_server_users "[{name: test, key: \"$TS_KEY\"}, {name: alice, key: \"$ka\", max_conns: 4}]"
ts_start_target
ts_start_soak_target
ts_prove_no_forward "$TS_TARGET_PORT"
ts_start_server
ts_start_client
grep -q "listening on .* (2 workers)" "$TS_TMP/server.log" ||
    ts_fail "the server does not say it runs 2 workers"
slog=$TS_TMP/server.log

status_json() {
	ip netns exec "$NS_S" "$TUNSPLIT" status -s "$TS_TMP/server.sock" \
	    --json >"$TS_TMP/status.json" || ts_fail "server status"
}

# ---- 1. flows land on both workers ----------------------------------------
for i in $(seq 24); do
	ts_app recv --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" \
	    --bytes 64k --seed "$i" >>"$TS_TMP/app.log" 2>&1 ||
	    ts_fail "flow $i: $(tail -n 1 "$TS_TMP/app.log")"
done
status_json
per=$("$TS_PY" -c 'import json, sys
st = json.load(open(sys.argv[1]))
w = st["workers"]
print(" ".join(str(x["sessions"]) for x in w))' "$TS_TMP/status.json") ||
    ts_fail "no per-worker counts in the status: $(cat "$TS_TMP/status.json")"
read -r w0 w1 rest <<<"$per"
[ -z "$rest" ] && [ "${w0:-0}" -gt 0 ] && [ "${w1:-0}" -gt 0 ] ||
    ts_fail "sessions per worker: $per (both must have some)"
ip netns exec "$NS_S" "$TUNSPLIT" status -s "$TS_TMP/server.sock" |
    grep -q "^workers: 2; sessions per worker: $w0 .* $w1 " ||
    ts_fail "text status: no workers line"
ts_log "24 flows hash-checked; sessions per worker: $w0 and $w1"

# ---- 2. a per-user limit is one count for both workers ----------------------
native() {	# native TAG KEY CONNS WANT_OK WANT_LIMIT: held until release
	local tag=$1
	rm -f "$TS_TMP/$tag.ready" "$TS_TMP/release"
	ts_bg "$NS_C" "$tag" timeout 120 "$TS_PY" -u "$TS_LIMITS_PY" native \
	    --server "$TS_S_ADDR4" --port "$TS_SERVER_PORT" --ca "$TS_TMP/ca.pem" \
	    --sni "$TS_SNI" --key "$2" --name alice --kind tcp \
	    --target "$TS_T_ADDR4" --tport "$TS_SOAK_PORT" --conns "$3" \
	    --want-ok "$4" --want-limit "$5" --hold 60 \
	    --ready "$TS_TMP/$tag.ready" --release "$TS_TMP/release"
	ts_wait_file "$TS_TMP/$tag.ready" 60 "$TS_LAST_PID" ||
	    ts_fail "$tag: $(tail -n 2 "$TS_TMP/$tag.log")"
	grep -q "\"limit\": $5, \"ok\": $4}" "$TS_TMP/$tag.ready" ||
	    ts_fail "$tag: $4 ok and $5 refused expected: $(cat "$TS_TMP/$tag.ready")"
	touch "$TS_TMP/release"
	wait "$TS_LAST_PID" || ts_fail "$tag: $(tail -n 1 "$TS_TMP/$tag.log")"
	ts_log "$tag: alice x$3: $(cat "$TS_TMP/$tag.ready")"
}
native alice4 "$ka" 10 4 6

# ---- 3. a replay on another worker, resumed tickets ---------------------------
N=100000
want=$("$TS_PY" -c "import sys; sys.path.insert(0, '$(dirname "$TS_TOOLS")')
from tools import stream_hash; print(stream_hash(7, $N))") ||
    ts_fail "cannot compute the expected stream hash"
n0=$(grep -c "rejected .*: replayed header" "$slog")
ip netns exec "$NS_C" timeout 60 "$PROBE" -c "$TS_S_ADDR4:$TS_SERVER_PORT" \
    -C "$TS_TMP/ca.pem" -T 3000 -1 -k "$TS_KEY" \
    -t "$TS_T_ADDR4:$TS_TARGET_PORT" -d "SEND $N 7 0\\n" -n 17 -R \
    -o "$TS_TMP/replay" >"$TS_TMP/probe.log" 2>&1 ||
    ts_fail "ts_probe: $(cat "$TS_TMP/probe.log")"
f=$TS_TMP/replay.1
[ "$(head -c 1 "$f" | od -An -tx1 | tr -d ' ')" = 00 ] &&
    [ "$(tail -c +2 "$f" | sha256sum | cut -d ' ' -f 1)" = "$want" ] ||
    ts_fail "the first connection was not served intact: $(head -n 1 "$TS_TMP/probe.log")"
for i in $(seq 2 17); do
	[ ! -s "$TS_TMP/replay.$i" ] ||
	    ts_fail "replay $i: $(wc -c <"$TS_TMP/replay.$i") bytes came back"
done
[ "$(awk 'NR > 1 && $NF == "resumed"' "$TS_TMP/probe.log" | wc -l)" -eq 16 ] ||
    ts_fail "not every replay resumed the session: $(cat "$TS_TMP/probe.log")"
for _ in $(seq 30); do
	[ "$(grep -c "rejected .*: replayed header" "$slog")" -ge $((n0 + 16)) ] &&
	    break
	sleep 0.1
done
ids=$(grep "rejected .*: replayed header" "$slog" | tail -n +$((n0 + 1)) |
    sed -n 's/.*sess \([0-9]*\): rejected.*/\1/p')
[ "$(printf '%s\n' "$ids" | grep -c .)" -eq 16 ] ||
    ts_fail "$(printf '%s\n' "$ids" | grep -c .) replays refused, 16 expected"
odd=0 even=0
for id in $ids; do
	if [ $((id % 2)) -eq 1 ]; then odd=$((odd + 1)); else even=$((even + 1)); fi
done
[ "$odd" -gt 0 ] && [ "$even" -gt 0 ] ||
    ts_fail "the replays all landed on one worker (ids $ids): run again"
ts_log "a v1 header served once; 16 replays refused (worker 0: $odd, worker 1: $even), all 16 handshakes resumed"

# ---- 4. SIGHUP: every worker takes the new generation -------------------------
sed -i 's/max_conns: 4}/max_conns: 2}/' "$TS_TMP/server.yaml"
ts_reload "$TS_SERVER_PID" "$slog"
native alice2 "$ka" 6 2 4
ts_app recv --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --bytes 1m \
    --seed 99 >>"$TS_TMP/app.log" 2>&1 ||
    ts_fail "flow after the reload: $(tail -n 1 "$TS_TMP/app.log")"
status_json
grep -q '"generation":2' "$TS_TMP/status.json" ||
    ts_fail "status: not generation 2 after the reload"
ts_check_alive
ts_pass "2 workers: flows on both ($w0 and $w1 sessions), a per-user max_conns 4 held across them (4 of 10), a replayed header refused on either worker with tickets resumed across them, SIGHUP switched both (max_conns 2: 2 of 6)"
