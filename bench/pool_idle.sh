#!/bin/bash
# bench/pool_idle.sh: what the warm pool's decay costs the first flow
# after an idle period (issue 21 item 6 against issue 18's TTFB).  On the
# end-to-end test topology (tests/netns/lib.sh) with bench/linkem delaying
# the client-server link (DELAY ms each way), rounds interleaved:
#
#   warm   a flow 0.5 s after another one: the pool is warm (a lifetime
#          of 4 s keeps its connection from expiring in between)
#   idle   a flow after pool_idle + pool_lifetime + 1 s of silence: the
#          pool has decayed to nothing, the flow dials its own TCP + TLS
#
# Each sample is the time from the app's connect() to the first byte of
# a 1 KiB download from the target.  Also counted: the SYNs the client
# sent to the server during the idle waits (must be 0).  Not a test;
# numbers for doc/PERFORMANCE.md.
#
#   TUNSPLIT=build/tunsplit bench/pool_idle.sh [rounds [delay_ms]]
set -u
TS_SRCDIR=${TS_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
ROUNDS=${1:-7}
DELAY=${2:-20}
IDLE=2 LIFE=4
. "$TS_SRCDIR/tests/netns/lib.sh"
ts_init pool_idle

# lib.sh's topology with bench/linkem (no loss, DELAY ms each way) in
# place of the client-server veth, as in e2e_loss.sh.
ts_find_linkem
ts_ns_add "$NS_C"
ts_ns_add "$NS_S"
ts_ns_add "$NS_T"
ts_start_linkem linkem "$NS_C" --a-netns "/run/netns/$NS_C" --a-name eth0 \
    --b-netns "/run/netns/$NS_S" --b-name eth0 --delay "$DELAY"
ts_client_link_up eth0
ts_target_link_up
ts_make_pki
ts_write_configs "  pool: {min: 1, max: 8}
  pool_idle: ${IDLE}s
  pool_lifetime: ${LIFE}s"
ts_start_target
ts_start_server
ts_start_client
ts_count_syns
cat >"$TS_TMP/ttfb.py" <<'EOF'
import socket, sys, time
host, port = sys.argv[1], int(sys.argv[2])
t0 = time.monotonic()
c = socket.create_connection((host, port), timeout=10)
c.sendall(b"SEND 1024 1 0\n")
b = c.recv(4096)
t1 = time.monotonic()
got = len(b)
while got < 1024:
    b = c.recv(4096)
    if not b:
        break
    got += len(b)
c.close()
if got != 1024:
    sys.exit("short read: %d bytes" % got)
print("%.1f" % ((t1 - t0) * 1000))
EOF
ttfb() {
	ip netns exec "$NS_C" "$TS_PY" "$TS_TMP/ttfb.py" "$TS_T_ADDR4" \
	    "$TS_TARGET_PORT" || ts_fail "flow failed"
}
warm=() idle=() idle_syns=0
ttfb >/dev/null
for r in $(seq "$ROUNDS"); do
	sleep 0.5
	warm+=("$(ttfb)")
	sleep $((IDLE + LIFE + 1))
	s0=$(ts_syns)
	sleep 1
	idle_syns=$((idle_syns + $(ts_syns) - s0))
	idle+=("$(ttfb)")
	ts_log "round $r: warm ${warm[-1]} ms, after idle ${idle[-1]} ms"
done
med() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ts_log "RTT $((2 * DELAY)) ms, $ROUNDS rounds: TTFB median warm $(med "${warm[@]}") ms (${warm[*]}), after idle $(med "${idle[@]}") ms (${idle[*]}); SYNs during the idle seconds: $idle_syns"
ts_pass "measured"
