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
. "$(dirname "$0")/../lib.sh"
ts_init e2e_udp

ts_standard_setup

ts_start_udpecho 7

out=$TS_TMP/apps.log
udp() { ts_udptool "$out" "$@"; }

udp echo --host "$TS_T_ADDR4" --sizes 1,1400,8000,65000,65507 ||
    ts_fail "IPv4 echo: $(tail -n 3 "$out")"
ts_log "IPv4: $(grep -c intact "$out") datagrams echoed intact"
udp echo --host "$TS_T_ADDR6" --sizes 1,1400,8000,65000,65527 --seed 2 ||
    ts_fail "IPv6 echo: $(tail -n 3 "$out")"
ts_log "IPv6: echoes intact: $(grep intact "$out" | tail -n 5 |
    awk '{ printf "%s ", $2 }')"

# Full cone: the mapped address is the tunnel server's.
ts_full_cone "$TS_T_ADDR4" "$TS_S2_ADDR4" "the server's"
ts_log "$TS_CONE"

ts_check_alive
ts_pass "UDP echo intact up to 65507 (IPv4) / 65527 (IPv6) bytes; full cone"
