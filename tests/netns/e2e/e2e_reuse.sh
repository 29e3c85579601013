#!/bin/bash
# Outer connection reuse (PROTOCOL.md "Reusable connections"): many
# sequential short flows ride far fewer outer connections, half-close and
# resets stay exact on reused connections, and a peer that does not reuse
# falls back to one flow per connection.
#
# 1. 200 sequential flows (reuseflows.py: 1 KiB up, the app's FIN, then
#    1 KiB back only after the target read EOF; SHA-256 both ways): the
#    server counts far fewer connections than flows, and most flows on
#    reused connections, with no reuse error and no failed session; the
#    client's reuse: 40 bounds the flows of each connection (server log).
#    A burst of 48 flows at once: afterwards the pool holds no more
#    connections than twice its size.
# 2. On the warm, reused connections: a 64 KiB / 1 MiB half-close, then a
#    download the app resets: the target sees the reset (its send fails),
#    the reset connection is never offered again, later flows still work.
# 3. Fallback: a server with reuse: 1 (what an older server amounts to for
#    a new client: it never answers the reuse bit) and a client with
#    reuse: 1 (an older client: no tag) -- every flow its own connection,
#    no reuse, all intact.
#
# Topology: lib.sh's (client tsc -- server tss -- target tst); the
# target's EOFSEND answers only after the app's FIN reached it.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_reuse

FLOWS=200
[ -n "${TS_SANITIZED:-}" ] && FLOWS=100
RF="$(dirname "$0")/reuseflows.py"

counters() {	# prints: connections reused offered errors failed
	ip netns exec "$NS_S" "$TUNSPLIT" status -s "$TS_TMP/server.sock" \
	    --json >"$TS_TMP/server.json" || ts_fail "server status --json"
	"$TS_PY" -c 'import json, sys
s = json.load(open(sys.argv[1]))
r = s["reuse"]
print(s["sessions"]["total"], r["reused"], r["offered"], r["errors"],
      s["sessions"]["failed"])' "$TS_TMP/server.json" ||
	    ts_fail "server status: $(cat "$TS_TMP/server.json")"
}

ts_standard_setup "  reuse: 40"
ts_seq_flows "$FLOWS" 1
read -r conns reused offered errors failed <<<"$(counters)"
ts_log "server: $conns connections, $reused flows on reused ones, $offered offers, $errors errors, $failed failed"
[ "$errors" = 0 ] || ts_fail "$errors reuse errors: $(cat "$TS_TMP/server.json")"
[ "$failed" = 0 ] || ts_fail "$failed sessions failed: $(cat "$TS_TMP/server.json")"
[ "$reused" -ge $((FLOWS * 3 / 4)) ] ||
    ts_fail "only $reused of $FLOWS flows on reused connections"
[ "$conns" -le $((FLOWS / 4)) ] ||
    ts_fail "$conns connections for $FLOWS flows: not reused enough"
most=$(sed -n 's/.* sess \([0-9]*\): closed: .*: done$/\1/p' "$TS_TMP/server.log" |
    sort | uniq -c | sort -n | tail -n 1)
[ -n "$most" ] && [ "${most% *}" -le 40 ] ||
    ts_fail "a connection carried more than reuse: 40 flows: $most"
ts_log "most flows on one connection: ${most% *} (reuse: 40)"

# A burst: 48 flows open at once end together; the pool keeps no more of
# their connections than twice its size (each one kept holds a session on
# the server too).
ip netns exec "$NS_C" timeout 60 "$TS_PY" -u "$RF" burst --host "$TS_T_ADDR4" \
    --port "$TS_TARGET_PORT" --flows 48 --seed 7001 >"$TS_TMP/burst.log" 2>&1 ||
    ts_fail "burst: $(tail -n 2 "$TS_TMP/burst.log")"
sleep 0.5
ip netns exec "$NS_C" "$TUNSPLIT" status -s "$TS_TMP/client.sock" --json \
    >"$TS_TMP/client.json" || ts_fail "client status --json"
read -r size held <<<"$("$TS_PY" -c 'import json, sys
p = json.load(open(sys.argv[1]))["pool"]
print(p["size"], p["ready"] + p["connecting"])' "$TS_TMP/client.json")"
[ -n "$held" ] && [ "$held" -le $((2 * size)) ] ||
    ts_fail "after a burst of 48 flows the pool holds ${held:-?} connections, its size is ${size:-?}"
