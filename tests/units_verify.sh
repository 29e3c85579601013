#!/bin/sh
# The systemd units in examples/ must pass `systemd-analyze verify`: no
# unknown or misspelt directives, valid values.  The binary's path is
# pointed at the build and Documentation= dropped (man pages are not
# installed here); nothing is started.  Skipped without systemd-analyze.
set -u
command -v systemd-analyze >/dev/null 2>&1 || { echo "SKIP: no systemd-analyze"; exit 77; }
TS_SRCDIR=${TS_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
TUNSPLIT=${TUNSPLIT:-$(command -v tunsplit || echo /bin/true)}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tunsplit-units.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
rc=0
for u in "$TS_SRCDIR"/examples/*.service; do
	n=$(basename "$u")
	sed -e "s|/usr/sbin/tunsplit|$TUNSPLIT|g" -e '/^Documentation=/d' \
	    "$u" >"$tmp/$n"
	# verify also checks the unit's dependencies; keep only our own words.
	if ! SYSTEMD_LOG_LEVEL=warning systemd-analyze verify "$tmp/$n" \
	    >"$tmp/out" 2>&1; then
		echo "FAIL: $n"
		cat "$tmp/out"
		rc=1
	elif grep -q "$n" "$tmp/out"; then
		echo "FAIL: $n"
		cat "$tmp/out"
		rc=1
	else
		echo "ok: $n"
	fi
done
exit $rc
