#!/bin/sh
# tunsplit-route up/down round trip in a private network namespace, once per
# shell that can run the script (dash, bash, busybox ash when installed).
#
# Topology inside the namespace tsr$$: a TUN ts0 (nobody reads it) and a
# veth pair "LAN" lan0 192.168.77.1/24, fd00:77::1/64 with default routes
# via 192.168.77.254 and fd00:77::fe.  Nothing is ever sent: every check is
# an `ip route get`, which only asks the routing tables.
#
# Checked: rules and table contents after up; lookups go to ts0, excluded
# CIDRs, server addresses and marked lookups go to the main table, LAN
# addresses stay on the LAN; with --dns, port 53 (UDP, TCP) to a LAN
# address goes to ts0 unless excluded or marked; a second up changes
# nothing; with ts0 deleted lookups fail (fail-closed); --ipv6 block
# refuses IPv6 that would leave by the default route; up after the TUN is
# recreated restores it; up with other exclusions removes the old ones;
# down restores `ip rule` and `ip route show table all` (both families)
# byte for byte, and leaves alone a rule that was there before and
# identical to one of ours; bad options and a missing device change
# nothing; a failure half-way through up is undone; --uid-exclude keeps
# those users out of the TUN (refused when the main table has no route),
# --uid-include keeps everybody else out, bad ranges change nothing.
set -u

name=route_roundtrip
srcdir=${TS_SRCDIR:-$(cd "$(dirname "$0")/../../.." && pwd)}
script=$srcdir/src/route/tunsplit-route

skip() { printf 'SKIP: %s: %s\n' "$name" "$*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces)"
command -v ip >/dev/null 2>&1 || skip "no ip"
[ -c /dev/net/tun ] || skip "no /dev/net/tun"
[ -r "$script" ] || { echo "FAIL: $name: $script missing"; exit 1; }

ns=tsr$$
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tunsplit-$name.XXXXXX")
failed=0
# shellcheck disable=SC2317 # called by the trap
cleanup() {
	rc=$?
	trap - EXIT INT TERM HUP
	ip netns del "$ns" 2>/dev/null
	if [ "$failed" = 1 ] || [ -n "${TS_KEEP:-}" ]; then
		printf '%s: files kept in %s\n' "$name" "$tmp"
	else
		rm -rf "$tmp"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'failed=1; exit 1' INT TERM HUP

shell=
fail() {
	failed=1
	printf 'FAIL: %s [%s]: %s\n' "$name" "$shell" "$*"
	[ -f "$tmp/out" ] && { echo "--- last output:"; cat "$tmp/out"; }
	exit 1
}
log() { printf '%s [%s]: %s\n' "$name" "$shell" "$*"; }

NFT=$(command -v nft 2>/dev/null)
TO=
command -v timeout >/dev/null 2>&1 && TO="timeout 60"

# tr ARGS...: run the script in the namespace; output in $tmp/out, status
# in $rc.
tr_() {
	# shellcheck disable=SC2086 # $TO and $shell are command words
	ip netns exec "$ns" $TO $shell "$script" "$@" --state-dir "$tmp/state" \
	    >"$tmp/out" 2>&1
	rc=$?
}
expect_rc() {	# expect_rc N WHAT
	[ "$rc" -eq "$1" ] || fail "$2: exit status $rc, wanted $1"
}
expect_out() {	# expect_out PATTERN WHAT
	grep -q -e "$1" "$tmp/out" || fail "$2: output lacks '$1'"
}

snap() {	# snap FILE: everything up and down may touch
	{
		ip -n "$ns" -4 rule show
		ip -n "$ns" -6 rule show
		ip -n "$ns" -4 route show table all
		ip -n "$ns" -6 route show table all
		printf 'src_valid_mark=%s\n' "$(ip netns exec "$ns" \
		    cat /proc/sys/net/ipv4/conf/all/src_valid_mark)"
		[ -z "$NFT" ] || ip netns exec "$ns" nft list ruleset
	} >"$1" 2>&1
}
same() {	# same A B WHAT
	cmp -s "$1" "$2" && return 0
	diff -u "$1" "$2"
	fail "$3"
}

route_via() {	# route_via WANT ARGS...: ip route get ARGS shows WANT
	want=$1
	shift
	got=$(ip -n "$ns" route get "$@" 2>&1) ||
	    fail "ip route get $*: $got"
	case $got in *"$want"*) ;; *) fail "ip route get $*: '$got', wanted '$want'" ;; esac
}
route_lan() {	# route_lan ADDR: on the link, no gateway
	route_via "dev lan0" "$1"
	case $got in *' via '*) fail "ip route get $1: '$got', wanted no gateway" ;; esac
}
route_blocked() {	# route_blocked ARGS...: the lookup fails
	if got=$(ip -n "$ns" route get "$@" 2>&1); then
		fail "ip route get $* resolves ('$got'); wanted unreachable"
	fi
	case $got in
	*unreachable*|*'No route to host'*) ;;
	*) fail "ip route get $*: '$got', wanted unreachable" ;;
	esac
}

