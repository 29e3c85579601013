#!/bin/bash
# README command 1, scripts/demo.sh, as a test: with the binary under test
# (TUNSPLIT set, so it builds nothing and installs nothing) at its default
# TUN MTU of 1500, where curl announces an MSS of 1460, and then at 9000.
# The demo fetches a page and a file with curl through the tunnel from
# nginx and compares SHA-256; this checks that it passed, said so, and
# that the hashes it printed match each other.  The demo draws its own
# topology (tests/netns/lib.sh) and removes it.
set -u
name=e2e_demo
srcdir=${TS_SRCDIR:-$(cd "$(dirname "$0")/../../.." && pwd)}
skip() { printf 'SKIP: %s: %s\n' "$name" "$*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces, TUN)"
[ -c /dev/net/tun ] || skip "no /dev/net/tun"
command -v curl >/dev/null 2>&1 || skip "curl missing"
[ -n "${TUNSPLIT:-}" ] || for t in "$srcdir/tunsplit" "$srcdir"/build*/tunsplit; do
	[ -x "$t" ] && { TUNSPLIT=$t; break; }
done
[ -x "${TUNSPLIT:-}" ] || { echo "FAIL: $name: set TUNSPLIT=path"; exit 1; }
mib=${DEMO_MIB:-64}
[ -n "${TS_SANITIZED:-}" ] && mib=32
out=$(mktemp "${TMPDIR:-/tmp}/tunsplit-$name.XXXXXX")
trap 'rm -f "$out"' EXIT

for mtu in "" 9000; do
	what="default MTU"
	[ -n "$mtu" ] && what="DEMO_MTU=$mtu"
	TUNSPLIT=$TUNSPLIT TS_SRCDIR=$srcdir TS_NO_APT=1 DEMO_MIB=$mib \
	    DEMO_MTU=$mtu timeout 300 "$srcdir/scripts/demo.sh" >"$out" 2>&1
	rc=$?
	want=$(sed -n 's/^  sha256 sent : //p' "$out")
	got=$(sed -n 's/^  sha256 got  : //p' "$out")
	mtu_seen=$(sed -n 's/.*TUN (MTU \([0-9]*\)).*/\1/p' "$out")
	if [ $rc -ne 0 ] || ! grep -q "^PASS: demo: " "$out" ||
	    [ -z "$want" ] || [ "$want" != "$got" ] ||
	    [ "$mtu_seen" != "${mtu:-1500}" ] ||
	    ! grep -q "^  bytes       : $((mib << 20))\$" "$out"; then
		cat "$out"
		echo "FAIL: $name: scripts/demo.sh with $what (exit $rc, MTU '$mtu_seen', sha256 '$want' vs '$got')"
		exit 1
	fi
	printf '%s: %s: %s\n' "$name" "$what" "$(grep '^PASS: demo: ' "$out")"
done
echo "PASS: $name: the demo fetched $mib MiB intact at TUN MTU 1500 (its default) and 9000"
