#!/bin/bash
# A multi-queue TUN steered by tun_steer()'s eBPF program: the client's
# worker processes each read one queue, and worker 0 alone must see DNS,
# ICMP and fragments.  ts_tunq opens the device (tun_open_queues) and logs
# which queue read each packet; apps in its namespace send through it:
#
#   tsq$$                                           tsp$$
#  +--------------------------------------+        +----------------+
#  | apps (python: UDP, TCP SYNs, frags,  |  veth  | 10.79.0.2/24   |
#  |   ICMP) -> 10.79.0.2 / fd79::2       |--------| fd79::2/64     |
#  | routes 10.79.0.2/32, fd79::2/128     | vq  vp | (never reached:|
#  |   dev tsq0 (ts_tunq, 2 or 4 queues)  |        |  the TUN eats  |
#  | tsq0 10.79.1.1/24 fd79:1::1/64       |        |  it all)       |
#  +--------------------------------------+        +----------------+
#
# Per family: UDP and TCP (SYN) to port 53 from 32 + 8 source ports; UDP
# and TCP to port 9000 from 64 source ports each; two 4000-byte UDP
# datagrams with DF off (3 fragments each); an ICMP echo; for IPv6 also a
# UDP datagram with a hop-by-hop header.  Asserted on what each queue read:
# every packet came on the queue tun_steer_queue() (the C twin of the
# program) names -- so the kernel runs our program, and our program does
# what the C says; every port-53 packet, fragment and non-TCP/UDP packet
# on queue 0; every 5-tuple on one queue; each set of 64 flows reached
# every queue (with 2 queues, at least 8 each).  Runs: 2 queues; 4 queues
# with offloads (IFF_VNET_HDR: each read starts with the 10-byte header,
# and every queue fd must report it); TUNSPLIT_TUN_NO_STEER making
# tun_steer() fail with its message; a name already taken by a
# single-queue TUN refused.  No device may outlive its ts_tunq.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_tun_steer

TUNQ=${TS_TUNQ:-$(dirname "$TUNSPLIT")/tests/tools/ts_tunq}
[ -x "$TUNQ" ] || ts_fail "ts_tunq not built ($TUNQ)"
T4=10.79.0.2 T6=fd79::2
NS_Q=tsq$$ NS_P=tsp$$
ts_ns_add "$NS_Q"
ts_ns_add "$NS_P"
ip -n "$NS_Q" link add vq type veth peer name vp netns "$NS_P" ||
    ts_fail "veth"
ip -n "$NS_Q" addr add 10.79.0.1/24 dev vq
ip -n "$NS_Q" addr add fd79::1/64 dev vq nodad
ip -n "$NS_P" addr add "$T4/24" dev vp
ip -n "$NS_P" addr add "$T6/64" dev vp nodad
ip -n "$NS_Q" link set vq up
ip -n "$NS_P" link set vp up

# The apps: every socket stays open to the end, so source ports differ.
traffic() {
	ip netns exec "$NS_Q" timeout 30 "$TS_PY" - "$T4" "$T6" <<'EOF'
import socket, sys, time
t4, t6 = sys.argv[1], sys.argv[2]
keep = []
def udp(fam, dst, port, n, data=b"x", opt=None):
    for _ in range(n):
        s = socket.socket(fam, socket.SOCK_DGRAM)
        if opt:
            s.setsockopt(*opt)
        s.sendto(data, (dst, port))
        keep.append(s)
def syn(fam, dst, port, n):
    for _ in range(n):
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect((dst, port))
        except BlockingIOError:
            pass
        keep.append(s)
for fam, dst, ping, proto in ((socket.AF_INET, t4, b"\x08\x00\xf7\xff" + bytes(4), socket.IPPROTO_ICMP),
                             (socket.AF_INET6, t6, b"\x80\x00" + bytes(6), socket.IPPROTO_ICMPV6)):
    udp(fam, dst, 53, 32)
    syn(fam, dst, 53, 8)
    udp(fam, dst, 9000, 64)
    syn(fam, dst, 9000, 64)
    # DF off (IP_MTU_DISCOVER 10 / IPV6_MTU_DISCOVER 23 = DONT): 3 pieces.
    lvl, opt = (socket.IPPROTO_IP, 10) if fam == socket.AF_INET else (socket.IPPROTO_IPV6, 23)
    udp(fam, dst, 9001, 2, b"f" * 4000, (lvl, opt, 0))
    socket.socket(fam, socket.SOCK_RAW, proto).sendto(ping, (dst, 0))
# Hop-by-hop header (IPV6_HOPOPTS 54), one PadN option: next header 0.
udp(socket.AF_INET6, t6, 9002, 1, b"h", (socket.IPPROTO_IPV6, 54, bytes([0, 0, 1, 4, 0, 0, 0, 0])))
time.sleep(0.3)
EOF
}

