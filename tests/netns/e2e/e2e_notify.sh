#!/bin/bash
# Life under systemd without systemd (lib.sh draws the topology): each
# daemon runs with $NOTIFY_SOCKET, as a Type=notify unit does, and a
# listener stands where systemd's socket would be (the server's a file,
# the client's an abstract '@' name inside its namespace).  The listener
# notes, the moment a message arrives, whether the server listens or the
# client's TUN is up.
#
#  1. READY=1 comes once flows can pass: the server listens already, the
#     client's TUN is up already; with nothing but that message awaited,
#     a download and an upload go through the tunnel intact (hashes);
#  2. SIGHUP: RELOADING=1 with MONOTONIC_USEC (CLOCK_MONOTONIC, before
#     the message arrived, within 5 s), then READY=1; the same for a
#     broken file (the old configuration keeps running);
#  3. SIGTERM: STOPPING=1, once, and no READY=1 after it; both exit;
#  4. logs for journald and routers: the server's stderr is "the
#     journal" (JOURNAL_STREAM names its log file's device and inode):
#     every line has a <N> priority (warnings <4>, run's certificate
#     check's too, <3> for a configuration error) and no timestamp;
#     with log.flows off
#     it logs no line per session, while the client (log.flows on) logs
#     one per flow.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_notify

ts_topology_up
ts_make_pki
ts_write_configs
# The server keeps the default: no per-flow lines.
sed -i 's/^log: {level: \(.*\), flows: true}$/log: {level: \1}/' \
    "$TS_TMP/server.yaml"
grep -q '^log: {level: [a-z]*}$' "$TS_TMP/server.yaml" ||
    ts_fail "could not turn log.flows off in server.yaml"
ts_start_target
ts_prove_no_forward "$TS_TARGET_PORT"

# notifyd SOCKET LOG [--port P | --ifname IF]: systemd's end of
# $NOTIFY_SOCKET.  One line per datagram: "T=<monotonic usec> <state
# with newlines as spaces> [listening=0|1] [tun=down|up]".
notifyd() {
	local ns=$1 name=$2
	shift 2
	ts_bg "$ns" "$name" "$TS_PY" -u -c '
import os, socket, sys, time
path, port, ifname = sys.argv[1], int(sys.argv[2]), sys.argv[3]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("\0" + path[1:] if path[0] == "@" else path)
print("bound", flush=True)
def listening():
    # /proc/net is this namespace'"'"'s: a socket in state 0A (LISTEN).
    want = ":%04X " % port
    for f in ("/proc/net/tcp", "/proc/net/tcp6"):
        for l in open(f).readlines()[1:]:
            w = l.split()
            if w[1].endswith(want[:-1]) and w[3] == "0A":
                return 1
    return 0
def tun():
    try:
        flags = int(open("/sys/class/net/%s/flags" % ifname).read(), 16)
    except OSError:
        return "absent"
    return "up" if flags & 1 else "down"
while True:
    m = s.recv(4096).decode()
    t = time.monotonic_ns() // 1000
    extra = " listening=%d" % listening() if port else ""
    if ifname != "-":
        extra += " tun=" + tun()
    print("T=%d %s%s" % (t, m.replace("\n", " "), extra), flush=True)
' "$@"
	NOTIFYD_PID=$TS_LAST_PID
	ts_wait_log "$TS_TMP/$name.log" '^bound$' ||
	    ts_fail "$name: the notify listener did not bind"
}
SNOTIFY=$TS_TMP/server-notify.sock
CNOTIFY=@tunsplit-e2e-notify-$$
notifyd "$NS_S" snotify "$SNOTIFY" "$TS_SERVER_PORT" -
notifyd "$NS_C" cnotify "$CNOTIFY" 0 "$TS_TUN"

# count LOG PATTERN: lines of a notify log matching an ERE.
count() { grep -cE -- "$2" "$TS_TMP/$1.log"; }
# await LOG PATTERN N WHAT: until LOG has N lines matching PATTERN (5 s).
await() {
	local i
	for i in $(seq 50); do
		[ "$(count "$1" "$2")" -ge "$3" ] && return 0
		sleep 0.1
	done
	ts_fail "$4: want $3 '$2' in $1.log, have: $(cat "$TS_TMP/$1.log")"
}

