#!/bin/bash
# UDP with client.protocol direct, then block (issue 7).
#
#   tsc$$ (client)                          tss$$ ("the internet")
#   app -> ts0 -> tunsplit (direct)          UDP echo on 10.77.2.1 and
#          marked 0x7353 sockets --eth0-->   fd77:2::1, ports 7, 8 and 53
#   main table:  10.77.2.0/24, fd77:2::/64 dev ts0  (the apps' way)
#   fwmark 0x7353 -> table 7353: the same nets via eth0 (the client's way)
#
# The echo targets are the server namespace's own eth1 addresses, so
# nothing needs forwarding; tst$$ is not used.
#  1. direct: one app socket talks to two ports (IPv4: 1 to 65000 bytes,
#     IPv6: 1 to 8000), every echo byte for byte from its own source: one
#     association, one marked socket, full cone.  That the echoes come back
#     at all shows the marked sockets bypass the TUN (without the mark they
#     would loop into it).
#  2. full cone: a peer that was never contacted sends to the mapped
#     address (the client's eth0 address and the direct socket's port) and
#     the app receives it.
#  3. DNS pinning (dns: 10.77.2.1:53): a query to 10.77.2.99:53 is answered
#     by the pinned resolver and seen by the app as from 10.77.2.99:53.
#  4. ICMP echo: ping (IPv4 and IPv6) is answered through a ping socket of
#     the client's (net.ipv4.ping_group_range opened for it); with the
#     range closed, echo requests are dropped with one log line.
#  5. block: a connected app socket gets EHOSTUNREACH (IPv4) / EACCES
#     (IPv6) from the ICMP "administratively prohibited" the client answers
#     with, at once; the client's counters show the blocked datagrams.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_udp_direct

UDPTOOL=$TS_LIB_DIR/udptool.py
MARK=0x7353

ts_topology_up
ip -n "$NS_C" rule add fwmark $MARK lookup 7353 ||
    ts_fail "ip rule fwmark"
ip -n "$NS_C" -6 rule add fwmark $MARK lookup 7353 ||
    ts_fail "ip -6 rule fwmark"
ip -n "$NS_C" route add "$TS_T_NET4" via "$TS_S_ADDR4" table 7353
ip -n "$NS_C" -6 route add "$TS_T_NET6" via "$TS_S_ADDR6" table 7353

for port in 7 8 53; do
	ts_bg "$NS_S" "udpecho$port" "$TS_PY" -u "$UDPTOOL" serve \
	    --bind "$TS_S2_ADDR4" --bind "$TS_S2_ADDR6" --port "$port"
done
for i in $(seq 50); do
	[ "$(ip netns exec "$NS_S" ss -Hlun | wc -l)" -ge 6 ] && break
	sleep 0.1
done

# write_client PROTOCOL: a client config without a server.
write_client() {
	cat >"$TS_TMP/client.yaml" <<EOF
log: {level: info, flows: true}
control: $TS_TMP/client.sock
tun: {name: $TS_TUN, mtu: 9000, address: [198.18.0.1/15, "fdfe:dcba:9876::1/64"]}
client:
  protocol: $1
  mark: $MARK
  dns: "$TS_S2_ADDR4:53"
  udp_timeout: 30s
EOF
	"$TUNSPLIT" check -c "$TS_TMP/client.yaml" >"$TS_TMP/check.log" 2>&1 ||
	    ts_fail "tunsplit check rejects protocol $1: $(cat "$TS_TMP/check.log")"
}

out=$TS_TMP/apps.log
udp() { ts_udptool "$out" "$@"; }

# ---- direct ------------------------------------------------------------------
# The client (root, group 0) may open ping sockets.
ts_sysctl "$NS_C" net/ipv4/ping_group_range "0 2147483647"
write_client direct
ts_start_client

udp fan --to "$TS_S2_ADDR4:7" --to "$TS_S2_ADDR4:8" \
    --sizes 1,1400,8000,65000 ||
    ts_fail "direct IPv4: $(tail -n 3 "$out")"
