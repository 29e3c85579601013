#!/bin/bash
# A fastest group leaving a member whose link degrades (issue 17): runs
# tests/netns/e2e/e2e_groups_health.sh RUNS times per cell; in each, two
# servers A and B sit behind their own linkem links (2 ms and 6 ms each
# way), two streams of 64 KiB hash-checked downloads (one per 100 ms
# each) run on A, one through the fastest group (A is its choice), one
# through a failover group [a, b], and A's link alone then changes to
# the cell's settings.  Prints, per run, the seconds from linkem
# applying the change to the client's "fastest is now b" and the
# fastest group's flows that reached A in between, then the medians.
#
#   TUNSPLIT=build/tunsplit bench/groups_fastest.sh [RUNS]
#   TUNSPLIT=build/tunsplit bench/groups_fastest.sh --cell balance [RUNS]
#
# Cells (linkem --ctl options for A's link): "--delay 60 --loss 3"
# (round trip 4 -> 120 ms, 3 % loss), "--delay 20" (4 -> 40 ms), and
# "--loss 10" (delay kept, 10 % loss each way).
#
# --cell balance: the same topology with both links limited to
# TS_LINK_RATE (40) Mbit/s; RUNS rounds, interleaved, of TS_PAR (8)
# parallel hash-checked downloads of TS_SIZE (16m) each, through a
# failover group (A alone) and through balance [a, b] with strategy
# flow; prints each round's aggregate goodput, the flows' split between
# the servers and the CPU used, then the medians and their ratio.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/.." && pwd)
CELL=
if [ "${1:-}" = --cell ]; then
	CELL=${2:?--cell wants a name: balance}
	shift 2
fi
RUNS=${1:-3}
: "${TUNSPLIT:?set TUNSPLIT to the tunsplit binary}"
export TUNSPLIT TS_SRCDIR=$SRC TS_FEW=1000
export TS_BUILDDIR=${TS_BUILDDIR:-$(dirname "$TUNSPLIT")}
# median: of the numbers on stdin.
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
if [ "$CELL" = balance ]; then
	out=$(TS_CELL=balance TS_REPS=$RUNS \
	    "$SRC/tests/netns/e2e/e2e_groups_health.sh" 2>&1)
	grep "cell balance round" <<<"$out" | sed 's/^e2e_groups_health: //'
	grep -qx "PASS: .*" <<<"$out" ||
	    { echo "no result: $(grep -E '^(PASS|FAIL)' <<<"$out")"; exit 1; }
	one=$(sed -nE 's/.*: slow ([0-9.]+) Mbit.*/\1/p' <<<"$out" | median)
	two=$(sed -nE 's/.*: bal ([0-9.]+) Mbit.*/\1/p' <<<"$out" | median)
	printf "cell balance: one server %s Mbit/s, balance of two %s Mbit/s" \
	    "$one" "$two"
	printf " (medians of %d), ratio %s; load %s\n" "$RUNS" \
	    "$(awk -v a="$one" -v b="$two" 'BEGIN { printf "%.2f", b / a }')" \
	    "$(cut -d' ' -f1-3 /proc/loadavg)"
	exit 0
fi
[ -z "$CELL" ] || { echo "unknown cell $CELL" >&2; exit 2; }
for cell in "--delay 60 --loss 3" "--delay 20" "--loss 10"; do
	secs=() flows=()
	for run in $(seq "$RUNS"); do
		out=$(TS_DEGRADE="$cell" "$SRC/tests/netns/e2e/e2e_groups_health.sh" 2>&1)
		line=$(grep -m1 "fastest: A degraded" <<<"$out")
		if [ -z "$line" ]; then
			echo "cell '$cell' run $run: no result: $(grep -E '^(PASS|FAIL)' <<<"$out")"
			continue
		fi
		s=$(sed -E 's/.*moved to b ([0-9.]+) s.*/\1/' <<<"$line")
		f=$(sed -E 's/.* ([0-9]+) flows reached A.*/\1/' <<<"$line")
		echo "cell '$cell' run $run: moved in $s s, $f flows on A meanwhile"
		secs+=("$s")
		flows+=("$f")
	done
	[ "${#secs[@]}" -gt 0 ] || continue
	printf "cell '%s': median %s s, %s flows on A (of %d runs); load %s\n" \
	    "$cell" \
	    "$(printf '%s\n' "${secs[@]}" | sort -n | sed -n "$(((${#secs[@]} + 1) / 2))p")" \
	    "$(printf '%s\n' "${flows[@]}" | sort -n | sed -n "$(((${#flows[@]} + 1) / 2))p")" \
	    "${#secs[@]}" "$(cut -d' ' -f1-3 /proc/loadavg)"
done
