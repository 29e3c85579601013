#!/bin/sh
# make check: every fuzz target, built with the standalone main
# (tests/fuzz/standalone.c), replays its seed corpus tests/fuzz/corpus/T/
# and any crash reproducers in tests/fuzz/crashes/T/.  A failing oracle
# aborts the target and fails this test.
#
# env: FUZZ_TARGETS  target names (from Makefile.am)
#      TS_SRCDIR     source tree; TS_BUILDDIR build tree
set -u

srcdir=${TS_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${TS_BUILDDIR:-.}
targets=${FUZZ_TARGETS:-}

[ -n "$targets" ] || { echo "replay.sh: FUZZ_TARGETS is empty"; exit 99; }
rc=0
for t in $targets; do
	bin=$builddir/tests/fuzz/fuzz_$t
	corpus=$srcdir/tests/fuzz/corpus/$t
	if [ ! -x "$bin" ]; then
		echo "FAIL: fuzz_$t: $bin not built"
		rc=1
		continue
	fi
	if [ ! -d "$corpus" ]; then
		echo "FAIL: fuzz_$t: no seed corpus $corpus"
		rc=1
		continue
	fi
	set -- "$corpus"
	[ -d "$srcdir/tests/fuzz/crashes/$t" ] &&
	    set -- "$@" "$srcdir/tests/fuzz/crashes/$t"
	if "$bin" "$@"; then
		echo "PASS: fuzz_$t"
	else
		echo "FAIL: fuzz_$t (rerun with -v to see the input)"
		rc=1
	fi
done
exit $rc
