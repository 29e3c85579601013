#!/bin/bash
# 200 connections open at the same time through the tunnel (half upload,
# half download), 1 MiB each; every connection's SHA-256 must match.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_concurrent

conns=${TS_CONNS:-200} limit=${TS_CONCURRENT_LIMIT:-30}
ts_standard_setup

out=$TS_TMP/apps.log
TS_APP_TIMEOUT=240
ts_app multi --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --conns "$conns" \
    --bytes 1m --seed 100 --timeout 120 >"$out" 2>&1
rc=$?
cat "$out"
[ $rc -eq 124 ] && ts_fail "$conns concurrent connections did not finish within 240 s"
[ $rc -eq 0 ] || ts_fail "$(tail -n 1 "$out")"
# 200 MiB on this testbed take a few seconds; tens of seconds mean flows sat
# in retransmission backoff (drops at the TUN or in lwIP), which is a bug.
secs=$(sed -n 's/^multi: .*, \([0-9.]*\)s$/\1/p' "$out")
awk -v s="${secs:-999}" -v l="$limit" 'BEGIN { exit !(s <= l) }' ||
    ts_fail "all hashes match, but it took ${secs:-?} s (limit $limit s): stalled flows"
ok=$(grep -c "^target: .* \(SINK\|SEND\) 1048576 bytes" "$TS_TMP/target.log")
[ "$ok" -eq "$conns" ] ||
    ts_fail "target completed $ok of $conns transfers"
ts_check_alive
ts_pass "$conns concurrent connections x 1 MiB, all sha256 match, in $secs s"
