#!/bin/bash
# The outbound's dial cap (src/client/dialgate.h): a client whose apps
# open many flows at once keeps at most 64 outer connections of one
# outbound in their TCP connect and TLS handshake, and the flows past
# that wait their turn, so the server's pre-auth limits never reset them.
#
# The server's limit is scaled down (max_preauth_per_source: 16, so at
# most 16 + 4 x 16 = 80 of one source's unauthenticated connections are
# kept, the rest reset at the accept).  1,500 flows (600 under a
# sanitizer) are opened at once by one app (reuseflows.py burst: all
# started, each with its request and FIN, then all read): every one is
# answered, its bytes SHA-256 checked both ways, none reset, and the
# server never refused a connection for its pre-auth limit.  Before the
# cap the client's dialer threads started them all at once and the
# server reset those past 80.
#
# Topology: lib.sh's (client tsc -- server tss -- target tst).
. "$(dirname "$0")/../lib.sh"
ts_init e2e_dial_cap

FLOWS=1500
[ -n "${TS_SANITIZED:-}" ] && FLOWS=600
RF="$(dirname "$0")/reuseflows.py"

# Every flow holds a socket in the app, the client, the server and the
# target at once.
ulimit -n "$(ulimit -Hn)" || ts_fail "cannot raise the descriptor limit"
[ "$(ulimit -n)" -ge $((3 * FLOWS)) ] ||
    ts_fail "descriptor limit $(ulimit -n) too low for $FLOWS flows"

# A connect_timeout that the last flow's wait for its turn cannot reach,
# even under a sanitizer and load: the test is about resets, not time.
TS_MAX_FLOWS=$((FLOWS + 100))
ts_topology_up
ts_make_pki
ts_write_configs "  dial_threads: 2" "  max_preauth_per_source: 16"
sed -i 's/^  connect_timeout: 10s$/  connect_timeout: 2m/' "$TS_TMP/client.yaml"
grep -q '^  connect_timeout: 2m$' "$TS_TMP/client.yaml" ||
    ts_fail "connect_timeout: 2m not written"
ts_start_target
ts_prove_no_forward "$TS_TARGET_PORT"
ts_start_server
ts_start_client

# Four apps at once, so that the flows arrive faster than the server
# handshakes them.
for i in 1 2 3 4; do
	ip netns exec "$NS_C" timeout 150 "$TS_PY" -u "$RF" burst \
	    --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --flows $((FLOWS / 4)) \
	    --bytes 512 --seed $((7301 + i * 10000)) --timeout 120 \
	    >"$TS_TMP/burst$i.log" 2>&1 &
	pids="${pids:-} $!"
done
bad=
for p in $pids; do wait "$p" || bad=1; done
for i in 1 2 3 4; do ts_log "app $i: $(tail -n 1 "$TS_TMP/burst$i.log")"; done
[ -z "$bad" ] ||
    ts_fail "$(cat "$TS_TMP"/burst?.log | grep -m 1 failed); server: $(grep -c 'limit preauth' "$TS_TMP/server.log") pre-auth refusals"
! grep -q "limit preauth" "$TS_TMP/server.log" ||
    ts_fail "the server refused connections: $(grep -m 1 'limit preauth' "$TS_TMP/server.log")"
! grep -q "TLS handshake with server failed\|connect to server" \
    "$TS_TMP/client.log" ||
    ts_fail "client: $(grep -m 1 'TLS handshake with server failed\|connect to server' "$TS_TMP/client.log")"

ts_pass "$FLOWS flows opened at once, each answered and SHA-256 checked both ways; the server (max_preauth_per_source: 16) reset none"
