#!/bin/bash
# 1000 UDP associations at once (topology in lib.sh; UDP echo on the
# target): 1000 sockets in the app, one datagram each, every echo back;
# the client's memory for them is reported; all 1000 expire after
# udp_timeout (the count in the client's log reaches 0) and the server
# closes its side.  Then max_udp is exceeded: the longest idle ones are
# evicted and the client lives on.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_udp_many

N=${TS_UDP_N:-1000}
# Setting up the 1000 associations takes about 4 s when other tests run at
# the same time (make -j2 check), several times that in a sanitizer build
# (scripts/test.sh --asan): the first must not expire before the count.
TIMEOUT_S=8
[ -n "${TS_SANITIZED:-}" ] && TIMEOUT_S=16
ts_standard_setup "  udp_timeout: ${TIMEOUT_S}s
  max_udp: 1200"
ts_start_udpecho 7

udp() { ts_udptool "$TS_TMP/apps.log" "$@"; }
closed() { grep -c "^.* info: \(worker [0-9]*: \)\?udp [0-9]* .*: $1" "$TS_TMP/client.log"; }

rss0=$(ts_rss_kb "$TS_CLIENT_PID")
udp many --host "$TS_T_ADDR4" --n "$N" --hold 1 ||
    ts_fail "$(tail -n 2 "$TS_TMP/apps.log")"
rss1=$(ts_rss_kb "$TS_CLIENT_PID")
ts_log "$(tail -n 1 "$TS_TMP/apps.log")"
ts_log "client RSS $rss0 KiB before, $rss1 KiB with $N idle associations" \
    "($(((rss1 - rss0) * 1024 / N)) bytes each)"
live=$(ip netns exec "$NS_S" ss -Htn state established "sport = :$TS_SERVER_PORT" |
    wc -l)
[ "$live" -ge "$N" ] || ts_fail "only $live outer connections at the server"
ts_log "$live outer connections at the server"

# Expiry: every association closes on its idle timer, the last one says
# "0 left".
for i in $(seq $(((TIMEOUT_S + 15) * 10))); do
	[ "$(closed "idle timeout")" -ge "$N" ] && break
	sleep 0.1
done
n=$(closed "idle timeout")
[ "$n" -ge "$N" ] || ts_fail "$n of $N associations expired"
grep "idle timeout" "$TS_TMP/client.log" | tail -n 1 | grep -q ", 0 left\(,\|$\)" ||
    ts_fail "associations left after expiry: $(grep 'idle timeout' \
    "$TS_TMP/client.log" | tail -n 1)"
# The server ends its side when the client closes (the pool's idle
# connections to it are not associations).
for i in $(seq 100); do
	srv=$(grep -c "sess [0-9]*: udp: up" "$TS_TMP/server.log")
	[ "$srv" -ge "$N" ] && break
	sleep 0.1
done
[ "$srv" -ge "$N" ] || ts_fail "server closed $srv of $N associations"
ts_log "all $N expired after ${TIMEOUT_S}s idle (client count 0, server closed $srv)"

# Over max_udp (1200): 1500 at once; one attempt each, the point is that
# eviction makes room and nothing breaks.
udp many --host "$TS_T_ADDR4" --n 1500 --tries 1 --timeout 20 || true
ev=$(closed "evicted")
[ "$ev" -ge 300 ] || ts_fail "only $ev evictions for 1500 associations, max 1200"
ts_log "$(tail -n 1 "$TS_TMP/apps.log"); $ev evicted"
udp echo --host "$TS_T_ADDR6" --sizes 100,9000 ||
    ts_fail "echo after eviction: $(tail -n 2 "$TS_TMP/apps.log")"

ts_check_alive
ts_pass "$N associations at once, all expired, eviction at max_udp"
