#!/bin/bash
# bench/rules_flows.sh: what loaded rules cost a new flow through the
# tunnel (issue 16: "the flow rate with rules loaded stays within 5 % of
# the rate without").  On the end-to-end test topology (tests/netns/lib.sh:
# client, server, target namespaces), sequential connections, each a
# 1 KiB download, under three client configurations in turn, several
# rounds interleaved:
#
#   none    no rules
#   rules   100,000 names and 10,000 prefixes in two rule sets, a keyword
#           rule and a port rule, none of which matches, sniff: never
#   sniff   the same rules with sniff: auto (on: a rule can match a name)
#
# Each run prints the rate and the client's CPU time per connection
# (utime+stime of the daemon from /proc, for the run's connections):
# the CPU time is what the rules cost; the rate follows the machine's
# load.  Not a test; numbers for doc/PERFORMANCE.md.
#
#   TUNSPLIT=build/tunsplit bench/rules_flows.sh [connections [rounds]]
set -u
TS_SRCDIR=${TS_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
N=${1:-600}
ROUNDS=${2:-3}
. "$TS_SRCDIR/tests/netns/lib.sh"
ts_init rules_flows

ts_topology_up
ts_make_pki
ts_write_configs
ts_start_target
ts_start_server
cat >"$TS_TMP/rate.py" <<'EOF'
import socket, sys, time
host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
t0 = time.monotonic()
for i in range(n):
    c = socket.create_connection((host, port), timeout=10)
    c.sendall(b"SEND 1024 1 0\n")
    got = 0
    while got < 1024:
        b = c.recv(4096)
        if not b:
            break
        got += len(b)
    c.close()
    if got != 1024:
        sys.exit("short read: %d bytes" % got)
print("%.0f" % (n / (time.monotonic() - t0)))
EOF
python3 - "$TS_TMP" <<'EOF'
import random, sys
d = sys.argv[1]
with open(d + "/names.txt", "w") as f:
    for i in range(100000):
        f.write("%sn%d.z%d.example%d.com\n" % ("+." if i % 2 else "", i,
                i % 89, i % 13))
random.seed(1)
with open(d + "/cidrs.txt", "w") as f:
    for i in range(10000):	# 128.0.0.0/1: never the test's 10.77/16
        a = random.randrange(1 << 32)
        f.write("%d.%d.%d.0/24\n" % (a >> 24 | 128, a >> 16 & 255,
                a >> 8 & 255))
EOF
base=$(cat "$TS_TMP/client.yaml")

conf() {	# conf none|rules|sniff
	{
		echo "$base" | sed "/^client:/a\\  sniff: $([ "$1" = sniff ] && echo auto || echo never)"
		[ "$1" = none ] || cat <<EOF
  rule_sets:
    - {name: names, path: $TS_TMP/names.txt}
    - {name: cidrs, path: $TS_TMP/cidrs.txt, type: cidr}
  rules:
    - {rule_set: names, outbound: default}
    - {rule_set: cidrs, outbound: default}
    - {domain_keyword: [tracker, adserver], outbound: default}
    - {port: 22, outbound: default}
EOF
	} >"$TS_TMP/client.yaml"
	"$TUNSPLIT" check -c "$TS_TMP/client.yaml" >"$TS_TMP/check.log" 2>&1 ||
	    ts_fail "check ($1): $(tail -n 1 "$TS_TMP/check.log")"
}

cpu() { awk '{ print $14 + $15 }' "/proc/$TS_CLIENT_PID/stat"; }

run() {		# run KIND
	local c0 c1 rate hz
	conf "$1"
	ts_start_client
	ip netns exec "$NS_C" python3 "$TS_TMP/rate.py" "$TS_T_ADDR4" 9000 50 \
	    >/dev/null || ts_fail "warm-up"
	c0=$(cpu)
	rate=$(ip netns exec "$NS_C" python3 "$TS_TMP/rate.py" "$TS_T_ADDR4" 9000 "$N") ||
	    ts_fail "$1: $rate"
	c1=$(cpu)
	hz=$(getconf CLK_TCK)
	printf 'rules_flows: %-5s %5s conn/s, client CPU %4d us/conn\n' "$1" \
	    "$rate" $(( (c1 - c0) * 1000000 / hz / N ))
	kill -TERM "$TS_CLIENT_PID"
	wait "$TS_CLIENT_PID" 2>/dev/null
	ip -n "$NS_C" link del "$TS_TUN" 2>/dev/null
}

for r in $(seq "$ROUNDS"); do
	run rules
	run none
	run sniff
	run none
done
printf 'rules_flows: load average %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
ts_pass "$N connections per run, $ROUNDS rounds"
