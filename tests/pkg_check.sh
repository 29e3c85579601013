#!/bin/sh
# The Debian package: builds it with dpkg-buildpackage -us -uc -b from a
# copy of the source tree (debian/rules runs autoreconf, which must not
# touch the tree others build from) and checks what a packager and an
# operator rely on:
#   - the binary, tunsplit-route, the three man pages, both systemd units
#     (in /lib/systemd/system), the sample configurations and the bash
#     completion are in the .deb;
#   - every command the units run (ExecStart=, ExecStartPre=, ...) is a
#     path under /usr/sbin that the package holds, executable, or a
#     system command that exists here (/bin/kill);
#   - the packaged binary runs (tunsplit version) and its check command,
#     run as the unit's ExecStartPre= runs it, rejects a missing file
#     with exit status 3;
#   - the units' command lines, started as systemd starts them against a
#     scratch /etc/tunsplit: both ExecStartPre= accept a configuration;
#     the server's ExecStart= listens on 127.0.0.1 and sends READY=1,
#     survives ExecReload= and stops with status 0 on SIGTERM;
#   - postinst creates the user the units run as, and carries
#     debhelper's unit snippet, which neither enables nor starts them;
#   - lintian reports no error (when lintian is installed).
# Slow (a full build, ~1-2 min), so it runs only with TS_PKG=1; skipped
# (77) otherwise.  The unit tests are not run again inside the build
# (DEB_BUILD_OPTIONS=nocheck) unless TS_PKG_TESTS=1.  lwIP: LWIP_DIR or
# TS_SRCDIR/lwip.  Needs dpkg-dev and debhelper; no root.
set -u
[ "${TS_PKG:-}" = 1 ] || { echo "SKIP: set TS_PKG=1 to build and check the Debian package"; exit 77; }
for c in dpkg-buildpackage dpkg-deb dh; do
	command -v $c >/dev/null 2>&1 ||
	    { echo "SKIP: no $c (apt-get install dpkg-dev debhelper)"; exit 77; }
