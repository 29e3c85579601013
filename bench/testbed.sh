#!/bin/sh
# Network namespaces for the benchmark.
#
#   tsb-client               tsb-server                         tsb-target
#   lkc 10.201.1.1  ==link==  lks 10.201.1.2
#       fd00:201:1::1             fd00:201:1::2
#                             ts-s2t 10.201.2.1  ----veth----  ts-t2s 10.201.2.2
#                                    fd00:201:2::1                    fd00:201:2::2
#                                                               iperf3 -s :5201
#                                                               nginx :80 (files)
#                                                               UDP echo :7
#
# "link" is linkem (bench/linkem.c, two TUNs, impairments given after --) or,
# with --veth, a plain veth pair with the same names and addresses.  The
# client reaches the target subnet through the server, which forwards; the
# target routes all of 10.201.0.0/16 and fd00:201::/32 back through the
# server, so tunnels may put their own subnets there.  No namespace has a
# default route: nothing can leave for an address outside them.
#
# usage: testbed.sh up [--veth] [-- LINKEM-OPTIONS]   (re)create, idempotent
#        testbed.sh reload -- [--loss P] [--seed N] [--ge ...]
#                                                      change linkem's loss
#                                                      live (no restart: the
#                                                      TUNs and connections
#                                                      across them stay)
#        testbed.sh down                               remove everything
#        testbed.sh check                              ping, HTTP, UDP, iperf3
#        testbed.sh services                           restart iperf3, start
#                                                      any dead service
#        testbed.sh status
#
# Environment: LINKEM (linkem binary; built into $TSB_RUN when unset and
# not found), RRLAT (bench/rrlat.c's binary: when set, an rrlat echo server
# listens on the target's port 7001), TSB_RUN (state directory, default
# /run/tsb), TSB_LOCK (default /run/tsb.lock: up, down and services hold it,
# unless run.sh, which holds it for the whole run, says so with
# TSB_LOCK_HELD=1).

set -eu

NS_C=tsb-client
NS_S=tsb-server
NS_T=tsb-target
TSB_RUN=${TSB_RUN:-/run/tsb}
HERE=$(cd "$(dirname "$0")" && pwd)
FILE_SIZES="1k 10k 100k 1m 10m"

die() { echo "testbed: $*" >&2; exit 1; }
say() { echo "testbed: $*" >&2; }
nsx() { ns=$1; shift; ip netns exec "$ns" "$@"; }

ns_exists() { ip netns list | awk '{print $1}' | grep -qx "$1"; }

pid_alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }

pidfile_pid() { [ -f "$1" ] && head -n1 "$1" || true; }

# Stops one process we started, by the pid it recorded; waits for it.
pid_stop() {
	pid=$1
	pid_alive "$pid" || return 0
	kill -TERM "$pid" 2>/dev/null || true
	i=0
	while pid_alive "$pid" && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	if pid_alive "$pid"; then
		kill -KILL "$pid" 2>/dev/null || true
		sleep 0.1
	fi
}

find_linkem() {
	if [ -n "${LINKEM:-}" ]; then
		[ -x "$LINKEM" ] || die "LINKEM=$LINKEM is not executable"
		return
	fi
	if [ -x "$HERE/linkem" ]; then LINKEM=$HERE/linkem; return; fi
	LINKEM=$TSB_RUN/linkem
	if [ ! -x "$LINKEM" ] || [ "$HERE/linkem.c" -nt "$LINKEM" ]; then
		say "building $LINKEM"
		${CC:-cc} -O2 -Wall -D_GNU_SOURCE -o "$LINKEM" "$HERE/linkem.c" ||
		    die "cannot build linkem"
	fi
}

linkem_stop() {
	pid_stop "$(pidfile_pid "$TSB_RUN/linkem.pid")"
	rm -f "$TSB_RUN/linkem.pid"
}

