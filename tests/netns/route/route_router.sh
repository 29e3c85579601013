#!/bin/sh
# tunsplit-route in router mode: a LAN client behind a router whose
# tunsplit-route rules send forwarded traffic into the TUN.
#
#   rtl$$ (LAN client)        rtr$$ (router)                rtw$$ (upstream)
#   eth0 192.168.88.2/24 ---- lan0 192.168.88.1/24
#        fd88::2/64                fd88::1/64
#   default via .1 / fd88::1       wan0 10.77.8.1/24 ---------- eth0 10.77.8.2/24
#                                       fd77:8::1/64                 fd77:8::2/64
#                                  default via 10.77.8.2        lo: 10.77.9.2 target
#                                  ts0: TUN read by this test       10.77.9.3 "server"
#                                  ip_forward=1                     fd77:9::2 target
#
# UDP datagrams with unique payloads show where traffic goes: a listener in
# rtw$$ sees what leaves by the main table, the TUN reader in rtr$$ sees
# what enters the tunnel.  Every address belongs to these namespaces.
#
# Checked: without the rules LAN traffic reaches upstream (so the path to
# leak through is real); after up, IPv4 and IPv6 LAN traffic enters ts0
# and none reaches upstream; the router's own unmarked traffic enters ts0,
# its marked traffic (the daemon's sockets) and traffic to the --server
# address go upstream; LAN-to-router traffic stays local; when the TUN's
# owner exits, LAN traffic is dropped (fail-closed); after down, LAN
# traffic goes upstream again and the routing is as before.
set -u

name=route_router
srcdir=${TS_SRCDIR:-$(cd "$(dirname "$0")/../../.." && pwd)}
script=$srcdir/src/route/tunsplit-route
PY=${PYTHON:-python3}

