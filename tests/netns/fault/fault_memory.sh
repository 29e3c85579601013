#!/bin/bash
# 1. The server's relay buffer budget: max_buffer_memory 1M (16 relay buffers
# of 64 KiB) and 20 downloads of 3 MiB whose apps read at 256 KB/s each,
# with small socket buffers so that the backlog sits in the server's relay
# buffers.  While the budget is full:
#
#   - new flows are refused at once (status 9: the app gets a reset),
#     counted as memory refusals and logged once;
#   - the relays that found no buffer are paused, not failed;
#   - the budget is never exceeded (peak <= 1M in the status);
#
# and every one of the 20 downloads completes, byte for byte.  Afterwards
# the budget is empty again and new flows work.
#
# Datagram sessions count too: with the budget full a new UDP association
# is refused (status 9, counted as a memory refusal), while one opened
# before stays open through it
# and echoes again once memory is free; its charges all come back (the
# budget is 0 after the client's udp_timeout closes it, and no accounting
# slip is logged).
#
# 2. The client's budget: client max_buffer_memory 1M, server unlimited,
# 10 downloads of 2 MiB read at 256 KB/s: what lwIP holds for the slow apps
# fills the budget; new flows get an RST on their SYN (ECONNREFUSED), the
# 10 downloads pause reading from the server and complete intact; the
# budget holds (peak at most 1M plus the requests' few bytes).
#
#   tsc: limits.py slowrecv ──ts0── client ══TLS══ server ── tst: tools.py serve
. "$(dirname "$0")/../lib.sh"
ts_init fault_memory

ts_topology_up
# Small socket buffers on the server side and the client's receive side:
# what the slow apps do not take piles up in the server's relays.
ts_sysctl "$NS_S" net/ipv4/tcp_wmem "4096 16384 65536"
ts_sysctl "$NS_S" net/ipv4/tcp_rmem "4096 16384 65536"
ts_sysctl "$NS_C" net/ipv4/tcp_rmem "4096 16384 65536"
ts_make_pki
ts_write_configs "  pool: 0
  udp_timeout: 4s" "  max_buffer_memory: 1M"
ts_start_target
ts_start_server
ts_start_client

status() {
	ip netns exec "$NS_S" "$TUNSPLIT" status -s "$TS_TMP/server.sock" --json
}
field() {	# field JSON PY-EXPR (on st)
	printf '%s' "$1" | "$TS_PY" -c "import json,sys; st=json.load(sys.stdin); print($2)"
}

# wait_full STATUS-CMD WHO MIN PID LOG: poll WHO's status until the budget
# holds more than MIN bytes (left in used) while PID, the slow reader
# logging to LOG, runs.
wait_full() {
	local i st
	for i in $(seq 200); do
		st=$($1) || ts_fail "$2 status"
		used=$(field "$st" 'st["limits"]["buffer_memory"]["used"]')
		[ "$used" -gt "$3" ] && return 0
		ts_alive "$4" || break
		sleep 0.1
	done
	ts_fail "$2: the budget never filled up (used $used): $(tail -n 3 "$TS_TMP/$5")"
}
# refuse_new WHO N LOG: N new flows, each refused at once (budget full).
refuse_new() {
	local i
	for i in $(seq "$2"); do
		ts_app refused --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" \
		    --within 3 >>"$TS_TMP/$3" 2>&1 ||
		    ts_fail "$1: new flow $i with the budget full: $(tail -n 1 "$TS_TMP/$3")"
	done
}

ts_start_udpecho 7
udp_echo() {	# LOG: one new association, one short echo
	ip netns exec "$NS_C" timeout 20 "$TS_PY" -u "$TS_LIB_DIR/udptool.py" \
	    echo --host "$TS_T_ADDR4" --port 7 --sizes 100 --timeout 1 \
	    --tries 2 >>"$TS_TMP/$1" 2>&1
}
# An association that outlives the full budget: one echo now, then a
# datagram a second (under udp_timeout) until udp-go exists, then echoes
# until one comes back.
cat >"$TS_TMP/udp_keep.py" <<'EOF'
import os, select, socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
dest, go = (sys.argv[1], 7), sys.argv[2]
def echo(tag, tries):
    for _ in range(tries):
        s.sendto(tag, dest)
        end = time.monotonic() + 1
        while time.monotonic() < end:
            if select.select([s], [], [], 0.2)[0] and s.recv(65535) == tag:
                return True
    return False