# What each queue read, against the rules; mode=wait prints 1 once every
# expected packet is there, mode=check prints the verdict.
cat >"$TS_TMP/steer.awk" <<'EOF'
function fail(m) { if (nbad++ < 10 && mode == "check") print "FAIL " m }
{
	q = $1; m = $2; fam = $3; pr = $4; sp = $6; dst = $7; dp = $8; fr = $9
	if (q != m) fail("read on queue " q ", the program's twin says " m ": " $0)
	ours = dst == t4 || dst == t6
	if (fr) {
		if (q != 0) fail("fragment on queue " q ": " $0)
		if (ours) frag[fam]++
		next
	}
	if (pr != 6 && pr != 17) {
		if (q != 0) fail("not TCP/UDP on queue " q ": " $0)
		if (ours) other[fam " " pr]++
		next
	}
	key = fam " " pr " " $5 " " sp " " dst " " dp
	if (dp == 53) {
		if (q != 0) fail("port 53 on queue " q ": " $0)
		if (ours) dns[fam]++
		next
	}
	if ((key in fq) && fq[key] != q)
		fail("one flow on queues " fq[key] " and " q ": " key)
	fq[key] = q
}
END {
	for (k in fq) {
		split(k, f, " ")
		if (f[6] != 9000)
			continue
		set = f[1] " " f[2]
		flows[set]++
		per[set, fq[k]]++
	}
	# dns[] counts packets (SYNs may be sent again): >= the sockets.
	ready = dns["v4"] >= 40 && dns["v6"] >= 40 && \
	    frag["v4"] >= 6 && frag["v6"] >= 6 && \
	    other["v4 1"] >= 1 && other["v6 58"] >= 1 && other["v6 0"] >= 1
	split("v4 6,v4 17,v6 6,v6 17", sets, ",")
	for (i = 1; i <= 4; i++)
		if (flows[sets[i]] < 64)
			ready = 0
	if (mode == "wait") {
		print ready ? 1 : 0
		exit
	}
	if (!ready)
		fail("missing packets: dns " dns["v4"] "/" dns["v6"] " frags " \
		    frag["v4"] "/" frag["v6"] " icmp " other["v4 1"] "/" \
		    other["v6 58"] " hbh " other["v6 0"] " flows " \
		    flows["v4 6"] "/" flows["v4 17"] "/" flows["v6 6"] "/" \
		    flows["v6 17"])
	min = nq == 2 ? 8 : 1
	for (i = 1; i <= 4; i++) {
		line = sets[i] ":"
		for (j = 0; j < nq; j++) {
			line = line " " per[sets[i], j] + 0
			if (per[sets[i], j] < min)
				fail(sets[i] ": queue " j " got " \
				    per[sets[i], j] + 0 " of 64 flows")
		}
		spread = spread " [" line "]"
	}
	if (nbad == 0)
		print "ok " NR " packets; flows per queue" spread
}
EOF
steer_check() {
	awk -v mode="$1" -v nq="$2" -v t4="$T4" -v t6="$T6" \
	    -f "$TS_TMP/steer.awk" "$3"
}

