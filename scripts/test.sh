#!/bin/bash
# README command 2: install dependencies, obtain lwIP, build with warnings as
# errors, and run every test -- cmocka unit tests and the end-to-end tests
# in network namespaces (those need root; as another user they are skipped).
#
# usage: sudo scripts/test.sh
# env:   BUILD_DIR (default: build-check in the source tree), TS_NO_APT=1
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$top/build-check}
case $build in /*) ;; *) build=$PWD/$build ;; esac

rm -f "$build/test-suite.log"
"$top/scripts/build.sh" "$build" --enable-werror || {
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
