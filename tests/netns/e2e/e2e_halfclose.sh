#!/bin/bash
# Half-close: the app sends a request and shutdown(SHUT_WR)s; the target
# reads to EOF (so the FIN must have crossed the tunnel) and only then sends
# a 1 MiB reply, which must arrive intact.  IPv4 and IPv6.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_halfclose

ts_standard_setup

out=$TS_TMP/apps.log
TS_APP_TIMEOUT=60
for host in "$TS_T_ADDR4" "$TS_T_ADDR6"; do
	ts_app halfclose --host "$host" --port "$TS_TARGET_PORT" \
	    --req-bytes 64k --reply-bytes 1m --seed 7 --timeout 30 >>"$out" 2>&1
	rc=$?
	[ $rc -eq 124 ] && ts_fail "$host: no reply within 60 s (FIN lost in the tunnel?)"
	[ $rc -eq 0 ] || ts_fail "$host: $(tail -n 1 "$out")"
	ts_log "$host: $(tail -n 1 "$out")"
done
ts_check_alive
ts_pass "after shutdown(SHUT_WR) the 1 MiB reply arrived intact (v4 and v6)"
