#!/bin/bash
# 256 MiB app -> target and 256 MiB target -> app through the tunnel, IPv4
# and IPv6 destinations, SHA-256 checked on both ends.  Bounded by 300 s per
# transfer.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_bulk

size=${TS_BULK_SIZE:-256m}
ts_standard_setup

TS_APP_TIMEOUT=300
out=$TS_TMP/apps.log
run() {
	local rc
	ts_app "$@" >>"$out" 2>&1
	rc=$?
	ts_log "$(tail -n 1 "$out")"
	case $rc in
	0) ;;
	124) ts_fail "$1 to $3 did not finish within 300 s" ;;
	*) ts_fail "$1 to $3: $(tail -n 1 "$out")" ;;
	esac
}
run send --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --bytes "$size" --seed 11
run recv --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --bytes "$size" --seed 12
run send --host "$TS_T_ADDR6" --port "$TS_TARGET_PORT" --bytes 32m --seed 13
run recv --host "$TS_T_ADDR6" --port "$TS_TARGET_PORT" --bytes 32m --seed 14
ts_check_alive
ts_pass "$size each direction (IPv4) and 32m each direction (IPv6), all sha256 match"