has_rule() {	# has_rule FAM TEXT: ip -FAM rule shows the line TEXT
	ip -n "$ns" "-$1" rule show | grep -qxF -e "$2" ||
	    fail "no IPv$1 rule '$2'"
}
no_rule() {
	if ip -n "$ns" "-$1" rule show | grep -qF -e "$2"; then
		fail "unexpected IPv$1 rule '$2'"
	fi
}

tun_add() {
	ip -n "$ns" tuntap add dev ts0 mode tun || fail "tuntap add ts0"
	ip -n "$ns" link set ts0 up
}

setup() {
	ip netns add "$ns" || fail "ip netns add $ns"
	ip -n "$ns" link set lo up
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 \
	    net.ipv6.conf.default.accept_dad=0 >/dev/null
	tun_add
	ip -n "$ns" link add lan0 type veth peer name lanp || fail "veth"
	ip -n "$ns" link set lan0 up
	ip -n "$ns" link set lanp up
	ip -n "$ns" addr add 192.168.77.1/24 dev lan0
	ip -n "$ns" addr add fd00:77::1/64 dev lan0 nodad
	ip -n "$ns" route add default via 192.168.77.254 || fail "default route"
	ip -n "$ns" -6 route add default via fd00:77::fe || fail "default6"
	# Somebody else's: a rule at our priority, and one identical to ours.
	ip -n "$ns" rule add from 192.0.2.99 lookup main pref 7350
	ip -n "$ns" -6 rule add lookup main suppress_prefixlength 0 pref 7353
	rm -rf "$tmp/state"
}

exclude_file() {
	printf '# exclusions\n\n198.51.100.0/24   # a comment\r\n  2001:db8:5::/48\n' \
	    >"$tmp/excl"
	printf '10.0.0.0/8\nnot-a-cidr\n' >"$tmp/excl.bad"
}

OPTS="--dev ts0 --exclude 10.99.0.0/16 --exclude 2001:db8:1::/48
    --exclude-file $tmp/excl --server 10.77.1.2 --server fd77:1::2 --dns
    --exclude 192.168.77.53"

