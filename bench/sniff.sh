#!/bin/bash
# Time to first byte with and without sniffing, in one run, on the
# end-to-end test topology (tests/netns/lib.sh, no impairment), with the
# targets of tests/netns/e2e/sniffpeer.py: an HTTPS request (TLS
# handshake, then the first answer byte), an HTTP request, and a
# server-speaks-first banner.  One client daemon, reloaded between
# `sniff: never` and `sniff: always` in alternating rounds (ABAB...), so
# both see the same machine; medians and p90 per mode.
#
# usage (as root): TUNSPLIT=build/tunsplit bench/sniff.sh [requests-per-round] [rounds]
# env:   TS_POOL (client.pool, default 2), TS_SNIFF_TIMEOUT (ms, default 50)
. "$(dirname "$0")/../tests/netns/lib.sh"
ts_init sniffbench
N=${1:-25}
R=${2:-4}
PEER=$TS_SRCDIR/tests/netns/e2e/sniffpeer.py
ts_standard_setup "  pool: ${TS_POOL:-2}
  sniff: never
  sniff_timeout: ${TS_SNIFF_TIMEOUT:-50}ms"
T4=$TS_T_ADDR4
ts_bg "$NS_T" peer "$TS_PY" -u "$PEER" serve --bind "$T4" --tls-port 9443 \
    --http-port 9080 --banner-port 9025 --cert "$TS_TMP/server.pem" \
    --key "$TS_TMP/server.key"
ts_wait_port "$NS_T" 9025 10 "$TS_LAST_PID" || ts_fail "sniffpeer did not listen"
res=$TS_TMP/ttfb.txt
one() {	# one MODE KIND ARGS...: one request, its TTFB in ms appended
	local mode=$1 kind=$2 line
	shift 2
	line=$(ip netns exec "$NS_C" timeout 30 "$TS_PY" "$PEER" "$kind" "$@" |
	    tail -n 1) || ts_fail "$kind: $line"
	echo "$mode $kind $(echo "$line" | grep -o 'after [0-9.]*' | cut -d' ' -f2)" >>"$res"
}
for r in $(seq "$R"); do
	for mode in never always; do
		sed -i "s/^  sniff: .*/  sniff: $mode/" "$TS_TMP/client.yaml"
		ts_reload "$TS_CLIENT_PID" "$TS_TMP/client.log" "sniff: $mode"
		sleep 0.3	# the pool refilled under the new generation
		for i in $(seq "$N"); do
			one $mode tls --host "$T4" --port 9443 --sni www.bench.example --bytes 1000
			one $mode http --host "$T4" --port 9080 --hostname www.bench.example --bytes 1000
			one $mode banner --host "$T4" --port 9025 --max-ms 5000
		done
	done
done
"$TS_PY" - "$res" <<'PY'
import statistics, sys
d = {}
for line in open(sys.argv[1]):
    mode, kind, ms = line.split()
    d.setdefault((kind, mode), []).append(float(ms))
print("\n| target | sniff | n | TTFB median ms | p90 ms |\n|---|---|---|---|---|")
for kind in ("tls", "http", "banner"):
    for mode in ("never", "always"):
        v = sorted(d[(kind, mode)])
        print("| %s | %s | %d | %.2f | %.2f |" % (kind, mode, len(v),
              statistics.median(v), v[int(0.9 * (len(v) - 1))]))
PY
ts_pass "TTFB measured"
