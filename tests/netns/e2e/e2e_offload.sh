#!/bin/bash
# TUN offloads (IFF_VNET_HDR, TSO, checksum offload) and their fallback:
# the same transfers with offloads on, refused by the kernel, and off.
#
#   tsc$$: app (TCP_MAXSEG) -> ts0 (MTU 1500 | 9000) -> tunsplit client
#       ==TLS==> tss$$: tunsplit server -> tst$$: target (tools.py serve)
#
# Pass 1, offloads on (the default): TUN MTU 1500 and 9000 x app MSS 1460
# and 536 x IPv4 and IPv6 x download and upload, SHA-256 checked, the
# app's announced MSS checked (tests/netns/msslib.sh); `status --json`
# must show offload on, TCP super-packets read and written, and no bad
# virtio-net header; an upload's ACKs to the app are no more than its
# packets (one per flow and pass, not one per record); where the kernel
# has USO, a UDP send of 12032 bytes
# with UDP_SEGMENT 1200 (v4 and v6) is one read the client cuts into the
# 11 datagrams the echo server returns intact.  Super-packets out are cut
# by the kernel at the app's
# MSS: an app announcing 536 gets no segment larger (its kernel would
# count it; the hash and the announced-MSS check would not).
# Pass 2, the kernel refuses (TUNSPLIT_TUN_NO_OFFLOAD in the client's
# environment makes TUNSETOFFLOAD fail): the client says so, falls back to
# plain packets, and MTU 1500 x MSS 1460 and 536 pass the same way with
# no super-packet counted.  Pass 3, `tun.offload: off`: one case, and
# offload off in the status.
. "$(dirname "$0")/../lib.sh"
. "$TS_LIB_DIR/msslib.sh"
ts_init e2e_offload

MSS_BYTES=${TS_MSS_BYTES:-16m}
MSS_OUTBOUND=native

tun_json() {	# tun_json KEY: the client's status tun.KEY
	local st
	st=$(ip netns exec "$NS_C" "$TUNSPLIT" status -s "$TS_TMP/client.sock" \
	    --json) || ts_fail "tunsplit status"
	"$TS_PY" -c 'import json,sys; v = json.load(sys.stdin)["tun"][sys.argv[1]]
print(str(v).lower())' "$1" <<<"$st" || ts_fail "no tun.$1 in: $st"
}