if not echo(b"before", 5):
    sys.exit("udp_keep: no echo before the budget filled")
print("udp_keep: echo before, local port %d" % s.getsockname()[1], flush=True)
n = 0
while not os.path.exists(go):
    s.sendto(b"while-full-%d" % n, dest)
    n += 1
    time.sleep(1)
if not echo(b"after", 20):
    sys.exit("udp_keep: no echo after the budget emptied")
print("udp_keep: echo after, same association (%d datagrams while full)" % n,
      flush=True)
EOF
ts_bg "$NS_C" udp_keep timeout 150 "$TS_PY" -u "$TS_TMP/udp_keep.py" \
    "$TS_T_ADDR4" "$TS_TMP/udp-go"
keeper=$TS_LAST_PID
for i in $(seq 50); do
	grep -q 'echo before' "$TS_TMP/udp_keep.log" 2>/dev/null && break
	ts_alive "$keeper" || break
	sleep 0.1
done
grep -q 'echo before' "$TS_TMP/udp_keep.log" ||
    ts_fail "UDP before the budget filled: $(tail -n 2 "$TS_TMP/udp_keep.log")"
# Its state is charged while it is open (no other session is).
uused=$(field "$(status)" 'st["limits"]["buffer_memory"]["used"]')
[ "$uused" -gt 0 ] || ts_fail "an open UDP association is not charged"
ts_log "an idle UDP association charged $uused bytes"

ts_bg "$NS_C" slowrecv timeout 150 "$TS_PY" -u "$TS_LIB_DIR/limits.py" \
    slowrecv --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --conns 20 \
    --bytes 3m --rate 256k --timeout 120
reader=$TS_LAST_PID
# Wait until the budget is too full to admit a new stream: 1M less two
# buffers (the new stream's reservation and the unit kept for the paused).
wait_full status server $((1048576 - 2 * 65536)) "$reader" slowrecv.log
ts_log "budget full: $used bytes in use"
refuse_new server 5 refused.log
ts_log "5 new flows refused: $(tail -n 1 "$TS_TMP/refused.log")"
r0=$(field "$(status)" 'st["limits"]["refused"]["memory"]')
udp_echo udp_full.log &&
    ts_fail "a new UDP association with the budget full: $(tail -n 2 "$TS_TMP/udp_full.log")"
r1=$(field "$(status)" 'st["limits"]["refused"]["memory"]')
[ "$r1" -gt "$r0" ] ||
    ts_fail "no datagram session refused for memory ($r0, then $r1 refusals)"
ts_log "a new UDP association refused with the budget full ($((r1 - r0)) memory refusals)"
st=$(status)
denied=$(field "$st" 'st["limits"]["buffer_memory"]["denied"]')
[ "$denied" -gt 0 ] || ts_fail "no relay was paused for memory: $st"
wait "$reader" || ts_fail "slow downloads: $(tail -n 5 "$TS_TMP/slowrecv.log")"
ts_log "$(tail -n 1 "$TS_TMP/slowrecv.log")"
touch "$TS_TMP/udp-go"
wait "$keeper" || ts_fail "the UDP association opened before: $(tail -n 2 "$TS_TMP/udp_keep.log")"
ts_log "$(tail -n 1 "$TS_TMP/udp_keep.log")"
udp_echo udp_after.log ||
    ts_fail "a new UDP association after the budget emptied: $(tail -n 2 "$TS_TMP/udp_after.log")"

st=$(status)
printf '%s\n' "$st" >"$TS_TMP/status.json"
"$TS_PY" - "$TS_TMP/status.json" <<'EOF' || ts_fail "status after: $st"
import json, sys
st = json.load(open(sys.argv[1]))
m = st["limits"]["buffer_memory"]
assert m["max"] == 1 << 20, m
assert 0 < m["peak"] <= m["max"], m
assert st["limits"]["refused"]["memory"] >= 6, st["limits"]
EOF
msgs=$(grep -c 'limit memory: max_buffer_memory' "$TS_TMP/server.log")
[ "$msgs" -ge 1 ] && [ "$msgs" -le 4 ] ||
    ts_fail "memory refusals logged $msgs times"
