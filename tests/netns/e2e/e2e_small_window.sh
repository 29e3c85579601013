#!/bin/bash
# Apps with small receive windows that stall (soak.py stall): 60 at once,
# each with SO_RCVBUF 4 to 64 KiB and TCP_MAXSEG 536, 1220 or 1460, three
# in four downloading and one in four uploading to an echo, between half
# and four times its buffer; each reads nothing at first, then a little at
# a time with ~2 s pauses, so that lwIP holds the rest and the FIN against
# a window open but smaller than its segments (with the TUN's offloads,
# segments of up to 64 KiB) and its persist timer cuts them.  Every byte
# must arrive and every stream end exactly at its end: lwIP 2.1 left the
# FIN on the first part of such a cut, and the app saw a clean EOF, short
# (lw_tcp_out.c).  TUN MTU 9000, then 1500.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../soaklib.sh"
ts_init e2e_small_window

ts_topology_up
ts_make_pki
ts_write_configs
ts_start_soak_target
ts_start_server
out=$TS_TMP/stall.log
for mtu in 9000 1500; do
	if [ -n "${TS_CLIENT_PID:-}" ]; then
		kill -TERM "$TS_CLIENT_PID" 2>/dev/null
		wait "$TS_CLIENT_PID" 2>/dev/null
	fi
	sed -i "s/^\(tun: {.*mtu: \)[0-9]*/\1$mtu/" "$TS_TMP/client.yaml"
	ts_start_client
	grep -q "mtu $mtu, offloads on" "$TS_TMP/client.log" ||
	    ts_fail "the client's TUN is not at MTU $mtu with offloads on"
	TS_APP_TIMEOUT=60 ts_soak_app stall --host "$TS_T_ADDR4" \
	    --port "$TS_SOAK_PORT" --conns 60 --seed "$mtu" >>"$out" 2>&1 ||
	    ts_fail "MTU $mtu: $(tail -n 1 "$out")"
	ts_log "MTU $mtu: $(tail -n 1 "$out")"
done
ts_check_alive
ts_pass "60 stalling small-window apps per TUN MTU (9000, 1500), every stream intact and ended at its end"