ts_log "direct IPv4: $(tail -n 1 "$out")"
udp fan --to "[$TS_S2_ADDR6]:7" --to "[$TS_S2_ADDR6]:8" --sizes 1,1400,8000 \
    --seed 2 || ts_fail "direct IPv6: $(tail -n 3 "$out")"
ts_log "direct IPv6: $(tail -n 1 "$out")"

ts_full_cone "$TS_S2_ADDR4" "$TS_C_ADDR4" "the client's own"
ts_log "direct: $TS_CONE"

udp echo --host 10.77.2.99 --port 53 --sizes 12,512 ||
    ts_fail "DNS pinning: $(tail -n 3 "$out")"
ts_log "direct: DNS to 10.77.2.99:53 answered via the pinned resolver, seen from 10.77.2.99:53"

if command -v ping >/dev/null 2>&1; then
	ip netns exec "$NS_C" ping -c 3 -i 0.2 -W 2 "$TS_S2_ADDR4" \
	    >>"$TS_TMP/ping.log" 2>&1 ||
	    ts_fail "direct: ping $TS_S2_ADDR4: $(tail -n 3 "$TS_TMP/ping.log")"
	ip netns exec "$NS_C" ping -6 -c 3 -i 0.2 -W 2 "$TS_S2_ADDR6" \
	    >>"$TS_TMP/ping.log" 2>&1 ||
	    ts_fail "direct: ping $TS_S2_ADDR6: $(tail -n 3 "$TS_TMP/ping.log")"
	ts_log "direct: ping v4 and v6 answered: $(grep -c 'bytes from' "$TS_TMP/ping.log") replies"
	ts_sysctl "$NS_C" net/ipv4/ping_group_range "1 0"
	if ip netns exec "$NS_C" ping -c 2 -i 0.2 -W 1 "$TS_S2_ADDR4" \
	    >>"$TS_TMP/ping.log" 2>&1; then
		ts_fail "direct: ping answered without a ping socket"
	fi
	grep -q "icmp: no ping socket" "$TS_TMP/client.log" ||
	    ts_fail "direct: no log line for the dropped echo"
	ts_log "direct: without ping sockets, echo dropped with one log line"
fi
ts_alive "$TS_CLIENT_PID" || ts_fail "the client died"
kill -TERM "$TS_CLIENT_PID"
wait "$TS_CLIENT_PID" 2>/dev/null
# No association ever had the client's own address as its app: nothing
# came back in through the TUN.
if grep -E "(udp|icmp) [0-9]+ $TS_C_ADDR4:" "$TS_TMP/client.log"; then
	ts_fail "direct: a datagram looped back into the TUN"
fi
grep -qE "icmp [0-9]+ 198.18.0.1:[0-9]+: .*up 3 dgrams.*down 3 dgrams" \
    "$TS_TMP/client.log" ||
    ts_fail "direct: the client's log shows no ICMP session with 3 echoes each way"

# ---- block -------------------------------------------------------------------
mv "$TS_TMP/client.log" "$TS_TMP/client-direct.log"
write_client block
ts_start_client
udp refused --to "$TS_S2_ADDR4:7" --errno EHOSTUNREACH ||
    ts_fail "block IPv4: $(tail -n 2 "$out")"
ts_log "block IPv4: $(tail -n 1 "$out")"
udp refused --to "[$TS_S2_ADDR6]:7" --errno EACCES ||
    ts_fail "block IPv6: $(tail -n 2 "$out")"
ts_log "block IPv6: $(tail -n 1 "$out")"
ts_alive "$TS_CLIENT_PID" || ts_fail "the client died"
kill -TERM "$TS_CLIENT_PID"
wait "$TS_CLIENT_PID" 2>/dev/null
# One exit line per worker process: their sum.
n=$(sed -n 's/.*udp: [0-9]* associations.* \([0-9][0-9]*\) blocked .*/\1/p' \
    "$TS_TMP/client.log" | awk '{ n += $1 } END { print n + 0 }')
[ "$n" -eq 2 ] ||
    ts_fail "block: the client counts $n blocked datagrams, not 2: $(grep 'udp: ' "$TS_TMP/client.log")"
ts_pass "direct: full cone over one marked socket, v4 and v6, DNS pinned, ping through ping sockets; block: apps told at once (ICMP admin prohibited), counted"