ts_app recv --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --bytes 1m \
    --seed 7 >"$TS_TMP/after.log" 2>&1 ||
    ts_fail "a download after the budget emptied: $(tail -n 1 "$TS_TMP/after.log")"
# The UDP associations close after the client's udp_timeout (4s).
for i in $(seq 100); do
	used=$(field "$(status)" 'st["limits"]["buffer_memory"]["used"]')
	[ "$used" = 0 ] && break
	sleep 0.1
done
[ "$used" = 0 ] || ts_fail "$used bytes still charged with no flows left"
! grep -q 'accounting bug' "$TS_TMP/server.log" ||
    ts_fail "server: $(grep 'accounting bug' "$TS_TMP/server.log")"
ts_log "server: $(grep -o 'udp: up.*' "$TS_TMP/server.log" | head -n 1)"
ts_check_alive
speak=$(field "$st" 'st["limits"]["buffer_memory"]["peak"]')
ts_log "server: budget 1M held (peak $speak, $denied buffer allocations paused), new flows refused at once ($msgs log line(s)), 20 slow downloads of 3 MiB intact; empty and serving again afterwards"

# 2. The client's budget.
kill -TERM "$TS_CLIENT_PID" "$TS_SERVER_PID"
wait "$TS_CLIENT_PID" "$TS_SERVER_PID" 2>/dev/null
ts_write_configs "  pool: 0
  max_buffer_memory: 1M" "  max_buffer_memory: 0"
ts_start_server
ts_start_client
cstatus() {
	ip netns exec "$NS_C" "$TUNSPLIT" status -s "$TS_TMP/client.sock" --json
}
ts_bg "$NS_C" slowrecv2 timeout 150 "$TS_PY" -u "$TS_LIB_DIR/limits.py" \
    slowrecv --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --conns 10 \
    --bytes 2m --rate 256k --timeout 120
reader=$TS_LAST_PID
wait_full cstatus client $((1048576 - 2 * 16384)) "$reader" slowrecv2.log
ts_log "client budget full: $used bytes in use"
refuse_new client 3 refused2.log
ts_log "client: 3 new flows refused: $(tail -n 1 "$TS_TMP/refused2.log")"
wait "$reader" || ts_fail "client: slow downloads: $(tail -n 5 "$TS_TMP/slowrecv2.log")"
ts_log "client: $(tail -n 1 "$TS_TMP/slowrecv2.log")"
st=$(cstatus)
printf '%s\n' "$st" >"$TS_TMP/cstatus.json"
"$TS_PY" - "$TS_TMP/cstatus.json" <<'EOF' || ts_fail "client status after: $st"
import json, sys
st = json.load(open(sys.argv[1]))
m = st["limits"]["buffer_memory"]
assert m["max"] == 1 << 20, m
assert 0 < m["peak"] <= m["max"] + 4096, m
assert m["denied"] > 0, m
assert st["limits"]["refused"]["memory"] >= 3, st["limits"]
assert st["tun"]["syn_refused"] >= 3, st["tun"]
EOF
cmsgs=$(grep -c 'limit memory: max_buffer_memory' "$TS_TMP/client.log")
[ "$cmsgs" -ge 1 ] && [ "$cmsgs" -le 3 ] ||
    ts_fail "client memory refusals logged $cmsgs times"
ts_app recv --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --bytes 1m \
    --seed 8 >"$TS_TMP/after2.log" 2>&1 ||
    ts_fail "client: a download after the budget emptied: $(tail -n 1 "$TS_TMP/after2.log")"
for i in $(seq 30); do
	used=$(field "$(cstatus)" 'st["limits"]["buffer_memory"]["used"]')
	[ "$used" = 0 ] && break
	sleep 0.1
done
[ "$used" = 0 ] || ts_fail "client: $used bytes still charged with no flows left"
ts_check_alive
ts_pass "server: budget 1M held (peak $speak, $denied allocations paused), new flows refused, 20 slow downloads intact; client: budget 1M held (peak $(field "$st" 'st["limits"]["buffer_memory"]["peak"]')), new SYNs reset, 10 slow downloads intact; both empty and serving afterwards"