done
TS_SRCDIR=${TS_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
LWIP_DIR=${LWIP_DIR:-$TS_SRCDIR/lwip}
[ -f "$LWIP_DIR/src/include/lwip/init.h" ] ||
    { echo "SKIP: no lwIP tree at $LWIP_DIR (scripts/get-lwip.sh)"; exit 77; }
export LWIP_DIR

work=$(mktemp -d "${TMPDIR:-/tmp}/tunsplit-pkg.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
trap 'exit 1' INT TERM
fail=0
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

mkdir "$work/src"
tar -C "$TS_SRCDIR" --exclude=./lwip --exclude='./build*' --exclude=./.git \
    --exclude=./autom4te.cache --exclude='./debian/build' \
    --exclude='./debian/tunsplit' -cf - . | tar -C "$work/src" -xf - ||
    { echo "FAIL: cannot copy $TS_SRCDIR"; exit 1; }

opts="parallel=2"
[ "${TS_PKG_TESTS:-}" = 1 ] || opts="$opts nocheck"
start=$(date +%s)
if ! (cd "$work/src" && DEB_BUILD_OPTIONS=$opts \
    dpkg-buildpackage -us -uc -b >"$work/build.log" 2>&1); then
	tail -n 40 "$work/build.log"
	echo "FAIL: dpkg-buildpackage -us -uc -b"
	exit 1
fi
echo "ok: dpkg-buildpackage -us -uc -b, $(( $(date +%s) - start )) s"
deb=$(ls "$work"/tunsplit_*.deb 2>/dev/null | head -n 1)
[ -n "$deb" ] || { echo "FAIL: no tunsplit_*.deb built"; exit 1; }

dpkg-deb -c "$deb" | awk '{ print $1, $NF }' | sed 's| \./| /|' >"$work/contents"
has() {		# has MODE-PREFIX PATH
	if grep -qx -- "$1[^ ]* $2" "$work/contents"; then
		echo "ok: $2"
	else
		bad "$2 not in $(basename "$deb") (or not $1)"
	fi
}
has -rwxr-xr-x /usr/sbin/tunsplit
has -rwxr-xr-x /usr/sbin/tunsplit-route
for m in man8/tunsplit.8 man5/tunsplit.yaml.5 man8/tunsplit-route.8; do
	has -rw-r--r-- "/usr/share/man/$m.gz"
done
for u in tunsplit-client.service tunsplit-server.service; do
	has -rw-r--r-- "/lib/systemd/system/$u"
done
for e in client.yaml client-direct.yaml client-rules.yaml client-socks5.yaml \
    client-groups.yaml \
    server.yaml rule-sets/ads.txt rule-sets/domestic-cidr.txt; do
	has -rw-r--r-- "/usr/share/doc/tunsplit/examples/$e"
done
has -rw-r--r-- /usr/share/bash-completion/completions/tunsplit
has d /etc/tunsplit/

root=$work/root
dpkg-deb -x "$deb" "$root"
dpkg-deb -e "$deb" "$work/ctl"
# The units' commands: the packaged ones under /usr/sbin, others here.
for u in "$root"/lib/systemd/system/tunsplit-*.service; do
	n=$(basename "$u")
	cmds=$(sed -n 's/^Exec[A-Za-z]*=[-@:+!]*\([^ ]*\).*/\1/p' "$u")
	[ -n "$cmds" ] || bad "$n: no Exec lines"
	for p in $cmds; do
		case $p in
		/usr/sbin/*)
			if [ -x "$root$p" ]; then echo "ok: $n runs $p (packaged)"
			else bad "$n runs $p, which the package lacks"; fi ;;
		/*)
			if [ -x "$p" ]; then echo "ok: $n runs $p (system)"
			else bad "$n runs $p, which does not exist"; fi ;;
		*)	bad "$n runs $p: not an absolute path" ;;
		esac
	done
	grep -q '^ExecStart=/usr/sbin/tunsplit run -c /etc/tunsplit/' "$u" ||
	    bad "$n: ExecStart= is not /usr/sbin/tunsplit run -c /etc/tunsplit/..."
	if command -v systemd-analyze >/dev/null 2>&1; then
		sed "s|/usr/sbin/tunsplit|$root/usr/sbin/tunsplit|g; /^Documentation=/d" \
		    "$u" >"$work/$n"
		if SYSTEMD_LOG_LEVEL=warning systemd-analyze verify "$work/$n" 2>&1 |
		    grep "$n"; then
			bad "$n: systemd-analyze verify"
		else
			echo "ok: $n passes systemd-analyze verify"
		fi
	fi
done
# The packaged binary runs, and its ExecStartPre= line tells a missing
# configuration (3) apart.
if "$root/usr/sbin/tunsplit" version >"$work/version" 2>&1; then
	echo "ok: tunsplit version: $(head -n 1 "$work/version")"
else
	bad "the packaged tunsplit does not run: $(cat "$work/version")"
fi
"$root/usr/sbin/tunsplit" check -q -c "$work/none.yaml" >/dev/null 2>&1
rc=$?
[ "$rc" -eq 3 ] && echo "ok: tunsplit check -q on a missing file: 3" ||
    bad "tunsplit check -q on a missing file: exit $rc, not 3"
# The units' command lines, as systemd would run them, with the packaged
# binary: /etc/tunsplit is a scratch directory.  The server's ExecStartPre=
# and ExecStart= start on 127.0.0.1 (no root needed, no traffic sent),
# report READY=1 on $NOTIFY_SOCKET (Type=notify), take ExecReload= and
# stop on SIGTERM with status 0; the client's ExecStartPre= accepts a
# client configuration (its ExecStart= needs a TUN: the netns tests').
etc=$work/etc/tunsplit
mkdir -p "$etc"
unitcmd() {	# unitcmd UNIT KEY: that Exec line, pointed at the scratch tree
	sed -n "s/^$2=[-@:+!]*//p" "$root/lib/systemd/system/$1" | head -n 1 |
	    sed -e "s|/usr/sbin/|$root/usr/sbin/|g" -e "s|/etc/tunsplit|$etc|g"
}
if command -v openssl >/dev/null 2>&1 && command -v python3 >/dev/null 2>&1; then
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
	    -nodes -keyout "$etc/key.pem" -out "$etc/cert.pem" -days 2 \
	    -subj /CN=tunsplit.test -addext subjectAltName=DNS:tunsplit.test \
	    >"$work/openssl.log" 2>&1 || { cat "$work/openssl.log"; bad "openssl"; }
	key=$("$root/usr/sbin/tunsplit" genkey)
	port=$(( 20000 + $$ % 20000 ))
	cat >"$etc/server.yaml" <<YAML
log: {level: info, syslog: false}
control: $work/server.sock
server:
  listen: ["127.0.0.1:$port"]
  cert: $etc/cert.pem
  cert_key: $etc/key.pem
  users: [{name: pkg, key: "$key"}]
YAML
	cat >"$etc/client.yaml" <<YAML
log: {level: info, syslog: false}
control: $work/client.sock
client:
  server: "127.0.0.1:$port"
  sni: tunsplit.test
  ca: $etc/cert.pem
  key: "$key"
YAML
	pre=$(unitcmd tunsplit-client.service ExecStartPre)
	# shellcheck disable=SC2086
	$pre >"$work/pre-client.log" 2>&1 &&
	    echo "ok: client unit's ExecStartPre= accepts a client configuration" ||
	    bad "client ExecStartPre= ($pre): $(cat "$work/pre-client.log")"
	pre=$(unitcmd tunsplit-server.service ExecStartPre)
	# shellcheck disable=SC2086
	$pre >"$work/pre-server.log" 2>&1 &&
	    echo "ok: server unit's ExecStartPre= accepts a server configuration" ||
	    bad "server ExecStartPre= ($pre): $(cat "$work/pre-server.log")"
	# A datagram socket in place of systemd's notify socket.
	python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1]); s.settimeout(0.2)