skip() { printf 'SKIP: %s: %s\n' "$name" "$*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces, TUN)"
[ -c /dev/net/tun ] || skip "no /dev/net/tun"
for t in ip "$PY"; do
	command -v "$t" >/dev/null 2>&1 || skip "missing tool: $t"
done
[ -r "$script" ] || { echo "FAIL: $name: $script missing"; exit 1; }
SH="sh"
command -v dash >/dev/null 2>&1 && SH=dash

L=rtl$$ R=rtr$$ W=rtw$$
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tunsplit-$name.XXXXXX")
failed=0
pids=
# shellcheck disable=SC2317 # called by the trap
cleanup() {
	rc=$?
	trap - EXIT INT TERM HUP
	for p in $pids; do kill "$p" 2>/dev/null; done
	for n in $L $R $W; do ip netns del "$n" 2>/dev/null; done
	wait 2>/dev/null
	if [ "$failed" = 1 ] || [ -n "${TS_KEEP:-}" ]; then
		printf '%s: files kept in %s\n' "$name" "$tmp"
	else
		rm -rf "$tmp"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'failed=1; exit 1' INT TERM HUP

fail() {
	failed=1
	printf 'FAIL: %s: %s\n' "$name" "$*"
	for f in "$tmp"/*.log "$tmp"/out; do
		[ -f "$f" ] || continue
		printf -- '--- %s\n' "$f"
		tail -n 30 "$f"
	done
	exit 1
}
log() { printf '%s: %s\n' "$name" "$*"; }

cat >"$tmp/rt.py" <<'EOF'
# Helpers for route_router.sh: a TUN reader, a UDP listener, a UDP sender.
import fcntl, os, select, socket, struct, sys, time

def out(path, line):
    with open(path, "a") as f:
        f.write(line + "\n")

def tunread(dev, path, secs):
    fd = os.open("/dev/net/tun", os.O_RDWR)
    # struct ifreq: name, flags = IFF_TUN | IFF_NO_PI; TUNSETIFF
    fcntl.ioctl(fd, 0x400454ca, struct.pack("16sH", dev.encode(), 0x1001))
    out(path, "ready")
    end = time.time() + secs
    while time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.5)
        if not r:
            continue
        p = os.read(fd, 65536)
        if p[0] >> 4 == 4 and p[9] == 17:
            hl = (p[0] & 15) * 4
            src, dst = socket.inet_ntop(socket.AF_INET, p[12:16]), \
                socket.inet_ntop(socket.AF_INET, p[16:20])
            udp = p[hl:]
        elif p[0] >> 4 == 6 and p[6] == 17:
            src, dst = socket.inet_ntop(socket.AF_INET6, p[8:24]), \
                socket.inet_ntop(socket.AF_INET6, p[24:40])
            udp = p[40:]
        else:
            continue
        out(path, "%s %s %d %s" % (src, dst, struct.unpack("!H", udp[2:4])[0],
                                   udp[8:].decode(errors="replace")))

def udprecv(port, path, secs):
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.bind(("::", int(port)))
    out(path, "ready")
    s.settimeout(0.5)
    end = time.time() + secs
    while time.time() < end:
        try:
            d, a = s.recvfrom(65536)
        except socket.timeout:
            continue
        out(path, "%s %s" % (a[0], d.decode(errors="replace")))

def udpsend(addr, port, payload, mark="0"):
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM)
    if int(mark, 0):
        s.setsockopt(socket.SOL_SOCKET, 36, int(mark, 0))	# SO_MARK
    try:
        s.sendto(payload.encode(), (addr, int(port)))
    except OSError as e:
        print("sendto: %s" % e.strerror)

cmd = sys.argv[1]
if cmd == "tunread":
    tunread(sys.argv[2], sys.argv[3], float(sys.argv[4]))
elif cmd == "udprecv":
    udprecv(sys.argv[2], sys.argv[3], float(sys.argv[4]))
else:
    udpsend(*sys.argv[2:])
EOF

bg() {	# bg NS ARGS...: run rt.py in NS in the background, bounded in time
	ns=$1
	shift
	ip netns exec "$ns" "$PY" "$tmp/rt.py" "$@" >>"$tmp/py.log" 2>&1 &
	pids="$pids $!"
	last=$!
}
wait_for() {	# wait_for FILE PATTERN: up to 5 s
	i=0
	while [ $i -lt 50 ]; do
		grep -q -e "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}
send() {	# send NS ADDR PAYLOAD [MARK]
	ip netns exec "$1" "$PY" "$tmp/rt.py" udpsend "$2" 9999 "$3" "${4:-0}" \
	    >>"$tmp/py.log" 2>&1
}
arrives() {	# arrives FILE PAYLOAD WHAT
	wait_for "$1" " $2\$" || fail "$3: '$2' did not arrive in $(basename "$1")"
}
absent() {	# absent FILE PAYLOAD WHAT (after the time a datagram needs)
	sleep 0.5
	if grep -q -e " $2\$" "$1" 2>/dev/null; then
		fail "$3: '$2' arrived in $(basename "$1")"
	fi
}
route() {
	ip netns exec "$R" $SH "$script" "$@" --dev ts0 --state-dir "$tmp/state" \
	    >"$tmp/out" 2>&1
}
snap() {	# without the TUN's own kernel routes: a new TUN has a new
	# link-local address, and they are listed in the order of creation
	{
		ip -n "$R" -4 rule show
		ip -n "$R" -6 rule show
		ip -n "$R" -4 route show table all
		ip -n "$R" -6 route show table all
	} 2>&1 | grep -v 'dev ts0 .*proto kernel' >"$1"
}

# ---- topology ----------------------------------------------------------------
for n in $L $R $W; do
	ip netns add "$n" || fail "ip netns add $n"
	ip -n "$n" link set lo up
	ip netns exec "$n" sysctl -qw net.ipv6.conf.all.accept_dad=0 \
	    net.ipv6.conf.default.accept_dad=0 >/dev/null
done
ip -n "$L" link add eth0 type veth peer name lan0 netns "$R" || fail "veth lan"
ip -n "$W" link add eth0 type veth peer name wan0 netns "$R" || fail "veth wan"
ip -n "$L" addr add 192.168.88.2/24 dev eth0
ip -n "$L" addr add fd88::2/64 dev eth0 nodad
ip -n "$R" addr add 192.168.88.1/24 dev lan0
ip -n "$R" addr add fd88::1/64 dev lan0 nodad
ip -n "$R" addr add 10.77.8.1/24 dev wan0
ip -n "$R" addr add fd77:8::1/64 dev wan0 nodad
ip -n "$W" addr add 10.77.8.2/24 dev eth0
ip -n "$W" addr add fd77:8::2/64 dev eth0 nodad
ip -n "$W" addr add 10.77.9.2/32 dev lo
ip -n "$W" addr add 10.77.9.3/32 dev lo
ip -n "$W" addr add fd77:9::2/128 dev lo
for l in "$L eth0" "$R lan0" "$R wan0" "$W eth0"; do
	# shellcheck disable=SC2086
	set -- $l
	ip -n "$1" link set "$2" up
done
ip -n "$L" route add default via 192.168.88.1
ip -n "$L" -6 route add default via fd88::1
ip -n "$R" route add default via 10.77.8.2
ip -n "$R" -6 route add default via fd77:8::2
ip -n "$W" route add default via 10.77.8.1
ip -n "$W" -6 route add default via fd77:8::1
ip netns exec "$R" sysctl -qw net.ipv4.ip_forward=1 \
    net.ipv6.conf.all.forwarding=1 >/dev/null || fail "forwarding"

up_recv="$tmp/upstream"
tun_recv="$tmp/tun"
lan_router="$tmp/router"
bg "$W" udprecv 9999 "$up_recv" 120
bg "$R" udprecv 9999 "$lan_router" 120
wait_for "$up_recv" ready || fail "UDP listener upstream did not start"
wait_for "$lan_router" ready || fail "UDP listener in the router did not start"

# The "daemon": owns ts0 while it runs.
start_tun() {
	rm -f "$tun_recv"
	bg "$R" tunread ts0 "$tun_recv" 120
	tun_pid=$last
	wait_for "$tun_recv" ready || fail "TUN reader did not start"
	ip -n "$R" link set ts0 up || fail "ts0 up"
}
start_tun
snap "$tmp/s0"

# ---- without the rules: the leak path is real -------------------------------
send "$L" 10.77.9.2 before4
send "$L" fd77:9::2 before6
arrives "$up_recv" before4 "no rules, IPv4"
arrives "$up_recv" before6 "no rules, IPv6"
log "without the rules, LAN traffic goes upstream"

# ---- up --------------------------------------------------------------------
route up --server 10.77.9.3 || fail "up: $(cat "$tmp/out")"
send "$L" 10.77.9.2 lan4
send "$L" fd77:9::2 lan6
arrives "$tun_recv" lan4 "LAN IPv4 into the TUN"
arrives "$tun_recv" lan6 "LAN IPv6 into the TUN"
grep -q '^192.168.88.2 10.77.9.2 9999 lan4$' "$tun_recv" ||
    fail "IPv4 datagram in the TUN lacks its LAN source"
grep -q '^fd88::2 fd77:9::2 9999 lan6$' "$tun_recv" ||
    fail "IPv6 datagram in the TUN lacks its LAN source"
absent "$up_recv" lan4 "LAN IPv4 with the rules up"
absent "$up_recv" lan6 "LAN IPv6 with the rules up"
log "LAN traffic enters the TUN, none goes upstream"

send "$R" 10.77.9.2 host4
arrives "$tun_recv" host4 "router's own traffic into the TUN"
send "$R" 10.77.9.2 marked4 0x7353
send "$R" fd77:9::2 marked6 0x7353
arrives "$up_recv" marked4 "marked IPv4 upstream"
arrives "$up_recv" marked6 "marked IPv6 upstream"
send "$L" 10.77.9.3 server4
arrives "$up_recv" server4 "--server address upstream"
send "$L" 192.168.88.1 local4
send "$L" fd88::1 local6
arrives "$lan_router" local4 "LAN to the router"
arrives "$lan_router" local6 "LAN to the router, IPv6"
for p in marked4 marked6 server4 local4 local6; do
	grep -q " $p\$" "$tun_recv" && fail "'$p' entered the TUN"
done
log "router's own, marked, server and LAN-local traffic are right"

# ---- the daemon exits: fail-closed -------------------------------------------
kill "$tun_pid"
i=0
while ip -n "$R" link show ts0 >/dev/null 2>&1 && [ $i -lt 50 ]; do
	sleep 0.1
	i=$((i + 1))
done
ip -n "$R" link show ts0 >/dev/null 2>&1 && fail "ts0 outlived its reader"
send "$L" 10.77.9.2 closed4
send "$L" fd77:9::2 closed6
send "$R" 10.77.9.2 closedhost4
absent "$up_recv" closed4 "fail-closed IPv4"
absent "$up_recv" closed6 "fail-closed IPv6"
absent "$up_recv" closedhost4 "fail-closed, router's own"
send "$R" 10.77.9.2 closedmarked4 0x7353
arrives "$up_recv" closedmarked4 "fail-closed, marked"
log "with the TUN gone, nothing leaks"

# ---- the daemon restarts, then the rules go --------------------------------
start_tun
route up --server 10.77.9.3 || fail "up again: $(cat "$tmp/out")"
send "$L" 10.77.9.2 again4
arrives "$tun_recv" again4 "after the restart"
route down || fail "down: $(cat "$tmp/out")"
snap "$tmp/s"
cmp -s "$tmp/s0" "$tmp/s" || { diff -u "$tmp/s0" "$tmp/s"; fail "down did not restore the routing"; }
send "$L" 10.77.9.2 after4
send "$L" fd77:9::2 after6
arrives "$up_recv" after4 "after down, IPv4"
arrives "$up_recv" after6 "after down, IPv6"
for p in after4 after6; do
	grep -q " $p\$" "$tun_recv" && fail "'$p' entered the TUN after down"
done
printf 'PASS: %s: LAN traffic routed into the TUN, fail-closed, restored\n' "$name"
exit 0