# run_cases MTU...: the cases of pass 1 at each MTU; fails on any failure.
run_cases() {
	local mtu mss fam dir
	MSS_N=$("$TS_PY" -c 'import sys; sys.path.insert(0, sys.argv[1])
import tools; print(tools.parse_size(sys.argv[2]))' "$TS_LIB_DIR" "$MSS_BYTES")
	for mtu in "$@"; do
		mss_client_mtu "$mtu"
		for mss in 1460 536; do
			for fam in 4 6; do
				for dir in down up; do
					mss_case "$mtu" "$mss" "$fam" "$dir"
				done
			done
		done
	done
	[ "${#MSS_FAILS[@]}" = 0 ] ||
	    ts_fail "${#MSS_FAILS[@]} of $MSS_CASES cases failed:$(printf '\n  %s' "${MSS_FAILS[@]}")"
}

restart_client() {
	kill -TERM "$TS_CLIENT_PID" 2>/dev/null
	wait "$TS_CLIENT_PID" 2>/dev/null
	ts_start_client
}

TS_MTU=1500 ts_standard_setup
t0=$(date +%s)

# Pass 1: offloads on.
grep -q "offloads on" "$TS_TMP/client.log" ||
    ts_fail "the client did not turn offloads on: $(grep 'tun ' "$TS_TMP/client.log")"
run_cases 1500
[ "$(tun_json offload)" = true ] || ts_fail "status: offload is not on (MTU 1500)"
rx=$(tun_json rx_gso) tx=$(tun_json tx_gso) bad=$(tun_json rx_vnet_bad)
ts_log "MTU 1500: super-packets in $rx, out $tx, bad headers $bad"
[ "$rx" -gt 0 ] && [ "$tx" -gt 0 ] ||
    ts_fail "MTU 1500: no super-packets (in $rx, out $tx)"
[ "$bad" = 0 ] || ts_fail "MTU 1500: $bad bad virtio-net headers"
run_cases 9000
rx=$(tun_json rx_gso) tx=$(tun_json tx_gso) bad=$(tun_json rx_vnet_bad)
ts_log "MTU 9000: super-packets in $rx, out $tx, bad headers $bad"
[ "$rx" -gt 0 ] && [ "$tx" -gt 0 ] ||
    ts_fail "MTU 9000: no super-packets (in $rx, out $tx)"
[ "$bad" = 0 ] || ts_fail "MTU 9000: $bad bad virtio-net headers"

# One ACK to the app per flow and pass (flow_tcp.c): in an upload the
# packets written back to it, its ACKs, number no more than the packets
# it sent, give or take the handshake and the close.  lwIP's ACK of every
# second segment and a window update for every other 16 KiB record made
# them half as many again.
rx=$(tun_json rx_packets) tx=$(tun_json tx_packets)
mss_case 9000 1460 4 up
[ "${#MSS_FAILS[@]}" = 0 ] || ts_fail "ACK count upload: ${MSS_FAILS[*]}"
rx=$(($(tun_json rx_packets) - rx)) tx=$(($(tun_json tx_packets) - tx))
ts_log "MTU 9000 upload: $rx packets from the app, $tx to it"
[ "$tx" -le $((rx + 8)) ] ||
    ts_fail "MTU 9000 upload: $tx packets to the app for $rx from it"

# UDP super-packets (USO, Linux 6.2+): an app sending with UDP_SEGMENT
# hands the TUN one read, cut into datagrams again by the client.
kv=$(uname -r | awk -F. '{ print $1 * 100 + $2 }')
if [ "$kv" -ge 602 ]; then
	ts_start_udpecho 7
	for host in "$TS_T_ADDR4" "$TS_T_ADDR6"; do
		rx=$(tun_json rx_gso)
		out=$(ip netns exec "$NS_C" timeout 20 "$TS_PY" - "$host" <<'EOF'
import socket, sys
host = sys.argv[1]
s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET,
                  socket.SOCK_DGRAM)
s.setsockopt(17, 103, 1200)            # SOL_UDP, UDP_SEGMENT
s.settimeout(5)
data = bytes((i * 7) & 0xff for i in range(12032))  # 10 x 1200 + 32
s.sendto(data, (host, 7))
got, n = b"", 0
while len(got) < len(data):
    d, _ = s.recvfrom(65535)
    if len(d) > 1200:
        sys.exit("an echo of %d bytes: not cut at 1200" % len(d))
    got += d
    n += 1
if got != data or n != 11:
    sys.exit("%d datagrams, %d bytes, %s" % (n, len(got),
             "equal" if got == data else "different"))
print("11 datagrams echoed, 12032 bytes equal")
EOF
		) || ts_fail "USO to $host: $out"
		[ "$(tun_json rx_gso)" -gt "$rx" ] ||
		    ts_fail "USO to $host: no super-packet read"
		ts_log "USO to $host: $out"
	done
else
	ts_log "no USO on this kernel (before Linux 6.2): UDP case skipped"
fi

# Pass 2: the kernel refuses; the same data passes without.
sed -i "s/^\(tun: {.*mtu: \)[0-9]*/\11500/" "$TS_TMP/client.yaml"
export TUNSPLIT_TUN_NO_OFFLOAD=1
restart_client
unset TUNSPLIT_TUN_NO_OFFLOAD
grep -q "offloads refused by the kernel" "$TS_TMP/client.log" ||
    ts_fail "the client did not report offloads refused"
run_cases 1500
[ "$(tun_json offload)" = false ] || ts_fail "status: offload on after refusal"
[ "$(tun_json rx_gso)" = 0 ] && [ "$(tun_json tx_gso)" = 0 ] ||
    ts_fail "super-packets counted with offloads refused"

# Pass 3: off by configuration.
sed -i "s/^\(tun: {.*mtu: [0-9]*\)/\1, offload: off/" "$TS_TMP/client.yaml"
"$TUNSPLIT" check -c "$TS_TMP/client.yaml" >/dev/null 2>&1 ||
    ts_fail "tunsplit check rejects tun.offload: off"
restart_client
grep -q "offloads off" "$TS_TMP/client.log" ||
    ts_fail "the client did not report offloads off"
mss_case 1500 1460 4 down
mss_case 1500 1460 4 up
[ "${#MSS_FAILS[@]}" = 0 ] || ts_fail "offload off: ${MSS_FAILS[*]}"
[ "$(tun_json offload)" = false ] || ts_fail "status: offload on while off"

ts_check_alive
printf '  %s\n' "${MSS_TIMES[@]}"
ts_pass "$MSS_CASES cases of $MSS_BYTES (offloads on, refused, off), all sha256 match; took $(($(date +%s) - t0)) s"
