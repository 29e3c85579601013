#!/bin/bash
# The benchmark's link emulator (bench/linkem) between two namespaces:
# its delay, a seeded loss pattern that repeats, and live changes through
# --ctl and SIGHUP (what bench/run.sh relies on between loss seeds).
#
#   tsc lk0 ==linkem (2 ms each way, loss)== lk0 tss
#
# Only ICMP crosses the link (IPv6 is off on both ends, so no neighbour
# discovery takes draws from the loss streams): the same seed must lose
# the same echo requests or replies after a reload as after a start, another
# seed others, loss 0 none, and a bad --ctl file must change nothing.
. "$(dirname "$0")/../lib.sh"
ts_init bench_linkem

command -v ping >/dev/null 2>&1 || ts_skip "missing tool: ping"
ts_find_linkem
N=300

ts_ns_add "$NS_C"
ts_ns_add "$NS_S"
for ns in "$NS_C" "$NS_S"; do
	ts_sysctl "$ns" net/ipv6/conf/all/disable_ipv6 1
	ts_sysctl "$ns" net/ipv6/conf/default/disable_ipv6 1
done
CTL=$TS_TMP/linkem.ctl
ts_start_linkem linkem "$NS_C" --a-netns "/run/netns/$NS_C" --a-name lk0 \
    --b-netns "/run/netns/$NS_S" --b-name lk0 --delay 2 --loss 20 --seed 7 \
    --ctl "$CTL" --stats "$TS_TMP/stats.json"
LPID=$TS_LINKEM_PID
ip -n "$NS_C" link set lk0 up
ip -n "$NS_S" link set lk0 up
ip -n "$NS_C" addr add "$TS_C_ADDR4/24" dev lk0
ip -n "$NS_S" addr add "$TS_S_ADDR4/24" dev lk0

# The icmp_seq numbers answered out of $N echo requests, one per line.
answered() {
	ip netns exec "$NS_C" ping -n -c "$N" -i 0.005 -W 1 "$TS_S_ADDR4" |
	    sed -n 's/.*icmp_seq=\([0-9]*\) .*/\1/p'
}

# reload ARGS...: write the --ctl file, SIGHUP, wait for linkem's answer
# (a "reloaded" line, or the complaint about a bad file).
reload() {
	local n i
	n=$(grep -c 'reloaded\|ignored' "$TS_TMP/linkem.log")
	echo "$*" >"$CTL"
	kill -HUP "$LPID" || ts_fail "linkem is gone"
	for i in $(seq 100); do
		[ "$(grep -c 'reloaded\|ignored' "$TS_TMP/linkem.log")" -gt "$n" ] &&
		    return 0
		sleep 0.02
	done
	ts_fail "linkem did not answer SIGHUP with \"$*\""
}

rtt=$(ip netns exec "$NS_C" ping -n -c 1 -W 2 "$TS_S_ADDR4" |
    sed -n 's/.*time=\([0-9.]*\) ms/\1/p')
# The first echo may be lost too (20 % each way): try a few.
for i in 1 2 3 4 5; do
	[ -n "$rtt" ] && break
	rtt=$(ip netns exec "$NS_C" ping -n -c 1 -W 2 "$TS_S_ADDR4" |
	    sed -n 's/.*time=\([0-9.]*\) ms/\1/p')
done
[ -n "$rtt" ] || ts_fail "no echo reply over linkem"
awk "BEGIN { exit !($rtt >= 4 && $rtt < 50) }" ||
    ts_fail "RTT $rtt ms over a 2-ms-each-way link"
ts_log "RTT $rtt ms (2 ms each way)"

reload --loss 20 --seed 7
answered >"$TS_TMP/a.seq"
reload --loss 20 --seed 7
answered >"$TS_TMP/b.seq"
reload --loss 20 --seed 8
answered >"$TS_TMP/c.seq"
a=$(wc -l <"$TS_TMP/a.seq")
ts_log "seed 7: $a of $N answered, again $(wc -l <"$TS_TMP/b.seq"), seed 8: $(wc -l <"$TS_TMP/c.seq")"
# 20 % each way: about 64 % answered; far outside that, the loss is wrong.
[ "$a" -ge $((N * 50 / 100)) ] && [ "$a" -le $((N * 78 / 100)) ] ||
    ts_fail "seed 7: $a of $N answered, want about $((N * 64 / 100))"
cmp -s "$TS_TMP/a.seq" "$TS_TMP/b.seq" ||
    ts_fail "the same seed lost different packets after a reload"
cmp -s "$TS_TMP/a.seq" "$TS_TMP/c.seq" &&
    ts_fail "seeds 7 and 8 lost the same packets"

# stats FILE: SIGUSR1 writes the counters of the period so far to --stats
# and starts a new one; FILE gets them.
stats() {
	local i
	rm -f "$TS_TMP/stats.json"
	kill -USR1 "$LPID" || ts_fail "linkem is gone"
	for i in $(seq 50); do
		[ -s "$TS_TMP/stats.json" ] && break
		sleep 0.02
	done
	mv "$TS_TMP/stats.json" "$1" 2>/dev/null ||
	    ts_fail "linkem wrote no counters on SIGUSR1"
}

reload --loss 0
stats "$TS_TMP/lossy.json"
[ "$(answered | wc -l)" = "$N" ] || ts_fail "loss 0: not every echo answered"
for bad in "--loss x" "--loss 101" "--seed -1" "--rate 5" "--loss"; do
	reload "$bad"
	tail -n 1 "$TS_TMP/linkem.log" | grep -q 'ignored' ||
	    ts_fail "bad --ctl \"$bad\" not reported"
done
[ "$(answered | wc -l)" = "$N" ] ||
    ts_fail "a bad --ctl file changed the link (loss is no longer 0)"

# Counters: the lossy periods lost packets in both directions, the
# lossless one (with the bad reloads in it) none.
stats "$TS_TMP/clean.json"
"$TS_PY" - "$TS_TMP/lossy.json" "$TS_TMP/clean.json" <<'PYEND' ||
import json, sys
lossy, clean = (json.load(open(f)) for f in sys.argv[1:3])
for k in ("a_to_b", "b_to_a"):
    assert lossy[k]["loss_pkts"] > 0, ("lossy", k, lossy[k])
    assert clean[k]["loss_pkts"] == 0 and clean[k]["fwd_pkts"] >= 600, \
        ("clean", k, clean[k])
PYEND
    ts_fail "linkem counters wrong (see above)"
ts_pass
