#!/bin/bash
# UDP through the tunnel (topology in lib.sh; the UDP echo server runs on
# the target, port 7):
#  1. echo of 1, 1400, 8000 and 65000 bytes (and the largest datagrams,
#     65507 over IPv4 and 65527 over IPv6), IPv4 and IPv6, byte for byte;
#     the app's TUN has MTU 9000, so the big ones arrive fragmented and are
#     reassembled by the client, and the replies are fragmented by it;
#  2. full cone: after the app has talked to the echo server, a second peer
#     in the server namespace sends to the mapped address (the tunnel
#     server's socket) and the app receives that datagram.
. "$(dirname "$0")/lib.sh"
ts_init e2e_udp

UDPTOOL=$TS_LIB_DIR/udptool.py
ts_standard_setup

ts_bg "$NS_T" udpecho "$TS_PY" -u "$UDPTOOL" serve --bind "$TS_T_ADDR4" \
    --bind "$TS_T_ADDR6" --port 7
for i in $(seq 50); do
	ip netns exec "$NS_T" ss -Hlun 'sport = :7' | grep -q . && break
	sleep 0.1
done

out=$TS_TMP/apps.log
udp() {
	ip netns exec "$NS_C" timeout 120 "$TS_PY" -u "$UDPTOOL" "$@" \
	    >>"$out" 2>&1
}

udp echo --host "$TS_T_ADDR4" --sizes 1,1400,8000,65000,65507 ||
    ts_fail "IPv4 echo: $(tail -n 3 "$out")"
ts_log "IPv4: $(grep -c intact "$out") datagrams echoed intact"
udp echo --host "$TS_T_ADDR6" --sizes 1,1400,8000,65000,65527 --seed 2 ||
    ts_fail "IPv6 echo: $(tail -n 3 "$out")"
ts_log "IPv6: echoes intact: $(grep intact "$out" | tail -n 5 |
    awk '{ printf "%s ", $2 }')"

# Full cone.
rm -f "$TS_TMP/mapped"
ip netns exec "$NS_C" timeout 60 "$TS_PY" -u "$UDPTOOL" cone \
    --host "$TS_T_ADDR4" --out "$TS_TMP/mapped" --wait 20 \
    >>"$TS_TMP/cone.log" 2>&1 &
cone=$!
for i in $(seq 100); do
	[ -s "$TS_TMP/mapped" ] && break
	sleep 0.1
done
[ -s "$TS_TMP/mapped" ] || ts_fail "cone: no mapped address"
read -r maddr mport <"$TS_TMP/mapped"
[ "$maddr" = "$TS_S2_ADDR4" ] ||
    ts_fail "mapped address $maddr, expected the server's $TS_S2_ADDR4"
ip netns exec "$NS_S" "$TS_PY" -u "$UDPTOOL" send --to "$maddr:$mport" \
    >>"$TS_TMP/cone.log" 2>&1
wait "$cone" || ts_fail "full cone: $(tail -n 3 "$TS_TMP/cone.log")"
ts_log "$(grep unsolicited "$TS_TMP/cone.log")"

ts_check_alive
ts_pass "UDP echo intact up to 65507 (IPv4) / 65527 (IPv6) bytes; full cone"
