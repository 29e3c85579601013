#!/bin/bash
# connect_mode: faithful -- the app's SYN is held until the server has the
# target connected, so connect() itself reports what the target did:
#   - open port: connect succeeds, data intact (v4 and v6), pool or not;
#   - closed port: connect() fails with ECONNREFUSED (an RST on the SYN),
#     not a successful connect followed by a reset as in fast mode;
#   - a host that does not answer: connect() does not succeed (it times out
#     in the app), where fast mode would have completed it at once.
# Same topology as lib.sh.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_faithful

ts_standard_setup "  connect_mode: faithful
  pool: 1"

out=$TS_TMP/app.log
for host in "$TS_T_ADDR4" "$TS_T_ADDR6"; do
	ts_app send --host "$host" --port "$TS_TARGET_PORT" --bytes 4m --seed 3 \
	    --timeout 20 >"$out" 2>&1 || ts_fail "send via $host: $(tail -n 1 "$out")"
	ts_log "$host: $(tail -n 1 "$out")"
	ts_app recv --host "$host" --port "$TS_TARGET_PORT" --bytes 4m --seed 4 \
	    --timeout 20 >"$out" 2>&1 || ts_fail "recv via $host: $(tail -n 1 "$out")"
done

# Closed port: connect() itself must fail with ECONNREFUSED.
ip netns exec "$NS_C" timeout 20 "$TS_PY" - "$TS_T_ADDR4" >"$out" 2>&1 <<'PY'
import socket, sys, time, errno
t0 = time.monotonic()
s = socket.socket()
s.settimeout(5)
try:
    s.connect((sys.argv[1], 9999))
    print("connect succeeded on a closed port")
    sys.exit(1)
except OSError as e:
    dt = time.monotonic() - t0
    print("connect: %s after %.3fs" % (errno.errorcode.get(e.errno, e), dt))
    sys.exit(0 if e.errno == errno.ECONNREFUSED and dt < 2 else 1)
PY
rc=$?
cat "$out"
[ $rc -eq 0 ] || ts_fail "closed port: want ECONNREFUSED from connect() within 2 s"

# max_flows 1, reached by the held flow itself: its SYN, fed to lwIP again
# once the target is connected, is that flow's and must not be refused as
# a new one (it was: an RST, the app's connect refused, the flow left held
# until the idle timeout).  Once no flow is left from the steps above.
sed -i 's/^  max_flows: .*/  max_flows: 1/' "$TS_TMP/client.yaml"
kill -HUP "$TS_CLIENT_PID"
for i in $(seq 50); do
	grep -q "reloaded $TS_TMP/client.yaml" "$TS_TMP/client.log" && break
	sleep 0.1
done
for i in $(seq 50); do
	ip netns exec "$NS_C" "$TUNSPLIT" status --json -s "$TS_TMP/client.sock" \
	    2>/dev/null | grep -q '"flows":{"active":0,' && break
	sleep 0.1
done
ts_app send --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --bytes 64k --seed 5 \
    --timeout 10 >"$out" 2>&1 ||
    ts_fail "max_flows 1: the only flow was refused: $(tail -n 1 "$out")"
ts_log "max_flows 1: $(tail -n 1 "$out")"

# A host that does not answer (no such address on the target's subnet):
# connect() must not complete within 3 s.
ip netns exec "$NS_C" timeout 20 "$TS_PY" - 10.77.2.99 >"$out" 2>&1 <<'PY'
import socket, sys
s = socket.socket()
s.settimeout(3)
try:
    s.connect((sys.argv[1], 80))
    print("connect to a silent host succeeded")
    sys.exit(1)
except socket.timeout:
    print("connect: timed out, as on the direct path")
    sys.exit(0)
except OSError as e:
    print("connect: %s" % e)
    sys.exit(0)
PY
rc=$?
cat "$out"
[ $rc -eq 0 ] || ts_fail "silent host: connect completed"

# max_flows 1 and one flow open: a new SYN is refused with an RST, and
# counted.  Once the silent host's flow has gone.
for i in $(seq 120); do
	ip netns exec "$NS_C" "$TUNSPLIT" status --json -s "$TS_TMP/client.sock" \
	    2>/dev/null | grep -q '"flows":{"active":0,' && break
	sleep 0.1
done
ip netns exec "$NS_C" timeout 10 "$TS_PY" - "$TS_T_ADDR4" "$TS_TARGET_PORT" \
    >"$out" 2>&1 <<'PY'
import socket, sys, errno
dst = (sys.argv[1], int(sys.argv[2]))
first = socket.create_connection(dst, timeout=5)
s = socket.socket()
s.settimeout(2)
try:
    s.connect(dst)
    print("connect succeeded past max_flows")
    sys.exit(1)
except OSError as e:
    print("connect: %s" % errno.errorcode.get(e.errno, e))
    sys.exit(0 if e.errno == errno.ECONNREFUSED else 1)
PY
rc=$?
cat "$out"
[ $rc -eq 0 ] || ts_fail "max_flows 1, one flow open: want ECONNREFUSED"
n=$(ip netns exec "$NS_C" "$TUNSPLIT" status --json -s "$TS_TMP/client.sock" |
    "$TS_PY" -c 'import json,sys; print(json.load(sys.stdin)["tun"]["syn_refused"])') ||
    ts_fail "no tun.syn_refused in the client status"
[ "$n" -ge 1 ] || ts_fail "the refused SYN was not counted (syn_refused $n)"
ts_check_alive
ts_pass "faithful connect: data intact, refused -> ECONNREFUSED, silent host -> no connect, max_flows held"
