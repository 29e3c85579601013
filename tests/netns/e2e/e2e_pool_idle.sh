#!/bin/bash
# An idle client does not beacon (issue 21 item 6): the warm pool follows
# demand and decays to nothing once the user is idle.  Counted on the
# wire, with an nftables counter of the SYNs the client namespace sends
# to the server (every outer connection is one SYN), and on the server,
# by its sessions:
#   1. started and never used: no connection at all;
#   2. right after one flow: the pool warms up to its floor (min 2), so
#      connections beyond the flow's own are opened;
#   3. after pool_idle and one pool_lifetime: the pool holds nothing, and
#      over a window of three lifetimes the client opens no connection;
#   4. a burst after idle (40 flows at once, 64 KiB each way, every one
#      hash-checked) works, and warms the pool again;
#   5. a failover group of three members (issue 17: no active health
#      probes): while its flows run, the standby members hold their
#      floor; once the group is idle, every member's pool decays to
#      nothing and over the window the client opens no connection.
#
# Short times keep it quick: pool_idle 3s, pool_lifetime 2s.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_pool_idle
ts_need nft nftables

IDLE=3 LIFE=2 WINDOW=6
ts_standard_setup "  pool: {min: 2, max: 8}
  pool_idle: ${IDLE}s
  pool_lifetime: ${LIFE}s"

ts_count_syns

# sessions: the server's total of sessions accepted.
sessions() {
	ip netns exec "$NS_S" "$TUNSPLIT" status -s "$TS_TMP/server.sock" \
	    --json >"$TS_TMP/server.json" || ts_fail "server status --json"
	"$TS_PY" -c 'import json, sys
print(json.load(open(sys.argv[1]))["sessions"]["total"])' "$TS_TMP/server.json"
}

# pool KEY: the client's pool counter.
pool() {
	ip netns exec "$NS_C" "$TUNSPLIT" status -s "$TS_TMP/client.sock" \
	    --json >"$TS_TMP/client.json" || ts_fail "client status --json"
	"$TS_PY" -c 'import json, sys
print(json.load(open(sys.argv[1]))["pool"][sys.argv[2]])' \
	    "$TS_TMP/client.json" "$1"
}

# 1. Never used: nothing on the wire.
sleep 2
s=$(ts_syns) n=$(sessions)
[ "$s" = 0 ] && [ "$n" = 0 ] ||
    ts_fail "an unused client opened connections: $s SYNs, $n server sessions"
ts_log "1. unused client, 2 s: 0 SYNs, 0 sessions"

# flow SEED: one hash-checked 64 KiB upload.
out=$TS_TMP/app.log
flow() {
	ts_app send --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --bytes 64k \
	    --seed "$1" --timeout 10 >"$out" 2>&1 ||
	    ts_fail "flow: $(tail -n 1 "$out")"
	grep -q "match" "$out" || ts_fail "flow: $(tail -n 1 "$out")"
}

# 2. One flow: its own connection, then the pool's floor.
flow 1
for i in $(seq 30); do
	[ "$(pool ready)" -ge 2 ] && break
	sleep 0.1
done
s=$(ts_syns)
[ "$(pool ready)" -ge 2 ] || ts_fail "the pool did not warm up after a flow: $(cat "$TS_TMP/client.json")"
[ "$(pool target)" -ge 2 ] || ts_fail "target below the floor: $(cat "$TS_TMP/client.json")"
[ "$s" -ge 3 ] || ts_fail "only $s SYNs for one flow and a pool of 2"
ts_log "2. after one flow: $s SYNs, pool $(pool ready) ready (target $(pool target))"

# 3. Idle: within pool_idle + one lifetime (and a margin) the pool is
# empty, and stays so, with no SYN and no new session over the window.
for i in $(seq $(((IDLE + LIFE + 3) * 10))); do
	[ "$(pool ready)" = 0 ] && [ "$(pool connecting)" = 0 ] && break
	sleep 0.1
done
[ "$(pool ready)" = 0 ] && [ "$(pool connecting)" = 0 ] ||
    ts_fail "the pool did not decay: $(cat "$TS_TMP/client.json")"
[ "$(pool target)" = 0 ] || ts_fail "idle target not 0: $(cat "$TS_TMP/client.json")"
s1=$(ts_syns) n1=$(sessions)
sleep "$WINDOW"
s2=$(ts_syns) n2=$(sessions)
[ "$s2" = "$s1" ] ||
    ts_fail "an idle client opened $((s2 - s1)) connections in ${WINDOW} s after the decay"
