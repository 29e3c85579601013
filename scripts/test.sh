#!/bin/bash
# README command 2: install dependencies, obtain lwIP, build with warnings as
# errors, and run every test -- cmocka unit tests and the end-to-end tests
# in network namespaces (those need root; as another user they are skipped).
#
# usage: sudo scripts/test.sh [--asan]
#   --asan  the same tests built with ASan and UBSan (--enable-sanitizers)
#           in BUILD_DIR_ASAN; a sanitizer report fails the test it ran in
# env:   BUILD_DIR (default: build-check in the source tree),
#        BUILD_DIR_ASAN (default: build-asan), TS_NO_APT=1,
#        TS_SOAK=1 (full sizes of the soak tests: tests/netns/soaklib.sh)
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$top/build-check}
cfg=(--enable-werror)
if [ "${1:-}" = --asan ]; then
	build=${BUILD_DIR_ASAN:-$top/build-asan}
	cfg+=(--enable-sanitizers)
	# Reports abort the process (UBSan is built without recovery); leaks
	# are reported at exit, and tests/netns/lib.sh fails a test whose
	# logs hold any report.  A small quarantine keeps resident memory
	# close to a normal build's, for the tests that bound it (use after
	# free is still caught within the last 8 MiB freed).
	export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:quarantine_size_mb=8}
	export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
	export TS_SANITIZED=1
fi
case $build in /*) ;; *) build=$PWD/$build ;; esac

rm -f "$build/test-suite.log"
"$top/scripts/build.sh" "$build" "${cfg[@]}" || {
	echo "test.sh: build failed" >&2
	exit 1
}

printf '==> make -j2 check\n'
cd "$build" || exit 1
make -j2 check </dev/null
rc=$?

if [ -f test-suite.log ]; then
	if [ $rc -ne 0 ]; then
		# Holds the logs of every test that did not pass.
		printf '\n==> test-suite.log\n'
		cat test-suite.log
	fi
	printf '\n==> summary\n'
	grep -E '^# (TOTAL|PASS|SKIP|XFAIL|FAIL|XPASS|ERROR):' test-suite.log
else
	echo "test.sh: no test-suite.log (make check failed before the tests ran)" >&2
	[ $rc -ne 0 ] || rc=1
fi
exit $rc