# ---- 1. READY=1 when flows can pass -----------------------------------------
: >"$TS_TMP/server.log"
JS=$(stat -c '%d:%i' "$TS_TMP/server.log")
ts_bg "$NS_S" server env NOTIFY_SOCKET="$SNOTIFY" JOURNAL_STREAM="$JS" \
    "$TUNSPLIT" run -c "$TS_TMP/server.yaml"
TS_SERVER_PID=$TS_LAST_PID
await snotify '^T=[0-9]+ READY=1 ' 1 "server start"
grep -qE '^T=[0-9]+ READY=1 listening=1$' "$TS_TMP/snotify.log" ||
    ts_fail "server: READY=1 before it listened: $(cat "$TS_TMP/snotify.log")"
ts_log "server: READY=1, listening already"

ts_bg "$NS_C" client env NOTIFY_SOCKET="$CNOTIFY" \
    "$TUNSPLIT" run -c "$TS_TMP/client.yaml"
TS_CLIENT_PID=$TS_LAST_PID
await cnotify '^T=[0-9]+ READY=1 ' 1 "client start"
grep -qE '^T=[0-9]+ READY=1 tun=up$' "$TS_TMP/cnotify.log" ||
    ts_fail "client: READY=1 before its TUN was up: $(cat "$TS_TMP/cnotify.log")"
# No waiting beyond READY=1: routes, then traffic at once.
ip -n "$NS_C" route add "$TS_T_NET4" dev "$TS_TUN" || ts_fail "route v4"
ip -n "$NS_C" -6 route add "$TS_T_NET6" dev "$TS_TUN" || ts_fail "route v6"
ts_log "client: READY=1, TUN up already"
ts_updown "after READY=1" "$TS_T_ADDR4" "$TS_TARGET_PORT" 41 $((1 << 20))

# ---- 2. reload: RELOADING=1 + MONOTONIC_USEC, then READY=1 -------------------
# reloading LOG N: the Nth RELOADING=1 is well formed and followed by a
# READY=1.
reloading() {
	local l t m
	await "$1" '^T=[0-9]+ RELOADING=1 ' "$2" "$1: reload $2"
	await "$1" '^T=[0-9]+ READY=1' $(($2 + 1)) "$1: READY=1 after reload $2"
	l=$(grep -E '^T=[0-9]+ RELOADING=1 ' "$TS_TMP/$1.log" | sed -n "${2}p")
	t=${l%% *} t=${t#T=}
	m=$(printf '%s\n' "$l" | sed -nE 's/^T=[0-9]+ RELOADING=1 MONOTONIC_USEC=([0-9]+)( .*)?$/\1/p')
	[ -n "$m" ] || ts_fail "$1: malformed: '$l'"
	[ "$m" -le "$t" ] && [ $((t - m)) -lt 5000000 ] ||
	    ts_fail "$1: MONOTONIC_USEC=$m, received at $t"
	# The order: RELOADING=1 came before this READY=1.
	grep -E '^T=[0-9]+ (RELOADING|READY)=1' "$TS_TMP/$1.log" |
	    sed -n "$(($2 * 2)),$(($2 * 2 + 1))p" | cut -d ' ' -f 2 |
	    tr '\n' ' ' | grep -qx 'RELOADING=1 READY=1 ' ||
	    ts_fail "$1: reload $2 not RELOADING=1 then READY=1: $(cat "$TS_TMP/$1.log")"
}
ts_reload "$TS_CLIENT_PID" "$TS_TMP/client.log" "client reload"
reloading cnotify 1
ts_reload "$TS_SERVER_PID" "$TS_TMP/server.log" "server reload"
reloading snotify 1
cp "$TS_TMP/client.yaml" "$TS_TMP/client-good.yaml"
printf 'client:\n  server: [}\n' >"$TS_TMP/client.yaml"
ts_hup "$TS_CLIENT_PID" "$TS_TMP/client.log" "keeping the running configuration" \
    "broken client reload"
reloading cnotify 2
cp "$TS_TMP/client-good.yaml" "$TS_TMP/client.yaml"
ts_log "SIGHUP (good and broken files): RELOADING=1 MONOTONIC_USEC=, then READY=1"
for i in $(seq 30); do	# the TUN's IPv6 address out of DAD
	[ -z "$(ip -n "$NS_C" -6 addr show dev "$TS_TUN" tentative)" ] && break
	sleep 0.1
done
ts_updown "after the reloads" "$TS_T_ADDR6" "$TS_TARGET_PORT" 42 $((1 << 20))

# ---- 3. SIGTERM: STOPPING=1 once -----------------------------------------------
# sentinel NS SOCKET: our own "END" datagram after the daemon's last;
# once the listener printed it, it has printed everything the daemon sent.
sentinel() {
	ip netns exec "$1" "$TS_PY" -c '
import socket, sys
p = sys.argv[1]
socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b"END",
    "\0" + p[1:] if p[0] == "@" else p)' "$2" || ts_fail "sentinel to $2"
}
for who in client server; do
	if [ $who = client ]; then pid=$TS_CLIENT_PID; else pid=$TS_SERVER_PID; fi
	kill -TERM "$pid"
	for i in $(seq 100); do ts_any_running "$pid" || break; sleep 0.1; done
	ts_any_running "$pid" && ts_fail "$who did not exit within 10 s of SIGTERM"
	wait "$pid"
	rc=$?
	[ $rc = 0 ] || ts_fail "$who exited $rc after SIGTERM"
	l=${who:0:1}notify
	if [ $who = client ]; then
		sentinel "$NS_C" "$CNOTIFY"
	else
		sentinel "$NS_S" "$SNOTIFY"
	fi
	await $l '^T=[0-9]+ END' 1 "$who: sentinel"
	[ "$(count $l '^T=[0-9]+ STOPPING=1')" = 1 ] ||
	    ts_fail "$who: want one STOPPING=1: $(cat "$TS_TMP/$l.log")"
	tail -n 2 "$TS_TMP/$l.log" | head -n 1 | grep -qE '^T=[0-9]+ STOPPING=1' ||
	    ts_fail "$who: something after STOPPING=1: $(cat "$TS_TMP/$l.log")"
