#!/bin/bash
# Malformed UDP/IPv4/IPv6 packets written into the TUN (through an
# AF_PACKET socket, past the kernel's own checks) are counted and dropped
# by the client, and a UDP flow running at the same time is not disturbed:
# every one of its echoes comes back intact.  Topology in lib.sh.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_udp_malformed

UDPTOOL=$TS_LIB_DIR/udptool.py
ROUNDS=50
ts_standard_setup
ts_start_udpecho 7
udp() { ip netns exec "$NS_C" timeout 120 "$TS_PY" -u "$UDPTOOL" "$@"; }

udp stream --host "$TS_T_ADDR6" --count 100 --seconds 6 \
    >"$TS_TMP/stream6.log" 2>&1 &
s6=$!
udp stream --host "$TS_T_ADDR4" --count 100 --seconds 6 \
    >"$TS_TMP/stream4.log" 2>&1 &
s4=$!
sleep 1
# To the target and its port, from the app's addresses: as close to the
# real flow as a bad packet can get.
udp inject --dev "$TS_TUN" --src4 198.18.0.1 --dst4 "$TS_T_ADDR4" \
    --src6 fdfe:dcba:9876::1 --dst6 "$TS_T_ADDR6" --rounds "$ROUNDS" \
    >"$TS_TMP/inject.log" 2>&1 || ts_fail "inject: $(cat "$TS_TMP/inject.log")"
ts_log "$(cat "$TS_TMP/inject.log")"
wait "$s4" || ts_fail "IPv4 flow disturbed: $(tail -n 2 "$TS_TMP/stream4.log")"
wait "$s6" || ts_fail "IPv6 flow disturbed: $(tail -n 2 "$TS_TMP/stream6.log")"
ts_log "during the injection: $(tail -n 1 "$TS_TMP/stream4.log") (IPv4)," \
    "$(tail -n 1 "$TS_TMP/stream6.log") (IPv6)"

# The counters, as the client logs them when it stops.
ts_check_alive
kill -TERM "$TS_CLIENT_PID"
wait "$TS_CLIENT_PID"
# One line per worker process: their sums.
line=$(grep "udp: packets in:" "$TS_TMP/client.log")
[ -n "$line" ] || ts_fail "no counters in the client log"
mal=$(ts_log_sum 's/.*udp: packets in: \([0-9]*\) malformed.*/\1/p' "$TS_TMP/client.log")
bad=$(ts_log_sum 's/.*udp: packets in: .*, \([0-9]*\) bad checksum.*/\1/p' "$TS_TMP/client.log")
inv=$(ts_log_sum 's/.*udp: packets in: .*, \([0-9]*\) invalid.*/\1/p' "$TS_TMP/client.log")
[ "$mal" -eq $((7 * ROUNDS)) ] && [ "$bad" -eq $((4 * ROUNDS)) ] &&
    [ "$inv" -eq $((1 * ROUNDS)) ] ||
    ts_fail "counters: $line (expected $((7 * ROUNDS)) malformed," \
    "$((4 * ROUNDS)) bad checksum, $ROUNDS invalid fragments)"
ts_log "client counted: $mal malformed, $bad bad checksum, $inv invalid fragments"
ts_alive "$TS_SERVER_PID" || ts_fail "the server died"
ts_pass "$((12 * ROUNDS)) bad packets counted and dropped; concurrent flows intact"