end = time.time() + 20
with open(sys.argv[2], "w") as out:
    while time.time() < end:
        try:
            m = s.recv(4096)
        except socket.timeout:
            continue
        out.write(m.decode(errors="replace").replace("\n", " ") + "\n"); out.flush()
        if b"STOPPING=1" in m:
            break
' "$work/notify" "$work/notify.log" &
	npid=$!
	i=0
	while [ ! -S "$work/notify" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	start=$(unitcmd tunsplit-server.service ExecStart)
	# shellcheck disable=SC2086
	NOTIFY_SOCKET=$work/notify $start >"$work/run-server.log" 2>&1 &
	spid=$!
	i=0
	while ! grep -q 'READY=1' "$work/notify.log" 2>/dev/null && [ $i -lt 100 ] &&
	    kill -0 $spid 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
	if grep -q 'READY=1' "$work/notify.log" 2>/dev/null; then
		echo "ok: server unit's ExecStart= sent READY=1 ($(( i * 100 )) ms)"
	else
		bad "server ExecStart= ($start) sent no READY=1: $(tail -n 5 "$work/run-server.log")"
	fi
	# ExecReload= is kill -HUP $MAINPID; the daemon must still answer.
	reload=$(unitcmd tunsplit-server.service ExecReload | sed "s/\$MAINPID/$spid/")
	# shellcheck disable=SC2086
	$reload
	i=0
	while ! grep -q 'RELOADING=1' "$work/notify.log" && [ $i -lt 50 ]; do
		sleep 0.1; i=$((i + 1)); done
	sleep 0.3
	if kill -0 $spid 2>/dev/null &&
	    "$root/usr/sbin/tunsplit" status -s "$work/server.sock" >"$work/status" 2>&1; then
		echo "ok: after ExecReload= the server runs and answers status"
	else
		bad "after ExecReload= ($reload): $(tail -n 5 "$work/run-server.log") $(cat "$work/status")"
	fi
	kill -TERM $spid 2>/dev/null
	i=0
	while kill -0 $spid 2>/dev/null && [ $i -lt 150 ]; do sleep 0.1; i=$((i + 1)); done
	if kill -0 $spid 2>/dev/null; then
		kill -KILL $spid 2>/dev/null
		bad "the server did not stop within TimeoutStopSec (15 s) of SIGTERM"
	else
		wait $spid; rc=$?
		[ $rc -eq 0 ] && echo "ok: SIGTERM stops the server, status 0" ||
		    bad "the server exited $rc on SIGTERM: $(tail -n 5 "$work/run-server.log")"
	fi
	kill $npid 2>/dev/null; wait $npid 2>/dev/null
	echo "notify messages: $(tr '\n' '|' <"$work/notify.log")"
else
	echo "note: no openssl or python3; the units' command lines not started"
fi
# Maintainer scripts.
if [ -f "$work/ctl/postinst" ] && sh -n "$work/ctl/postinst"; then
	grep -q 'adduser --system' "$work/ctl/postinst" &&
	    echo "ok: postinst creates the system user" ||
	    bad "postinst does not create the user tunsplit"
	grep -q 'deb-systemd-helper' "$work/ctl/postinst" &&
	    echo "ok: postinst has debhelper's unit snippet" ||
	    bad "postinst lacks debhelper's systemd snippet"
	# Enabled only again if the admin had enabled it (was-enabled),
	# never started: the units need a configuration first.
	en=$(grep -c 'deb-systemd-helper enable' "$work/ctl/postinst")
	was=$(grep -c 'deb-systemd-helper --quiet was-enabled' "$work/ctl/postinst")
	if [ "$en" -gt "$was" ] ||
	    grep -qE 'deb-systemd-invoke[^#]*(start|restart)' "$work/ctl/postinst"; then
		bad "postinst enables or starts a unit (they need a configuration first)"
	else
		echo "ok: postinst neither enables nor starts the units"
	fi
else
	bad "no postinst, or it does not parse"
fi
if command -v lintian >/dev/null 2>&1; then
	if lintian --fail-on error "$deb" >"$work/lintian" 2>&1; then
		echo "ok: lintian: no error ($(grep -c '^W:' "$work/lintian") warnings)"
	else
		cat "$work/lintian"
		bad "lintian reports errors"
	fi
else
	echo "note: no lintian; not run"
fi
[ "$fail" -eq 0 ] || { echo "FAIL: $fail package checks"; exit 1; }
echo "ok: $(basename "$deb") builds and holds what the units run"