done
ts_log "SIGTERM: STOPPING=1 once, the last word of each; both exited 0"

# ---- 4. journald priorities; per-flow lines only with log.flows ---------------
# run's own certificate check ("tunsplit run: cert ...: warning: expires
# ...": the test certificate lives two days) counts as a warning too.
bad=$(grep -vE '^<[3467]>((error|warn|info|debug): |tunsplit run: )' \
    "$TS_TMP/server.log" | head -n 3)
[ -z "$bad" ] || ts_fail "server lines without a priority prefix: $bad"
bad=$(grep -E 'warning: ' "$TS_TMP/server.log" | grep -v '^<4>' | head -n 3)
[ -z "$bad" ] || ts_fail "server warnings not at <4>: $bad"
grep -q '^<6>info: reloaded ' "$TS_TMP/server.log" ||
    ts_fail "server: no '<6>info: reloaded' line: $(head -n 5 "$TS_TMP/server.log")"
grep -qE '^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:.]+ info: ' "$TS_TMP/client.log" ||
    ts_fail "client (no journal): lines lost their timestamp"
# A configuration error, before any logging is set up: <3> as well.
printf 'client:\n  server: [}\n' >"$TS_TMP/bad.yaml"
: >"$TS_TMP/bad.log"
JOURNAL_STREAM=$(stat -c '%d:%i' "$TS_TMP/bad.log") "$TUNSPLIT" run \
    -c "$TS_TMP/bad.yaml" 2>>"$TS_TMP/bad.log"
rc=$?
[ $rc = 3 ] || ts_fail "run with a broken file exited $rc, want 3"
grep -q "^<3>$TS_TMP/bad.yaml:2:" "$TS_TMP/bad.log" ||
    ts_fail "config error not at <3>: $(cat "$TS_TMP/bad.log")"
grep -q ': closed: ' "$TS_TMP/server.log" &&
    ts_fail "server logged sessions with log.flows off: $(grep -m 2 ': closed: ' "$TS_TMP/server.log")"
n=$(grep -cE 'info: (worker [0-9]+: )?flow [0-9]+ [^ ]+: [^,]+, up [0-9]+ down [0-9]+ bytes' \
    "$TS_TMP/client.log")
[ "$n" -ge 4 ] ||
    ts_fail "client (log.flows: true) logged $n flow lines, want >= 4: $(grep -m 5 'flow' "$TS_TMP/client.log")"
ts_log "journal: $(wc -l <"$TS_TMP/server.log") server lines, each with <N>; no session lines without log.flows; $n flow lines with it"
ts_pass