ns_setup() {
	for ns in $NS_C $NS_S $NS_T; do
		ns_exists $ns || ip netns add $ns
		nsx $ns ip link set lo up
		# Long fat paths need windows above the defaults' 4-6 MB.
		nsx $ns sysctl -qw net.ipv4.tcp_rmem="4096 131072 33554432" \
		    net.ipv4.tcp_wmem="4096 16384 33554432" \
		    net.ipv4.tcp_no_metrics_save=1
	done
	nsx $NS_S sysctl -qw net.ipv4.ip_forward=1 \
	    net.ipv6.conf.all.forwarding=1
	if ! nsx $NS_S ip link show ts-s2t >/dev/null 2>&1; then
		ip -n $NS_S link add ts-s2t type veth peer name ts-t2s \
		    netns $NS_T
	fi
	nsx $NS_S ip addr replace 10.201.2.1/24 dev ts-s2t
	nsx $NS_S ip -6 addr replace fd00:201:2::1/64 dev ts-s2t nodad
	nsx $NS_S ip link set ts-s2t up
	nsx $NS_T ip addr replace 10.201.2.2/24 dev ts-t2s
	nsx $NS_T ip -6 addr replace fd00:201:2::2/64 dev ts-t2s nodad
	nsx $NS_T ip link set ts-t2s up
	nsx $NS_T ip route replace 10.201.0.0/16 via 10.201.2.1
	nsx $NS_T ip -6 route replace fd00:201::/32 via fd00:201:2::1
}

link_remove() {
	linkem_stop
	# Deleting one end of a veth pair removes both.
	if nsx $NS_C ip link show lkc >/dev/null 2>&1; then
		nsx $NS_C ip link del lkc
	fi
}

link_veth() {
	ip -n $NS_C link add lkc type veth peer name lks netns $NS_S
}

link_linkem() {
	find_linkem
	rm -f "$TSB_RUN/linkem.pid" "$TSB_RUN/linkem.json"
	setsid "$LINKEM" --a-netns $NS_C --a-name lkc --b-netns $NS_S \
	    --b-name lks --pidfile "$TSB_RUN/linkem.pid" \
	    --stats "$TSB_RUN/linkem.json" --ctl "$TSB_RUN/linkem.ctl" "$@" \
	    >"$TSB_RUN/linkem.log" 2>&1 \
	    9>&- &
	i=0
	while [ ! -s "$TSB_RUN/linkem.pid" ]; do
		[ $i -lt 50 ] || { cat "$TSB_RUN/linkem.log" >&2;
		    die "linkem did not start"; }
		sleep 0.1; i=$((i + 1))
	done
}

link_addresses() {
	nsx $NS_C ip link set lkc up
	nsx $NS_S ip link set lks up
	nsx $NS_C ip addr replace 10.201.1.1/24 dev lkc
	nsx $NS_C ip -6 addr replace fd00:201:1::1/64 dev lkc nodad
	nsx $NS_S ip addr replace 10.201.1.2/24 dev lks
	nsx $NS_S ip -6 addr replace fd00:201:1::2/64 dev lks nodad
	nsx $NS_C ip route replace 10.201.2.0/24 via 10.201.1.2 dev lkc
	nsx $NS_C ip -6 route replace fd00:201:2::/64 via fd00:201:1::2 dev lkc
}

nginx_conf() {
	cat <<EOF
worker_processes 1;
daemon on;
pid $TSB_RUN/nginx.pid;
error_log $TSB_RUN/nginx-error.log warn;
events { worker_connections 4096; }
http {
	access_log off;
	sendfile on;
	tcp_nodelay on;
	keepalive_requests 1000000;
	client_body_temp_path $TSB_RUN/nginx-tmp/body;
	proxy_temp_path $TSB_RUN/nginx-tmp/proxy;
	fastcgi_temp_path $TSB_RUN/nginx-tmp/fastcgi;
	uwsgi_temp_path $TSB_RUN/nginx-tmp/uwsgi;
	scgi_temp_path $TSB_RUN/nginx-tmp/scgi;
	default_type application/octet-stream;
	server {
		listen 10.201.2.2:80;
		listen [fd00:201:2::2]:80;
		root $TSB_RUN/www;
	}
}
EOF
}

