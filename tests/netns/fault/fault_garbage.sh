#!/bin/bash
# Hostile bytes at the server port, IPv4 and IPv6: random garbage of
# several sizes, TLS record headers with nothing or nonsense behind them,
# and -- inside completed TLS sessions -- random, truncated and all-zero
# request headers, and authenticated (soak.py computes the MAC) UDP and
# ICMP streams whose frames are malformed or cut short, a header replayed
# on another TLS connection (a bad MAC there: it is bound to the first), a
# stale one, one of an unknown kind and a version 1 one (refused: no
# accept_v1).  Every such connection must be closed by the server
# (handshake_timeout 3s here) within 10 s, the server must survive it with
# no descriptor left behind, and real flows must work afterwards.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../soaklib.sh"
ts_init fault_garbage

ts_topology_up
ts_make_pki
ts_write_configs "" "  handshake_timeout: 3s"
ts_start_soak_target
ts_start_server
ts_start_client
sfd0=$(ts_fd_count "$TS_SERVER_PID")

out=$TS_TMP/garbage.log
TS_APP_TIMEOUT=120
seed=1
for host in "$TS_S_ADDR4" "$TS_S_ADDR6"; do
	ts_soak_app garbage --host "$host" --port "$TS_SERVER_PORT" \
	    --ca "$TS_TMP/ca.pem" --sni "$TS_SNI" --rounds 8 --seed $seed \
	    --key "$TS_KEY" --target "$TS_T_ADDR4" --within 10 >>"$out" 2>&1
	rc=$?
	ts_log "$host: $(tail -n 1 "$out")"
	[ $rc -eq 0 ] || ts_fail "$host: $(tail -n 1 "$out")"
	ts_alive "$TS_SERVER_PID" || ts_fail "the server died of garbage"
	seed=$((seed + 1))
done
for i in $(seq 30); do
	[ "$(ts_fd_count "$TS_SERVER_PID")" -le "$sfd0" ] && break
	sleep 0.1
done
[ "$(ts_fd_count "$TS_SERVER_PID")" -le "$sfd0" ] ||
    ts_fail "server holds $(ts_fd_count "$TS_SERVER_PID") descriptors, $sfd0 before"
TS_APP_TIMEOUT=30
ts_soak_app churn --host "$TS_T_ADDR4" --port "$TS_SOAK_PORT" --conns 100 \
    --parallel 8 >"$TS_TMP/churn.log" 2>&1 ||
    ts_fail "real flows after the garbage: $(tail -n 1 "$TS_TMP/churn.log")"
for why in "bad MAC" "outside the window" "version 1 header"; do
	grep -q "rejected .*$why" "$TS_TMP/server.log" ||
	    ts_fail "no '$why' rejection in the server log"
done
ts_check_alive
n=$(grep -c rejected "$TS_TMP/server.log")
ts_pass "$(grep -o '^garbage: [0-9]*' "$out" | awk '{ s += $2 } END { print s }') hostile connections closed ($n rejections logged), server intact, real flows ok"
