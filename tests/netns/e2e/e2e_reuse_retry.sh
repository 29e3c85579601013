#!/bin/bash
# A flow whose reused outer connection the server closed between flows,
# just as the flow's request left on it, goes once more on a new
# connection: nothing had reached the app, so the app sees no failure.
#
# 1. Six sequential flows (reuseflows.py, hash-checked both ways) leave
#    reused connections in the client's pool.
# 2. The client's namespace drops every FIN from the server, and the
#    server is killed and started again: the pool's connections still
#    look alive to the client, though no server holds them (the race of
#    a server closing an idle reused connection, or draining, at the
#    moment a flow takes it, made certain).
# 3. The next flow takes a reused connection, its request meets the old
#    socket's RST before any status: it must complete intact, the client
#    saying it went once more on a new connection, and five more after
#    it (each on one of the dead ones, reused or warm but never used,
#    or a new one): a warm connection that waited in the pool is gone
#    the same way, and goes once more too.
#
# Before the retry the app got a reset (reuseflows.py failed).
. "$(dirname "$0")/../lib.sh"
ts_init e2e_reuse_retry

ts_need nft nftables

pool() {	# prints: ready reused (taken that had carried a flow)
	ip netns exec "$NS_C" "$TUNSPLIT" status -s "$TS_TMP/client.sock" \
	    --json >"$TS_TMP/client.json" || ts_fail "client status --json"
	"$TS_PY" -c 'import json, sys
p = json.load(open(sys.argv[1]))["pool"]
print(p["ready"], p["reused"])' "$TS_TMP/client.json" ||
	    ts_fail "client status: $(cat "$TS_TMP/client.json")"
}

# Pool connections that live long (the server waits 60 s for a header):
# none expires between the flows and the restart, however slow the box.
# One worker: each has a pool of its own, and the flow after the
# restart must find one that holds a reused connection, which the
# kernel's choice of worker would leave to chance (e2e_client_workers.sh
# covers the workers).
ts_standard_setup "  pool_lifetime: 30s
  workers: 1"
ts_seq_flows 6 1
# The last flows' connections wait for the server's offer, then are
# ready again.
sleep 0.5
read -r ready reused0 <<<"$(pool)"
[ "$ready" -ge 1 ] || ts_fail "the pool holds no ready connection after 6 flows"
ts_log "pool: $ready ready; $reused0 flows took a reused connection"

ip netns exec "$NS_C" nft -f - <<EOF2 || ts_fail "nftables rule"
table inet tsretry {
	chain in {
		type filter hook input priority 0; policy accept;
		ip saddr $TS_S_ADDR4 tcp sport $TS_SERVER_PORT tcp flags & fin == fin drop
	}
}
EOF2
ts_stop_server KILL
ts_start_server

ts_seq_flows 1 101
read -r _ reused1 <<<"$(pool)"
[ "$reused1" -gt "$reused0" ] ||
    ts_fail "the flow after the restart did not take a reused connection"
grep -q "on a reused connection: tried once more on a new one" \
    "$TS_TMP/client.log" ||
    ts_fail "the flow completed, but the client logged no retry"
ts_log "$(grep -m1 "tried once more on a new one" "$TS_TMP/client.log")"
ts_seq_flows 5 201
ip netns exec "$NS_C" nft delete table inet tsretry
ts_check_alive
ts_pass "a flow on a reused connection the server had closed went again on a new one, intact"