services_start() {
	if ! pid_alive "$(pidfile_pid "$TSB_RUN/iperf3.pid")"; then
		rm -f "$TSB_RUN/iperf3.pid"
		# Daemons must not keep our caller's stdout/stderr open.
		nsx $NS_T iperf3 -s -D -p 5201 --pidfile "$TSB_RUN/iperf3.pid" \
		    --logfile "$TSB_RUN/iperf3.log" </dev/null >/dev/null 2>&1 \
		    9>&-
	fi
	if ! pid_alive "$(pidfile_pid "$TSB_RUN/nginx.pid")"; then
		mkdir -p "$TSB_RUN/www" "$TSB_RUN/nginx-tmp"
		for s in $FILE_SIZES; do
			case $s in
			*k) n=$((${s%k} * 1024)) ;;
			*m) n=$((${s%m} * 1048576)) ;;
			esac
			[ -f "$TSB_RUN/www/$s" ] ||
			    head -c $n /dev/urandom >"$TSB_RUN/www/$s"
		done
		chmod -R a+rX "$TSB_RUN/www"
		nginx_conf >"$TSB_RUN/nginx.conf"
		nsx $NS_T nginx -c "$TSB_RUN/nginx.conf" -p "$TSB_RUN" \
		    -e "$TSB_RUN/nginx-error.log" </dev/null >/dev/null 2>&1 \
		    9>&-
	fi
	for v in 4 6; do
		if ! pid_alive "$(pidfile_pid "$TSB_RUN/udpecho$v.pid")"; then
			# One child per peer echoes that peer's datagrams.
			# Not through nsx: $! must be socat itself, and a
			# function run in the background would hold our
			# caller's stderr.
			ip netns exec $NS_T socat -T 60 \
			    UDP$v-LISTEN:7,reuseaddr,fork PIPE \
			    </dev/null >/dev/null 2>&1 9>&- &
			echo $! >"$TSB_RUN/udpecho$v.pid"
		fi
	done
	if [ -n "${RRLAT:-}" ] &&
	    ! pid_alive "$(pidfile_pid "$TSB_RUN/rrlat.pid")"; then
		[ -x "$RRLAT" ] || die "RRLAT=$RRLAT is not executable"
		ip netns exec $NS_T "$RRLAT" -s -l 10.201.2.2 -p 7001 \
		    </dev/null >>"$TSB_RUN/rrlat.log" 2>&1 9>&- &
		echo $! >"$TSB_RUN/rrlat.pid"
	fi
	# iperf3 -D and nginx return before they listen; wait for both.
	i=0
	while [ "$(nsx $NS_T ss -Hltn '( sport = :5201 or sport = :80 )' |
	    wc -l)" -lt 3 ]; do
		[ $i -lt 50 ] || die "target services did not start"
		sleep 0.1; i=$((i + 1))
	done
	while [ -n "${RRLAT:-}" ] &&
	    [ -z "$(nsx $NS_T ss -Hltn 'sport = :7001')" ]; do
		[ $i -lt 100 ] || die "rrlat -s did not start"
		sleep 0.1; i=$((i + 1))
	done
}

cmd_up() {
	mode=linkem
	if [ "${1:-}" = "--veth" ]; then mode=veth; shift; fi
	if [ "${1:-}" = "--" ]; then shift; fi
	[ $mode = linkem ] || [ $# -eq 0 ] || die "--veth takes no linkem options"
	[ "$(id -u)" = 0 ] || die "must run as root"
	mkdir -p "$TSB_RUN"
	ns_setup
	link_remove
	if [ $mode = veth ]; then link_veth; else link_linkem "$@"; fi
	link_addresses
	echo "$mode $*" >"$TSB_RUN/link"
	services_start
	say "up ($mode${*:+: $*})"
}

# The loss options of a running linkem, replaced in place (linkem's --ctl
# file and SIGHUP); the rest of the link stays as it is.  The link line
# in $TSB_RUN/link is updated to match.
cmd_reload() {
	if [ "${1:-}" = "--" ]; then shift; fi
	pid=$(pidfile_pid "$TSB_RUN/linkem.pid")
	pid_alive "$pid" || die "reload: linkem is not running"
	for a in "$@"; do
		case $a in
		--loss|--seed|--ge) ;;
		--*)	die "reload: only --loss, --seed and --ge change live" ;;
		esac
	done
	n=$(grep -c 'reloaded\|ignored' "$TSB_RUN/linkem.log" || true)
	echo "$*" >"$TSB_RUN/linkem.ctl"
	kill -HUP "$pid"
	i=0
	# linkem answers with "reloaded", or says why it ignored the file.
	until [ "$(grep -c 'reloaded\|ignored' "$TSB_RUN/linkem.log" ||
	    true)" -gt "$n" ]; do
		[ $i -lt 50 ] || die "reload: linkem did not answer"
		sleep 0.02; i=$((i + 1))
	done
	tail -n 1 "$TSB_RUN/linkem.log" | grep -q '^linkem: reloaded' ||
	    die "reload: $(tail -n 1 "$TSB_RUN/linkem.log")"
	# Keep the record of the link in step: the options given replace
	# their old values, the others stay.
	old=$(cat "$TSB_RUN/link")
	for a in "$@"; do
		case $a in
		--*) old=$(echo "$old" | sed "s/ $a [^ ]*//") ;;
		esac
	done
	echo "$old $*" >"$TSB_RUN/link"
	say "reloaded ($*)"
}

