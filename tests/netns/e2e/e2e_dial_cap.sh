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
# Then, the server stopped and the pool off, 80 flows: 64 hold an outer
# socket, 16 wait without one; the apps' resets end them all (the
# client's fds back to before), and so does their connect_timeout (1s)
# in a second round; the server resumed, a burst of 200 flows goes
# through (no slot was lost).
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
# One worker: with N (client.workers) each has 64 / N slots and the
# kernel spreads the flows unevenly, so the counts below would be
# another's; e2e_client_workers.sh covers the workers.
ts_write_configs "  dial_threads: 2
  workers: 1" "  max_preauth_per_source: 16"
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

# 2. The server stopped (SIGSTOP: the kernel completes the TCP
# handshakes, no TLS answer comes), the pool off: of 80 flows, 64 dial
# (a socket each) and 16 wait without one; the apps' resets take all of
# them out, dials and queue alike.
sed -i 's/^  dial_threads: 2$/  dial_threads: 2\n  pool: 0/' "$TS_TMP/client.yaml"
grep -q '^  pool: 0$' "$TS_TMP/client.yaml" || ts_fail "pool: 0 not written"
kill -STOP "$TS_SERVER_PID"
ts_reload "$TS_CLIENT_PID" "$TS_TMP/client.log" "reload with pool: 0"
sleep 0.3	# the retired pool's connections closed
base=$(ts_fds)
ts_stalled 80 reset
ts_wait_log "$TS_TMP/reset.log" "open 80" 30 ||
    ts_fail "apps: $(cat "$TS_TMP/reset.log")"
ts_fds_settle $((base + 64)) 100 ||
    ts_fail "80 flows, the server stopped: $(($(ts_fds) - base)) outer sockets, not 64"
sleep 0.5
[ "$(ts_fds)" -eq $((base + 64)) ] ||
    ts_fail "80 flows, the server stopped: then $(($(ts_fds) - base)) outer sockets"
ip netns exec "$NS_C" "$TUNSPLIT" status -s "$TS_TMP/client.sock" --json \
    >"$TS_TMP/gate.json" || ts_fail "client status --json"
d=$("$TS_PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))["outbounds"][0]["dials"]
print(d["active"], d["waiting"])' "$TS_TMP/gate.json") ||
    ts_fail "no dials in the status: $(head -c 1500 "$TS_TMP/gate.json")"
[ "$d" = "64 16" ] || ts_fail "status says dials active, waiting: $d, not 64 16"
ts_log "80 flows, the server stopped: 64 dialling, 16 waiting without a socket (status: $d)"
touch "$TS_TMP/reset.go"
ts_fds_settle "$base" 100 ||
    ts_fail "after the apps' resets the client holds $(ts_fds) fds, $base before"
ts_log "the apps' resets took out the 64 dials and the 16 waiting flows"

# 3. The same 80 flows left to their connect_timeout (1s): the waiting
# ones end with the others, and no dial starts after.
sed -i 's/^  connect_timeout: 2m$/  connect_timeout: 1s/' "$TS_TMP/client.yaml"
grep -q '^  connect_timeout: 1s$' "$TS_TMP/client.yaml" ||
    ts_fail "connect_timeout: 1s not written"
ts_reload "$TS_CLIENT_PID" "$TS_TMP/client.log" "reload with connect_timeout: 1s"
ts_stalled 80 tmo
ts_wait_log "$TS_TMP/tmo.log" "open 80" 30 ||
    ts_fail "apps: $(cat "$TS_TMP/tmo.log")"
ts_fds_settle "$base" 150 ||
    ts_fail "80 flows past their connect_timeout: the client holds $(ts_fds) fds, $base before"
sleep 1.5
ts_fds_settle "$base" ||
    ts_fail "after the timeouts the client holds $(ts_fds) fds, $base before"
touch "$TS_TMP/tmo.go"
ts_log "80 flows timed out, the 16 waiting too; fds back to $base"

# 4. The server back: every slot was given back, a burst goes through.
kill -CONT "$TS_SERVER_PID"
sleep 0.5	# the dead connections in its backlog accepted and closed
sed -i 's/^  connect_timeout: 1s$/  connect_timeout: 30s/' "$TS_TMP/client.yaml"
ts_reload "$TS_CLIENT_PID" "$TS_TMP/client.log" "reload with connect_timeout: 30s"
ip netns exec "$NS_C" timeout 60 "$TS_PY" -u "$RF" burst \
    --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --flows 200 \
    --bytes 512 --seed 9301 --timeout 40 >"$TS_TMP/after.log" 2>&1 ||
    ts_fail "burst after: $(tail -n 1 "$TS_TMP/after.log")"
ts_log "$(tail -n 1 "$TS_TMP/after.log")"

ts_pass "$FLOWS flows opened at once, each answered and SHA-256 checked both ways, the server (max_preauth_per_source: 16) reset none; past the cap of 64 flows wait without a socket and leave the queue on the app's reset or their timeout"