ts_log "burst of 48 flows: the pool keeps $held connections (size $size)"

# A few more flows first: their connections are back in the pool (one
# that reached reuse: 40 is not), and the next flow takes one of them.
warm() { ts_seq_flows 3 "$1"; sleep 0.2; }

# Half-close on a reused connection (the pool hands out reused ones
# first): the target answers only after the FIN.
out=$TS_TMP/app.log
warm 501
read -r _ reused1 _ _ _ <<<"$(counters)"
ts_app halfclose --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" \
    --req-bytes 64k --reply-bytes 1m --seed 11 --timeout 30 >"$out" 2>&1 ||
    ts_fail "half-close: $(tail -n 1 "$out")"
read -r _ reused1b _ _ _ <<<"$(counters)"
[ "$reused1b" -gt "$reused1" ] || ts_fail "the half-close flow was not on a reused connection"
ts_log "half-close on a reused connection: $(tail -n 1 "$out")"

# A reset on a reused connection reaches the target at once.
warm 601
read -r _ reused2 _ _ _ <<<"$(counters)"
ip netns exec "$NS_C" timeout 30 "$TS_PY" -u "$RF" reset --host "$TS_T_ADDR4" \
    --port "$TS_TARGET_PORT" --seed 5 >"$out" 2>&1 ||
    ts_fail "reset: $(tail -n 1 "$out")"
for i in $(seq 50); do
	grep -q "target: .* error E" "$TS_TMP/target.log" && break
	sleep 0.1
done
grep "target: .* error E" "$TS_TMP/target.log" >"$TS_TMP/reset.log" ||
    ts_fail "the target never saw the app's reset (64 MiB download went on?)"
read -r conns3 reused3 offered3 errors3 _ <<<"$(counters)"
[ "$reused3" -gt "$reused2" ] || ts_fail "the reset flow was not on a reused connection"
ts_log "reset on a reused connection: target $(head -n 1 "$TS_TMP/reset.log" | sed 's/.*target: //')"
ts_seq_flows 20 1001
read -r conns4 reused4 offered4 errors4 failed4 <<<"$(counters)"
[ "$errors4" = 0 ] || ts_fail "$errors4 reuse errors after the reset"
ts_log "after the reset: 20 more flows intact, $conns4 connections, $reused4 reused in all"

# Fallback both ways: one flow per connection.
ts_check_alive
kill -TERM "$TS_CLIENT_PID"; wait "$TS_CLIENT_PID" 2>/dev/null
ts_stop_server
printf '  reuse: 1\n' >>"$TS_TMP/server.yaml"
ts_start_server
ts_start_client
ts_seq_flows 20 2001
read -r conns reused offered errors failed <<<"$(counters)"
[ "$reused" = 0 ] && [ "$offered" = 0 ] ||
    ts_fail "server reuse: 1 still reused ($reused) or offered ($offered)"
[ "$conns" -ge 20 ] || ts_fail "20 flows over $conns connections with server reuse: 1"
[ "$failed" = 0 ] || ts_fail "$failed sessions failed with server reuse: 1"
ts_log "server reuse: 1 (old server): 20 flows, $conns connections, none reused"

kill -TERM "$TS_CLIENT_PID"; wait "$TS_CLIENT_PID" 2>/dev/null
ts_stop_server
sed -i '/^  reuse: 1$/d' "$TS_TMP/server.yaml"
sed -i 's/^  reuse: 40$/  reuse: 1/' "$TS_TMP/client.yaml"
ts_start_server
ts_start_client
ts_seq_flows 20 3001
read -r conns reused offered errors failed <<<"$(counters)"
[ "$reused" = 0 ] || ts_fail "client reuse: 1 still reused $reused"
[ "$conns" -ge 20 ] || ts_fail "20 flows over $conns connections with client reuse: 1"
[ "$failed" = 0 ] || ts_fail "$failed sessions failed with client reuse: 1"
ts_log "client reuse: 1 (old client): 20 flows, $conns connections, none reused"
ts_check_alive
ts_pass "$FLOWS flows over few connections, half-close and reset exact on reused ones, fallback to one flow per connection both ways"
