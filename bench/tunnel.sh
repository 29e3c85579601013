#!/bin/bash
# Issue #2's numbers in one run, on the end-to-end test topology
# (tests/netns/lib.sh: client -- veth -- server -- veth -- target, no
# impairment): single-flow throughput through tunsplit against plain TCP
# over the same veth (the ratio is what counts on a shared machine), CPU
# seconds per GiB of the client and server daemons, and RSS with N idle
# flows open.
#
# usage (as root): TUNSPLIT=build/tunsplit bench/tunnel.sh [seconds] [idle-flows]
# env:   TS_MTU (TUN MTU, default 9000)
. "$(dirname "$0")/../tests/netns/lib.sh"
ts_init tunnel
T=${1:-8}
N=${2:-1000}

ts_standard_setup
ip netns exec "$NS_T" iperf3 -s -D -p 5201 >/dev/null 2>&1
ip netns exec "$NS_S" iperf3 -s -D -p 5202 >/dev/null 2>&1
sleep 0.5

. "$(dirname "$0")/cpu.sh"
cpu() { cpu_ticks "$1"; }	# clock ticks, the client's workers' too
rss() { ts_rss_kb "$1"; }	# KiB, the client's workers' too
iperf() {	# host port dir -> "Gbit/s bytes"
	ip netns exec "$NS_C" iperf3 -c "$1" -p "$2" -t "$T" $3 -J |
	    "$TS_PY" -c 'import json, sys
e = json.load(sys.stdin)["end"]["sum_received"]
print("%.3f %d" % (e["bits_per_second"] / 1e9, e["bytes"]))'
}
per_gib() { "$TS_PY" -c "print('%.2f' % (($2 - $1) / 100 / ($3 / 2**30)))"; }

printf '\n| direction | direct veth Gbit/s | tunsplit Gbit/s | ratio | client CPU s/GiB | server CPU s/GiB |\n|---|---|---|---|---|---|\n'
for dir in up down; do
	rev=; [ $dir = down ] && rev=-R
	read -r dgb _ <<<"$(iperf "$TS_S_ADDR4" 5202 "$rev")"
	c0=$(cpu "$TS_CLIENT_PID"); s0=$(cpu "$TS_SERVER_PID")
	read -r tgb bytes <<<"$(iperf "$TS_T_ADDR4" 5201 "$rev")"
	c1=$(cpu "$TS_CLIENT_PID"); s1=$(cpu "$TS_SERVER_PID")
	printf '| %s | %s | %s | %s | %s | %s |\n' $dir "$dgb" "$tgb" \
	    "$("$TS_PY" -c "print('%.2f' % ($tgb / $dgb))")" \
	    "$(per_gib "$c0" "$c1" "$bytes")" "$(per_gib "$s0" "$s1" "$bytes")"
done

# Idle flows: the target accepts and holds; the app opens N connections,
# sends one byte on each and waits.  RSS is read once all are open and
# after the daemons' periodic heap trim (10 s).
ip netns exec "$NS_T" "$TS_PY" - "$TS_T_ADDR4" <<'EOF' &
import resource, socket, sys
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind((sys.argv[1], 7000))
l.listen(4096)
held = []
while True:
    held.append(l.accept()[0])
EOF
holder=$!
sleep 0.5
c0=$(rss "$TS_CLIENT_PID"); s0=$(rss "$TS_SERVER_PID")
ip netns exec "$NS_C" "$TS_PY" - "$TS_T_ADDR4" "$N" >"$TS_TMP/idle.log" 2>&1 <<'EOF' &
import resource, socket, sys, time
n = int(sys.argv[2])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
socks = []
for i in range(n):
    s = socket.create_connection((sys.argv[1], 7000), timeout=10)
    s.sendall(b"x")
    socks.append(s)
print("idle: %d connections open" % len(socks), flush=True)
time.sleep(30)
EOF
app=$!
sleep 16
c1=$(rss "$TS_CLIENT_PID"); s1=$(rss "$TS_SERVER_PID")
kill "$app" "$holder" 2>/dev/null
grep -q "^idle: $N connections open" "$TS_TMP/idle.log" ||
    ts_fail "the $N idle connections did not all open: $(tail -n 2 "$TS_TMP/idle.log")"
printf '\n| idle flows | client RSS KiB (before -> with) | per flow | server RSS KiB | per flow |\n|---|---|---|---|---|\n'
printf '| %d | %d -> %d | %d B | %d -> %d | %d B |\n' "$N" "$c0" "$c1" \
    $(( (c1 - c0) * 1024 / N )) "$s0" "$s1" $(( (s1 - s0) * 1024 / N ))
# Connection rate: sequential new connections, each a 1 KiB HTTP GET, for
# $T seconds; with the default warm pool (2) and with none (the client is
# restarted with pool: 0).
mkdir -p "$TS_TMP/www"
head -c 1024 /dev/urandom >"$TS_TMP/www/1k"
ts_start_http "$TS_TMP/www"
connrate() {
	ip netns exec "$NS_C" "$TS_PY" - "$TS_T_ADDR4" "$TS_HTTP_PORT" "$T" <<'EOF'
import socket, sys, time
host, port, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
req = b"GET /1k HTTP/1.0\r\nHost: t\r\n\r\n"
n = 0
end = time.monotonic() + secs
while time.monotonic() < end:
    s = socket.create_connection((host, port), timeout=10)
    s.sendall(req)
    got = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        got += b
    s.close()
    if b" 200 " not in got.split(b"\r\n", 1)[0] or len(got) < 1024:
        sys.exit("bad reply")
    n += 1
print("%.0f" % (n / secs))
EOF
}
with=$(connrate) || ts_fail "connection rate with the pool"
kill -TERM "$TS_CLIENT_PID"; wait "$TS_CLIENT_PID" 2>/dev/null
printf '  pool: 0\n' >>"$TS_TMP/client.yaml"
ts_start_client
without=$(connrate) || ts_fail "connection rate without the pool"
printf '\n| new connections per second (sequential, 1 KiB GET) | warm pool (2) | no pool |\n|---|---|---|\n| through tunsplit | %s | %s |\n' "$with" "$without"

ts_pass "tunnel numbers (MTU ${TS_MTU:-9000}, $T s per iperf3 run)"