# One run: ts_tunq with $1 queues (and its options), the apps, the check.
run() {
	local nq=$1 name=$2 out ready pid i verdict
	shift 2
	out=$TS_TMP/$name.out ready=$TS_TMP/$name.ready
	ip netns exec "$NS_Q" "$TUNQ" -q "$nq" -a 10.79.1.1/24 \
	    -A fd79:1::1/64 -r "$T4" -R "$T6" -o "$out" -w "$ready" "$@" \
	    >"$TS_TMP/$name.log" 2>&1 &
	pid=$!
	TS_PIDS+=("$pid")
	for i in $(seq 100); do
		[ -e "$ready" ] && break
		ts_alive "$pid" || ts_fail "$name: ts_tunq: $(cat "$TS_TMP/$name.log")"
		sleep 0.1
	done
	[ -e "$ready" ] || ts_fail "$name: ts_tunq not ready"
	traffic >"$TS_TMP/$name.apps.log" 2>&1 ||
	    ts_fail "$name: apps: $(tail -n 3 "$TS_TMP/$name.apps.log")"
	# Every packet is in a queue once the sends return; under load the
	# reader may still be behind.
	for i in $(seq 100); do
		[ "$(steer_check wait "$nq" "$out")" = 1 ] && break
		sleep 0.1
	done
	kill -TERM "$pid"
	wait "$pid" || ts_fail "$name: ts_tunq exited $?"
	verdict=$(steer_check check "$nq" "$out")
	case $verdict in
	ok*)	ts_log "$name: $verdict" ;;
	*)	ts_fail "$name: $verdict" ;;
	esac
	ip -n "$NS_Q" link show tsq0 >/dev/null 2>&1 &&
	    ts_fail "$name: tsq0 outlived ts_tunq"
	return 0
}

run 2 q2
run 4 q4_offload -O
grep -c "multi_queue 1 vnet_hdr 1 vnet_hdr_sz 10" "$TS_TMP/q4_offload.log" |
    grep -qx 4 || ts_fail "q4_offload: not every queue has the header:" \
    "$(cat "$TS_TMP/q4_offload.log")"
grep -q "4 queues, offload 1" "$TS_TMP/q4_offload.log" ||
    ts_fail "q4_offload: offloads refused: $(cat "$TS_TMP/q4_offload.log")"

# The fallback's trigger: tun_steer() refuses, saying why; no device left.
rc=0
ip netns exec "$NS_Q" env TUNSPLIT_TUN_NO_STEER=1 "$TUNQ" -q 2 \
    -o "$TS_TMP/nosteer.out" >"$TS_TMP/nosteer.log" 2>&1 || rc=$?
[ "$rc" = 3 ] && grep -q "refused for the test (TUNSPLIT_TUN_NO_STEER" \
    "$TS_TMP/nosteer.log" ||
    ts_fail "no steer: exit $rc: $(cat "$TS_TMP/nosteer.log")"
ip -n "$NS_Q" link show tsq0 >/dev/null 2>&1 &&
    ts_fail "no steer: tsq0 outlived ts_tunq"

# A name a single-queue TUN holds: refused, and that TUN untouched.
ip -n "$NS_Q" tuntap add dev tsqs mode tun || ts_fail "tuntap add"
rc=0
ip netns exec "$NS_Q" "$TUNQ" -q 2 -i tsqs -o "$TS_TMP/taken.out" \
    >"$TS_TMP/taken.log" 2>&1 || rc=$?
[ "$rc" = 1 ] && grep -q "exists already" "$TS_TMP/taken.log" ||
    ts_fail "taken name: exit $rc: $(cat "$TS_TMP/taken.log")"
ip -n "$NS_Q" link show tsqs >/dev/null 2>&1 || ts_fail "taken name: tsqs gone"
ip -n "$NS_Q" -d link show tsqs | grep -q "multi_queue" &&
    ts_fail "taken name: tsqs changed"

ts_pass "2 and 4 queues (offloads on) steered as the program's C twin" \
    "says; DNS, fragments, ICMP, extension headers on queue 0; the" \
    "no-steer knob and a taken name refused"