[ "$n2" = "$n1" ] ||
    ts_fail "the server accepted $((n2 - n1)) sessions from an idle client in ${WINDOW} s"
ts_log "3. idle after decay, ${WINDOW} s window: 0 SYNs, 0 new sessions ($s1 SYNs before)"

# 4. A burst after idle: every flow intact, and the pool warms again.
opened=$(pool opened)
TS_APP_TIMEOUT=60
ts_app multi --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --conns 40 \
    --bytes 64k --seed 50 --timeout 30 >"$out" 2>&1 ||
    ts_fail "burst after idle: $(tail -n 1 "$out")"
ok=$(grep -c "^target: .* \(SINK\|SEND\) 65536 bytes" "$TS_TMP/target.log")
[ "$ok" -ge 40 ] || ts_fail "target completed $ok of 40 burst transfers"
for i in $(seq 30); do
	[ "$(pool opened)" -gt "$opened" ] && break
	sleep 0.1
done
[ "$(pool opened)" -gt "$opened" ] ||
    ts_fail "the burst did not warm the pool: $(cat "$TS_TMP/client.json")"
ts_log "4. burst of 40 after idle: $(tail -n 1 "$out"); pool target $(pool target), $(pool opened) opened"

# 5. A group of three members, all on the one server: a is active, b and
# c on standby.
kill "$TS_CLIENT_PID"
for i in $(seq 50); do
	ts_alive "$TS_CLIENT_PID" || break
	sleep 0.1
done
ts_alive "$TS_CLIENT_PID" && ts_fail "client did not exit"
member() {
	echo "    - {name: $1, server: \"$TS_S_ADDR4:$TS_SERVER_PORT\"," \
	    "sni: $TS_SNI, ca: $TS_TMP/ca.pem, key: \"$TS_KEY\"," \
	    "pool: {min: 2, max: 8}, pool_idle: ${IDLE}s," \
	    "pool_lifetime: ${LIFE}s}"
}
umask 077
{
	sed '/^client:/q' "$TS_TMP/client.yaml"
	echo "  outbounds:"
	member a
	member b
	member c
	echo "    - {name: g, type: failover, members: [a, b, c]}"
	echo "  final: g"
} >"$TS_TMP/client3.yaml"
umask 022
mv "$TS_TMP/client3.yaml" "$TS_TMP/client.yaml"
"$TUNSPLIT" check -c "$TS_TMP/client.yaml" >"$TS_TMP/check.log" 2>&1 ||
    ts_fail "tunsplit check (group): $(cat "$TS_TMP/check.log")"
ts_start_client
# mpool MEMBER KEY: a member's pool counter.
mpool() {
	ip netns exec "$NS_C" "$TUNSPLIT" status -s "$TS_TMP/client.sock" \
	    --json >"$TS_TMP/client.json" || ts_fail "client status --json"
	"$TS_PY" -c 'import json, sys
o = [x for x in json.load(open(sys.argv[1]))["outbounds"] if x["name"] == sys.argv[2]][0]
print(o["pool"][sys.argv[3]])' "$TS_TMP/client.json" "$1" "$2"
}
flow 2
for i in $(seq 30); do
	[ "$(mpool c opened)" -ge 1 ] && break
	sleep 0.1
done
[ "$(mpool b opened)" -ge 1 ] && [ "$(mpool c opened)" -ge 1 ] ||
    ts_fail "standby members did not hold their floor: $(cat "$TS_TMP/client.json")"
for i in $(seq $(((IDLE + LIFE + 3) * 10))); do
	n=0
	for m in a b c; do
		n=$((n + $(mpool $m ready) + $(mpool $m connecting)))
	done
	[ "$n" = 0 ] && break
	sleep 0.1
done
[ "$n" = 0 ] || ts_fail "the group's pools did not decay: $(cat "$TS_TMP/client.json")"
s1=$(ts_syns) n1=$(sessions)
sleep "$WINDOW"
s2=$(ts_syns) n2=$(sessions)
[ "$s2" = "$s1" ] && [ "$n2" = "$n1" ] ||
    ts_fail "an idle group of 3 opened $((s2 - s1)) connections ($((n2 - n1)) sessions) in ${WINDOW} s after the decay"
ts_log "5. group of 3 members, idle after decay, ${WINDOW} s window: 0 SYNs, 0 new sessions"
ts_check_alive
ts_pass "idle client: no connection before use or after the decay (${WINDOW} s window); $s SYNs right after a flow; burst after idle intact; an idle group of 3 opens none"