cmd_down() {
	[ "$(id -u)" = 0 ] || die "must run as root"
	linkem_stop
	for ns in $NS_C $NS_S $NS_T; do
		ns_exists $ns || continue
		# Everything in our namespaces was started by us.
		for pid in $(ip netns pids $ns); do pid_stop "$pid"; done
		ip netns del $ns
	done
	rm -rf "$TSB_RUN"
}

cmd_check() {
	nsx $NS_C ping -q -c 3 -i 0.2 -W 3 10.201.2.2 >/dev/null ||
	    die "ping 10.201.2.2 failed"
	nsx $NS_C ping -6 -q -c 3 -i 0.2 -W 3 fd00:201:2::2 >/dev/null ||
	    die "ping fd00:201:2::2 failed"
	n=$(nsx $NS_C curl -s -o /dev/null -w '%{size_download}' -m 10 \
	    http://10.201.2.2/100k) || die "HTTP failed"
	[ "$n" = 102400 ] || die "HTTP: got $n bytes"
	n=$(nsx $NS_C curl -s -o /dev/null -w '%{size_download}' -m 10 \
	    'http://[fd00:201:2::2]/1k') || die "HTTP over IPv6 failed"
	[ "$n" = 1024 ] || die "HTTP over IPv6: got $n bytes"
	r=$(echo tsb-echo | nsx $NS_C socat -T 3 - UDP4:10.201.2.2:7) ||
	    die "UDP echo failed"
	[ "$r" = tsb-echo ] || die "UDP echo: got \"$r\""
	r=$(echo tsb-echo6 | nsx $NS_C socat -T 3 - UDP6:[fd00:201:2::2]:7) ||
	    die "UDP echo over IPv6 failed"
	[ "$r" = tsb-echo6 ] || die "UDP echo over IPv6: got \"$r\""
	nsx $NS_C iperf3 -c 10.201.2.2 -t 1 >/dev/null || die "iperf3 failed"
	say "check ok"
}

cmd_status() {
	ip netns list | grep tsb- || echo "no tsb namespaces"
	[ -f "$TSB_RUN/link" ] && echo "link: $(cat "$TSB_RUN/link")"
	for f in linkem iperf3 nginx udpecho4 udpecho6 rrlat; do
		pid=$(pidfile_pid "$TSB_RUN/$f.pid")
		if pid_alive "$pid"; then echo "$f: running ($pid)"; fi
	done
	return 0
}

cmd_services() {
	# A client killed mid-test can leave iperf3 -s waiting for ever.
	pid_stop "$(pidfile_pid "$TSB_RUN/iperf3.pid")"
	rm -f "$TSB_RUN/iperf3.pid"
	services_start
}

# One user of the fixed names at a time (see run.sh).
lock() {
	[ "${TSB_LOCK_HELD:-}" = 1 ] && return 0
	LOCK=${TSB_LOCK:-/run/tsb.lock}
	exec 9>>"$LOCK" || die "cannot open $LOCK"
	flock -w "${TSB_LOCK_WAIT:-0}" 9 ||
	    die "another bench run holds the lock ($LOCK: $(cat "$LOCK"))"
	echo "testbed.sh $1 pid $$" >"$LOCK"
}

case "${1:-}" in
up|down|services|reload) lock "$1" ;;
esac
case "${1:-}" in
up)	shift; cmd_up "$@" ;;
reload)	shift; cmd_reload "$@" ;;
services) cmd_services ;;
down)	cmd_down ;;
check)	cmd_check ;;
status)	cmd_status ;;
*)	sed -n 's/^# usage: /usage: /p; s/^#        testbed/       testbed/p' "$0" >&2
	exit 2 ;;
esac
