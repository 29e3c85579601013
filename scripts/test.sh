#!/bin/bash
# README command 2: install dependencies, obtain lwIP, build with warnings as
# errors, and run every test -- cmocka unit tests and the end-to-end tests
# in network namespaces (those need root; as another user they are skipped).
#
# usage: sudo scripts/test.sh [--asan | --tsan]
#   --asan  the same tests built with ASan and UBSan (--enable-sanitizers)
#           in BUILD_DIR_ASAN; a sanitizer report fails the test it ran in
#   --tsan  only the tests that run threads (listed below), built with
#           ThreadSanitizer (--enable-tsan) in BUILD_DIR_TSAN; a data race
#           (or other TSan report) fails the test it ran in
# env:   BUILD_DIR (default: build-check in the source tree),
#        BUILD_DIR_ASAN (default: build-asan),
#        BUILD_DIR_TSAN (default: build-tsan), TS_NO_APT=1,
#        TS_SOAK=1 (full sizes of the soak tests: tests/netns/soaklib.sh)
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$top/build-check}
cfg=(--enable-werror)
tests=()
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
elif [ "${1:-}" = --tsan ]; then
	build=${BUILD_DIR_TSAN:-$top/build-tsan}
	cfg+=(--enable-tsan)
	# The threads in tunsplit are the server's worker loops (server.workers,
	# src/server/server_worker.c) and the resolver's threads
	# (src/server/resolve.c); a few unit tests run a fake peer on a thread
	# of their own.  The client is one loop on one thread but for its
	# dialer threads (client.dial_threads, src/client/dialer.c), which
	# e2e_dialer.sh runs through a burst and cancellations.
	# e2e_workers.sh runs two server workers through limits, replays,
	# tickets and a reload; e2e_resolve.sh and fault_preauth.sh run the
	# default (one per CPU) too.
	tests=(tests/unit/server/test_resolve tests/unit/core/test_limit
	    tests/unit/client/dgram/test_assoc
	    tests/unit/client/dgram/test_flow_udp tests/netns/e2e/e2e_resolve.sh
	    tests/netns/e2e/e2e_workers.sh tests/netns/e2e/e2e_dialer.sh
	    tests/netns/fault/fault_preauth.sh)
	# A report makes a unit test exit with 66; tests/netns/lib.sh fails a
	# test whose logs hold one (the server's stderr is its log).
	export TSAN_OPTIONS=${TSAN_OPTIONS:-second_deadlock_stack=1}
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
if [ ${#tests[@]} -gt 0 ]; then
	make -j2 check TESTS="${tests[*]}" </dev/null
else
	make -j2 check </dev/null
fi
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