run_one() {
	shell=$1
	log "start"
	setup
	exclude_file
	snap "$tmp/s0"

	# ---- nothing set up: errors change nothing --------------------------
	tr_ --help; expect_rc 0 "--help"; expect_out '^usage: tunsplit-route' "--help"
	tr_ status --dev ts0; expect_rc 3 "status before up"
	expect_out 'state: none' "status before up"
	tr_ down --dev ts0; expect_rc 0 "down on a clean system"
	tr_ up --dev nosuch0; expect_rc 1 "up, absent device"
	expect_out 'device nosuch0 does not exist' "up, absent device"
	tr_ up --dev ts0 --exclude 10.0.0.300/8; expect_rc 2 "bad --exclude"
	tr_ up --dev ts0 --exclude 10.0.0.0/33; expect_rc 2 "bad prefix length"
	tr_ up --dev ts0 --exclude-file "$tmp/excl.bad"; expect_rc 1 "bad exclude file"
	expect_out "excl.bad:2: not a CIDR" "bad exclude file"
	tr_ up --dev ts0 --exclude-file "$tmp/nonexistent"; expect_rc 1 "missing exclude file"
	tr_ up --dev ts0 --table 254; expect_rc 2 "--table main"
	tr_ up --dev ts0 --mark 0; expect_rc 2 "--mark 0"
	tr_ up --dev ts0 --pref 32762; expect_rc 2 "--pref too high"
	tr_ up --dev 'a/b'; expect_rc 2 "device name with a slash"
	tr_ up --dev ts0 --bogus; expect_rc 2 "unknown option"
	tr_ up --dev ts0 --ipv6 off; expect_rc 2 "bad --ipv6"
	tr_ sideways; expect_rc 2 "unknown command"
	tr_; expect_rc 2 "no command"
	if command -v setpriv >/dev/null 2>&1; then
		# shellcheck disable=SC2086
		ip netns exec "$ns" setpriv --reuid=65534 --regid=65534 \
		    --clear-groups --inh-caps=-all $shell "$script" up --dev ts0 \
		    --state-dir "$tmp/state" >"$tmp/out" 2>&1
		rc=$?
		expect_rc 1 "up as nobody"
		expect_out 'needs root or CAP_NET_ADMIN' "up as nobody"
	fi
	snap "$tmp/s"
	same "$tmp/s0" "$tmp/s" "failed commands changed the routing"

	# Strict rp_filter without nft: up refuses, nothing changes.  The
	# tools the script uses, nft left out.
	mkdir -p "$tmp/nonft"
	for t in ip awk sed grep cat mktemp rm mv tr id printf head sort \
	    mkdir getent dash bash busybox; do
		tp=$(command -v "$t" 2>/dev/null) && ln -sf "$tp" "$tmp/nonft/$t"
	done
	ip netns exec "$ns" sysctl -qw net.ipv4.conf.lan0.rp_filter=1
	# shellcheck disable=SC2086
	ip netns exec "$ns" env PATH="$tmp/nonft" $shell "$script" up \
	    --dev ts0 --state-dir "$tmp/state" >"$tmp/out" 2>&1
	rc=$?
	expect_rc 1 "up, strict rp_filter, no nft"
	expect_out 'install nftables' "up, strict rp_filter, no nft"
	ip netns exec "$ns" sysctl -qw net.ipv4.conf.lan0.rp_filter=0
	snap "$tmp/s"
	same "$tmp/s0" "$tmp/s" "up without nft under strict rp_filter changed something"

	# A failure half-way (the last IPv6 rule) is undone: a fake ip that
	# refuses that one command.
	mkdir -p "$tmp/bin"
	realip=$(command -v ip)
	cat >"$tmp/bin/ip" <<EOF
#!/bin/sh
case "\$*" in
'-6 rule add not fwmark'*) echo 'RTNETLINK answers: Operation not permitted' >&2; exit 2 ;;
esac
exec $realip "\$@"
EOF
	chmod +x "$tmp/bin/ip"
	# shellcheck disable=SC2086
	ip netns exec "$ns" env PATH="$tmp/bin:$PATH" $shell "$script" up \
	    $OPTS --state-dir "$tmp/state" >"$tmp/out" 2>&1
	rc=$?
	expect_rc 1 "up with a failing ip"
	expect_out 'Operation not permitted' "up with a failing ip"
	snap "$tmp/s"
	same "$tmp/s0" "$tmp/s" "a failed up was not undone"
	[ -f "$tmp/state/ts0.state" ] && grep -qv '^#' "$tmp/state/ts0.state" &&
	    fail "a failed up left objects in the state"

	# ---- up ---------------------------------------------------------------
	# shellcheck disable=SC2086
	tr_ up $OPTS; expect_rc 0 "up"
	expect_out 'already present, left alone: ip -6 rule add lookup main suppress_prefixlength 0 pref 7353' \
	    "up next to an identical foreign rule"
	[ -f "$tmp/state/ts0.state" ] || fail "no state file after up"
	for f in 4 6; do
		has_rule "$f" "7350:	from all fwmark 0x7353 goto 7353"
		has_rule "$f" "7351:	from all ipproto udp dport 53 lookup 7353"
		has_rule "$f" "7352:	from all ipproto tcp dport 53 lookup 7353"
		has_rule "$f" "7353:	from all lookup main suppress_prefixlength 0"
		has_rule "$f" "7354:	not from all fwmark 0x7353 lookup 7353"
	done
	has_rule 4 "7350:	from all to 10.77.1.2 lookup main"
	has_rule 6 "7350:	from all to fd77:1::2 lookup main"
	if [ -n "$NFT" ]; then
		# Replies to the marked sockets get their mark back, and
		# the reverse-path lookup uses it.
		ip netns exec "$ns" nft list table inet tunsplit_ts0 >"$tmp/nft" 2>&1 ||
		    fail "no nftables table tunsplit_ts0 after up: $(cat "$tmp/nft")"
		grep -q 'meta mark 0x00007353 ct mark set meta mark' "$tmp/nft" &&
		    grep -q 'ct mark 0x00007353 meta mark set ct mark' "$tmp/nft" ||
		    fail "nftables table tunsplit_ts0: $(cat "$tmp/nft")"
		[ "$(ip netns exec "$ns" cat /proc/sys/net/ipv4/conf/all/src_valid_mark)" = 1 ] ||
		    fail "src_valid_mark not 1 after up"
	fi
	ip -n "$ns" -4 route show table 7353 >"$tmp/t4"
	ip -n "$ns" -6 route show table 7353 >"$tmp/t6"
	for f in 4 6; do
		grep -q '^default dev ts0' "$tmp/t$f" || fail "IPv$f: no default dev ts0 in table 7353"
		grep -q '^unreachable default .*metric 4294967295' "$tmp/t$f" ||
		    fail "IPv$f: no fail-closed route in table 7353"
	done
	route_via "dev ts0" 10.98.0.1
	route_via "dev ts0" 2001:db8:2::1
	route_via "via 192.168.77.254 dev lan0" 10.99.0.1	# --exclude
	route_via "via fd00:77::fe dev lan0" 2001:db8:1::5
	route_via "via 192.168.77.254 dev lan0" 198.51.100.5	# --exclude-file
	route_via "via fd00:77::fe dev lan0" 2001:db8:5::1
	route_via "via 192.168.77.254 dev lan0" 10.77.1.2	# --server
	route_via "via fd00:77::fe dev lan0" fd77:1::2
	route_via "via 192.168.77.254 dev lan0" 10.98.0.1 mark 0x7353
	route_via "via fd00:77::fe dev lan0" 2001:db8:2::1 mark 0x7353
	route_lan 192.168.77.9		# the LAN
	route_lan fd00:77::9
	for p in udp tcp; do		# --dns: port 53, LAN or not
		route_via "dev ts0" 192.168.77.9 ipproto $p dport 53
		route_via "dev ts0" fd00:77::9 ipproto $p dport 53
		route_via "dev ts0" 10.98.0.1 ipproto $p dport 53
		route_via "via 192.168.77.254 dev lan0" 10.99.0.1 ipproto $p dport 53
		route_lan 192.168.77.9 ipproto $p dport 53 mark 0x7353
		route_lan 192.168.77.53 ipproto $p dport 53	# excluded
	done
	route_lan 192.168.77.9 ipproto udp dport 54
	tr_ status --dev ts0; expect_rc 0 "status"
	expect_out '^    default dev ts0' "status"
	expect_out 'not from all fwmark 0x7353 lookup 7353' "status"
	expect_out '(and 3 throw routes' "status"

	# ---- idempotent ---------------------------------------------------------
	snap "$tmp/s1"
	cp "$tmp/state/ts0.state" "$tmp/state1"
	# shellcheck disable=SC2086
	tr_ up $OPTS; expect_rc 0 "second up"
	snap "$tmp/s"
	same "$tmp/s1" "$tmp/s" "a second up changed the routing"
	same "$tmp/state1" "$tmp/state/ts0.state" "a second up changed the state"

	# ---- fail-closed --------------------------------------------------------
	ip -n "$ns" link del ts0 || fail "link del ts0"
	route_blocked 10.98.0.1
	route_blocked 2001:db8:2::1
	route_via "via 192.168.77.254 dev lan0" 10.99.0.1
	route_via "via 192.168.77.254 dev lan0" 10.98.0.1 mark 0x7353
	route_lan 192.168.77.9
	tr_ status --dev ts0; expect_rc 0 "status without the TUN"
	expect_out 'absent: traffic for the tunnel is dropped' "status without the TUN"
	# shellcheck disable=SC2086
	tr_ up $OPTS; expect_rc 1 "up without the TUN"
	expect_out 'device ts0 does not exist' "up without the TUN"

	# The daemon comes back: its TUN is new, up again restores the route.
	tun_add
	route_blocked 10.98.0.1
	# shellcheck disable=SC2086
	tr_ up $OPTS; expect_rc 0 "up after the TUN came back"
	route_via "dev ts0" 10.98.0.1
	snap "$tmp/s"
	same "$tmp/s1" "$tmp/s" "up after the TUN came back"

	# ---- other options: the old objects go ---------------------------------
	tr_ up --dev ts0 --exclude 10.98.0.0/16 --server 10.77.1.3
	expect_rc 0 "up with other options"
	route_via "dev ts0" 10.99.0.1
	route_via "via 192.168.77.254 dev lan0" 10.98.0.1
	route_via "dev ts0" 10.77.1.2
	route_via "via 192.168.77.254 dev lan0" 10.77.1.3
	route_via "dev ts0" 2001:db8:1::5
	no_rule 4 "to 10.77.1.2 lookup"
	no_rule 6 "to fd77:1::2 lookup"
	no_rule 4 "dport 53"
	no_rule 6 "goto"
	route_lan 192.168.77.9 ipproto udp dport 53
	ip -n "$ns" -6 route show table 7353 | grep -q throw &&
	    fail "stale IPv6 throw routes left"

	# ---- down ---------------------------------------------------------------
	tr_ down --dev ts0; expect_rc 0 "down"
	[ -f "$tmp/state/ts0.state" ] && fail "state file left after down"
	snap "$tmp/s"
	same "$tmp/s0" "$tmp/s" "down did not restore the routing exactly"
	tr_ down --dev ts0; expect_rc 0 "second down"
	snap "$tmp/s"
	same "$tmp/s0" "$tmp/s" "a second down changed the routing"

	# ---- --no-ipv6 --no-fail-closed, options given as --opt=value ----------
	tr_ up --dev=ts0 --no-ipv6 --no-fail-closed --table=100 --mark=77 \
	    --pref=1000
	expect_rc 0 "up --no-ipv6 --no-fail-closed"
	has_rule 4 "1004:	not from all fwmark 0x4d lookup 100"
	no_rule 6 "lookup 100"
	ip -n "$ns" -4 route show table 100 | grep -q unreachable &&
	    fail "--no-fail-closed added an unreachable route"
	route_via "dev ts0" 10.98.0.1
	route_via "via fd00:77::fe dev lan0" 2001:db8:2::1
	ip -n "$ns" link del ts0
	route_via "via 192.168.77.254 dev lan0" 10.98.0.1	# fails open
	tun_add
	tr_ down --dev ts0; expect_rc 0 "down after --no-ipv6"
	snap "$tmp/s"
	same "$tmp/s0" "$tmp/s" "down after --no-ipv6"

	# ---- --ipv6 block: a TUN without IPv6; refused even without
	# fail-closed, local networks and marked sockets still reach IPv6 ----
	tr_ up --dev ts0 --ipv6=block --no-fail-closed --exclude 2001:db8:1::/48
	expect_rc 0 "up --ipv6 block"
	ip -n "$ns" -6 route show table 7353 | grep -q 'dev ts0' &&
	    fail "--ipv6 block: an IPv6 route into ts0"
	route_via "dev ts0" 10.98.0.1
	route_blocked 2001:db8:2::1
	route_lan fd00:77::9
	route_via "via fd00:77::fe dev lan0" 2001:db8:2::1 mark 0x7353
	route_via "via fd00:77::fe dev lan0" 2001:db8:1::5	# --exclude
	ip -n "$ns" link del ts0
	route_blocked 2001:db8:2::1
	tun_add
	tr_ down --dev ts0; expect_rc 0 "down after --ipv6 block"
	snap "$tmp/s"
	same "$tmp/s0" "$tmp/s" "down after --ipv6 block"

	# ---- per-user routing: excluded uids never enter the TUN, not even
	# when the main table has no route for them ----
	tr_ up --dev ts0 --uid-exclude 1000-1999 --uid-exclude 5000
	expect_rc 0 "up --uid-exclude"
	has_rule 4 "7350:	from all uidrange 1000-1999 lookup main"
	has_rule 6 "7350:	from all uidrange 5000-5000 unreachable"
	route_via "dev ts0" 10.98.0.1 uid 0
	route_via "dev ts0" 10.98.0.1 uid 2000
	route_via "via 192.168.77.254 dev lan0" 10.98.0.1 uid 1000
	route_via "via 192.168.77.254 dev lan0" 10.98.0.1 uid 1999
	route_via "via fd00:77::fe dev lan0" 2001:db8:2::1 uid 5000
	route_via "dev ts0" 2001:db8:2::1 uid 5001
	ip -n "$ns" -4 route del default
	route_blocked 10.98.0.1 uid 1500		# no main route: refused
	route_via "dev ts0" 10.98.0.1 uid 2000
	ip -n "$ns" -4 route add default via 192.168.77.254
	tr_ up --dev ts0 --uid-include 1000-1999 --uid-include 1500-2500
	expect_rc 0 "up --uid-include"
	no_rule 4 "uidrange 1000-1999"
	route_via "via 192.168.77.254 dev lan0" 10.98.0.1 uid 0
	route_via "via 192.168.77.254 dev lan0" 10.98.0.1 uid 999
	route_via "dev ts0" 10.98.0.1 uid 1000
	route_via "dev ts0" 10.98.0.1 uid 2500
	route_via "via 192.168.77.254 dev lan0" 10.98.0.1 uid 2501
	route_via "via 192.168.77.254 dev lan0" 10.98.0.1 uid 4294967294
	tr_ up --dev ts0 --uid-include 1000 --uid-exclude 5
	expect_rc 2 "--uid-include with --uid-exclude"
	for bad in 5-3 x 4294967295 1-; do
		tr_ up --dev ts0 --uid-exclude "$bad"; expect_rc 2 "bad uid range $bad"
		expect_out "bad --uid-exclude" "bad uid range $bad"
	done
	route_via "dev ts0" 10.98.0.1 uid 1000		# unchanged by them
	tr_ down --dev ts0; expect_rc 0 "down after --uid-include"
	snap "$tmp/s"
	same "$tmp/s0" "$tmp/s" "down after --uid-include"

	ip netns del "$ns"
	log "ok"
}

shells="dash bash"
command -v busybox >/dev/null 2>&1 && busybox sh -c : 2>/dev/null &&
    shells="$shells busybox_sh"
ran=0
for s in $shells; do
	case $s in
	busybox_sh) s="busybox sh" ;;
	*) command -v "$s" >/dev/null 2>&1 || continue ;;
	esac
	run_one "$s"
	ran=$((ran + 1))
done
[ "$ran" -gt 0 ] || skip "no shell to run the script with"
printf 'PASS: %s: round trip under %s\n' "$name" "$shells"
exit 0
