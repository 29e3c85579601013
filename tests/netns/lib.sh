# shellcheck shell=bash
# Shared set-up for the tunsplit end-to-end tests (and scripts/demo.sh).
# Source it from bash, then call ts_init NAME.
#
# Topology: three network namespaces per test run, suffixed with the PID of
# the test so that runs never clash.
#
#   tsc$$ (client)                 tss$$ (server)                  tst$$ (target)
#  +------------------+          +---------------------+          +-----------------+
#  | apps, tunsplit   |  veth    | tunsplit run        |  veth    | target servers  |
#  | client, ts0 TUN  |----------| ip_forward = 0      |----------| (tools.py serve,|
#  | 198.18.0.1/15    | eth0     | eth0         eth1   |     eth0 |  nginx)         |
#  | fdfe:dcba:9876::1|          |                     |          |                 |
#  | eth0 10.77.1.1/24|          | 10.77.1.2/24        |          | 10.77.2.2/24    |
#  |      fd77:1::1/64|          | fd77:1::2/64        |          | fd77:2::2/64    |
#  +------------------+          |         10.77.2.1/24|          | default via     |
#   routes: 10.77.2.0/24 dev ts0 |         fd77:2::1/64|          |  10.77.2.1 and  |
#           fd77:2::/64  dev ts0 +---------------------+          |  fd77:2::1      |
#                                                                 +-----------------+
#
# The server namespace does not forward, so the only way from tsc to tst is
# app -> ts0 -> tunsplit client -> TLS over 10.77.1.0/24 -> tunsplit server
# -> fresh TCP over 10.77.2.0/24 -> target.  ts_prove_no_forward checks that
# before the client starts.  Only addresses inside these namespaces are ever
# contacted.

TS_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TS_SRCDIR=${TS_SRCDIR:-$(cd "$TS_LIB_DIR/../.." && pwd)}
TS_TOOLS=$TS_LIB_DIR/tools.py
TS_PY=${PYTHON:-python3}

TS_C_ADDR4=10.77.1.1 TS_C_ADDR6=fd77:1::1
TS_S_ADDR4=10.77.1.2 TS_S_ADDR6=fd77:1::2
TS_S2_ADDR4=10.77.2.1 TS_S2_ADDR6=fd77:2::1
TS_T_ADDR4=10.77.2.2 TS_T_ADDR6=fd77:2::2
TS_T_NET4=10.77.2.0/24 TS_T_NET6=fd77:2::/64
TS_SERVER_PORT=8443
TS_TUN=ts0
TS_SNI=tunsplit.test

# A sanitizer's report in a log (ts_cleanup).
TS_SAN_RE='ERROR: (Address|Leak)Sanitizer|runtime error:|(WARNING|ERROR|FATAL): ThreadSanitizer'

TS_PIDS=()
TS_NSES=()
TS_FAILED=0
TS_DONE=0

ts_log() { printf '%s: %s\n' "$TS_NAME" "$*"; }

ts_skip() {
	printf 'SKIP: %s: %s\n' "$TS_NAME" "$*"
	TS_DONE=1
	exit 77
}

ts_pass() {
	printf 'PASS: %s: %s\n' "$TS_NAME" "$*"
	TS_DONE=1
	exit 0
}

ts_fail() {
	TS_FAILED=1
	printf 'FAIL: %s: %s\n' "$TS_NAME" "$*"
	ts_dump_logs
	TS_DONE=1
	exit 1
}

ts_dump_logs() {
	local f
	[ -n "${TS_TMP:-}" ] && [ -d "$TS_TMP" ] || return 0
	for f in "$TS_TMP"/*.log; do
		[ -f "$f" ] || continue
		printf '\n----- %s (last 60 lines) -----\n' "$(basename "$f")"
		tail -n 60 "$f"
	done
	printf -- '----- end of logs -----\n'
}

# ts_need PROGRAM PACKAGE: PROGRAM (in PATH or /usr/sbin), installing the
# Debian PACKAGE with apt-get when it is missing; skips the test (77) with
# a clear message only when that fails.  Call after ts_init.
ts_need() {
	command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] && return 0
	if command -v apt-get >/dev/null 2>&1; then
		DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y \
		    "$2" >>"$TS_TMP/apt.log" 2>&1
	fi
	command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] ||
	    ts_skip "Debian package '$2' cannot be installed ($(tail -n 1 "$TS_TMP/apt.log" 2>/dev/null))"
}

# ts_find_bench VAR NAME: VAR= the benchmark's program bench/NAME, from the
# environment (VAR already set), the build tree or beside the tunsplit
# binary; fails the test if it is not built.
ts_find_bench() {
	local t
	[ -n "${!1:-}" ] && return 0
	for t in "${TS_BUILDDIR:-}/bench/$2" \
	    "$(dirname "$TUNSPLIT")/bench/$2" "$TS_SRCDIR/bench/$2"; do
		[ -x "$t" ] && { printf -v "$1" %s "$t"; return 0; }
	done
	ts_fail "bench/$2 not built (make bench/$2)"
}

# ts_find_linkem: LINKEM= the benchmark's link emulator (bench/linkem).
ts_find_linkem() { ts_find_bench LINKEM linkem; }

# ts_init NAME: check we can run at all, then create the temp dir and the
# cleanup trap.  Exits 77 (skip) when not root or without /dev/net/tun.
ts_init() {
	TS_NAME=$1
	[ "$(id -u)" -eq 0 ] || ts_skip "needs root (network namespaces, TUN)"
	[ -c /dev/net/tun ] || ts_skip "no /dev/net/tun"
	local t
	for t in ip openssl "$TS_PY" timeout; do
		command -v "$t" >/dev/null 2>&1 || ts_skip "missing tool: $t"
	done
	TUNSPLIT=${TUNSPLIT:-}
	if [ -z "$TUNSPLIT" ]; then
		for t in "$TS_SRCDIR/tunsplit" "$TS_SRCDIR"/build*/tunsplit \
		    "$(command -v tunsplit 2>/dev/null)"; do
			[ -n "$t" ] && [ -x "$t" ] && { TUNSPLIT=$t; break; }
		done
	fi
	TS_TMP=$(mktemp -d "${TMPDIR:-/tmp}/tunsplit-$TS_NAME.XXXXXX")
	# Traversable for nginx workers (they drop to an unprivileged user);
	# key files inside stay 0600.
	chmod 711 "$TS_TMP"
	NS_C=tsc$$ NS_S=tss$$ NS_T=tst$$
	trap ts_cleanup EXIT
	trap 'ts_fail "interrupted by signal"' INT TERM HUP
	[ -n "$TUNSPLIT" ] && [ -x "$TUNSPLIT" ] ||
	    ts_fail "tunsplit binary not found (set TUNSPLIT=path)"
	# A global bound so that nothing ever hangs a test run.
	(
		trap 'kill "$sp" 2>/dev/null; exit 0' TERM
		sleep "${TS_DEADLINE:-900}" &
		sp=$!
		wait "$sp" && kill -TERM $$
	) >/dev/null 2>&1 &
	TS_WATCHDOG=$!
	ts_log "temp dir $TS_TMP, namespaces $NS_C $NS_S $NS_T, binary $TUNSPLIT"
}

ts_cleanup() {
	local rc=$? pid ns i f
	trap - EXIT INT TERM HUP
	# A trap that runs a command of its own first ('rm ...; ts_cleanup')
	# hands us that command's status, not the test's: ts_fail's word
	# counts.
	[ "$TS_FAILED" = 1 ] && [ "$rc" -eq 0 ] && rc=1
	[ "$TS_DONE" = 1 ] || { [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && {
		printf 'FAIL: %s: exited with status %d\n' "$TS_NAME" "$rc"
		ts_dump_logs; TS_FAILED=1; }; }
	[ -n "${TS_WATCHDOG:-}" ] && kill "$TS_WATCHDOG" 2>/dev/null
	for pid in "${TS_PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null
	done
	# Processes left inside our own namespaces are ours as well.
	for ns in "${TS_NSES[@]}"; do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do
			kill -TERM "$pid" 2>/dev/null
		done
	done
	# A daemon drains on the first SIGTERM and stops on the second; give
	# it a few seconds to exit on its own, which is when a sanitizer
	# build runs its leak check.
	sleep 0.1
	for pid in "${TS_PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null
	done
	for i in $(seq 50); do
		ts_any_running "${TS_PIDS[@]}" || break
		sleep 0.1
	done
	for pid in "${TS_PIDS[@]}"; do
		kill -KILL "$pid" 2>/dev/null
	done
	for ns in "${TS_NSES[@]}"; do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do
			kill -KILL "$pid" 2>/dev/null
		done
		ip netns del "$ns" 2>/dev/null
	done
	wait 2>/dev/null
	# Sanitizer builds (configure --enable-sanitizers, --enable-tsan):
	# any report in a log -- memory error, undefined behaviour, a leak
	# found at exit, a data race -- fails the test, even one that passed.
	if [ -n "${TS_TMP:-}" ] && [ "$rc" -ne 77 ] && grep -E -l \
	    "$TS_SAN_RE" "$TS_TMP"/*.log >"$TS_TMP/sanitizer.txt" 2>/dev/null; then
		printf 'FAIL: %s: sanitizer report in %s\n' "$TS_NAME" \
		    "$(tr '\n' ' ' <"$TS_TMP/sanitizer.txt")"
		while read -r f; do
			grep -E -A 30 "$TS_SAN_RE" "$f" | head -n 60
		done <"$TS_TMP/sanitizer.txt"
		TS_FAILED=1
		rc=1
	fi
	if [ -n "${TS_TMP:-}" ] && [ -d "$TS_TMP" ]; then
		if [ "$TS_FAILED" = 1 ] || [ -n "${TS_KEEP:-}" ]; then
			printf '%s: logs kept in %s\n' "$TS_NAME" "$TS_TMP"
		else
			rm -rf "$TS_TMP"
		fi
	fi
	exit "$rc"
}

# ---- topology --------------------------------------------------------------

ts_ns_add() {
	ip netns add "$1" || ts_fail "ip netns add $1"
	TS_NSES+=("$1")
	ip -n "$1" link set lo up
	# No duplicate address detection: addresses are usable at once.
	ts_sysctl "$1" net/ipv6/conf/all/accept_dad 0
	ts_sysctl "$1" net/ipv6/conf/default/accept_dad 0
}

# ts_sysctl NS KEY VALUE: set a per-namespace sysctl (no procps needed;
# /proc/sys/net belongs to the namespace of the process that opens it).
ts_sysctl() {
	ip netns exec "$1" sh -c 'echo "$2" >"/proc/sys/$1"' sh "$2" "$3"
}

ts_topology_up() {
	ts_ns_add "$NS_C"
	ts_ns_add "$NS_S"
	ts_ns_add "$NS_T"
	ip -n "$NS_C" link add eth0 type veth peer name eth0 netns "$NS_S" ||
	    ts_fail "veth client-server"
	ts_client_link_up eth0
	ts_target_link_up
	ts_log "topology up"
}

# ts_client_link_up DEV: the client-server link DEV (a veth, or one that
# bench/linkem made) up on both sides, with their addresses.
ts_client_link_up() {
	ip -n "$NS_C" addr add "$TS_C_ADDR4/24" dev "$1"
	ip -n "$NS_C" addr add "$TS_C_ADDR6/64" dev "$1" nodad
	ip -n "$NS_S" addr add "$TS_S_ADDR4/24" dev "$1"
	ip -n "$NS_S" addr add "$TS_S_ADDR6/64" dev "$1" nodad
	ip -n "$NS_C" link set "$1" up
	ip -n "$NS_S" link set "$1" up
}

# ts_count_syns: an nftables counter in the client namespace of the
# connections it opens to the server (SYNs without ACK); ts_syns prints
# its count so far.
ts_count_syns() {
	ip netns exec "$NS_C" nft -f - <<EOF || ts_fail "nftables counter"
table inet tssyns {
	counter syns { }
	chain out {
		type filter hook output priority 0; policy accept;
		ip daddr $TS_S_ADDR4 tcp dport $TS_SERVER_PORT tcp flags & (syn | ack) == syn counter name syns
	}
}
EOF
}
ts_syns() {
	ip netns exec "$NS_C" nft list counter inet tssyns syns |
	    sed -n 's/.*packets \([0-9]*\).*/\1/p'
}

# ts_start_linkem NAME NS ARGS...: bench/linkem (ts_find_linkem first)
# run in NS with ARGS, logging to NAME.log, its pid in $TS_TMP/NAME.pid,
# which it writes once its links exist: waited for, then in
# TS_LINKEM_PID.
ts_start_linkem() {
	local name=$1 ns=$2 i
	shift 2
	ts_bg "$ns" "$name" "$LINKEM" "$@" --pidfile "$TS_TMP/$name.pid"
	for i in $(seq 50); do
		[ -s "$TS_TMP/$name.pid" ] && break
		sleep 0.1
	done
	[ -s "$TS_TMP/$name.pid" ] ||
	    ts_fail "linkem $name did not start: $(tail -n 3 "$TS_TMP/$name.log")"
	TS_LINKEM_PID=$(cat "$TS_TMP/$name.pid")
}

# ts_target_link_up: the server-target veth of the topology above (eth1
# in the server namespace, eth0 in the target's), its addresses, the
# target's default routes, and no forwarding in the server namespace.
ts_target_link_up() {
	ip -n "$NS_T" link add eth0 type veth peer name eth1 netns "$NS_S" ||
	    ts_fail "veth target-server"
	ip -n "$NS_S" addr add "$TS_S2_ADDR4/24" dev eth1
	ip -n "$NS_S" addr add "$TS_S2_ADDR6/64" dev eth1 nodad
	ip -n "$NS_T" addr add "$TS_T_ADDR4/24" dev eth0
	ip -n "$NS_T" addr add "$TS_T_ADDR6/64" dev eth0 nodad
	ip -n "$NS_S" link set eth1 up
	ip -n "$NS_T" link set eth0 up
	ip -n "$NS_T" route add default via "$TS_S2_ADDR4"
	ip -n "$NS_T" -6 route add default via "$TS_S2_ADDR6"
	# The server namespace must never route between its two links.
	ts_sysctl "$NS_S" net/ipv4/ip_forward 0 &&
	    ts_sysctl "$NS_S" net/ipv6/conf/all/forwarding 0 ||
	    ts_fail "cannot disable forwarding in $NS_S"
}

# ts_lan_up: router mode's LAN, after ts_topology_up: a LAN host namespace
# NS_L (tsl$$) whose eth0 (L_ADDR4/L_ADDR6, MTU 1500) has its default
# routes via the client namespace's lan0 (R_ADDR4/R_ADDR6), which
# forwards.
ts_lan_up() {
	NS_L=tsl$$
	L_ADDR4=192.168.88.2 L_ADDR6=fd88::2
	R_ADDR4=192.168.88.1 R_ADDR6=fd88::1
	ts_ns_add "$NS_L"
	ip -n "$NS_L" link add eth0 type veth peer name lan0 netns "$NS_C" ||
	    ts_fail "veth LAN-router"
	ip -n "$NS_L" link set eth0 mtu 1500
	ip -n "$NS_C" link set lan0 mtu 1500
	ip -n "$NS_L" addr add "$L_ADDR4/24" dev eth0
	ip -n "$NS_L" addr add "$L_ADDR6/64" dev eth0 nodad
	ip -n "$NS_C" addr add "$R_ADDR4/24" dev lan0
	ip -n "$NS_C" addr add "$R_ADDR6/64" dev lan0 nodad
	ip -n "$NS_L" link set eth0 up
	ip -n "$NS_C" link set lan0 up
	ip -n "$NS_L" route add default via "$R_ADDR4"
	ip -n "$NS_L" -6 route add default via "$R_ADDR6"
	ts_sysctl "$NS_C" net/ipv4/ip_forward 1 &&
	    ts_sysctl "$NS_C" net/ipv6/conf/all/forwarding 1 ||
	    ts_fail "cannot enable forwarding in $NS_C"
	ip -n "$NS_L" link show eth0 | grep -q ' mtu 1500 ' ||
	    ts_fail "the LAN link's MTU is not 1500"
	ts_log "LAN $NS_L behind $NS_C (forwarding), LAN link MTU 1500"
}

# Prove that the target is unreachable from the client namespace without the
# tunnel, even with routes pointing at the server: the server does not
# forward.  The routes are removed again afterwards.
ts_prove_no_forward() {
	local port=${1:-9000}
	ip -n "$NS_C" route add "$TS_T_NET4" via "$TS_S_ADDR4" ||
	    ts_fail "temporary route"
	ip -n "$NS_C" -6 route add "$TS_T_NET6" via "$TS_S_ADDR6" ||
	    ts_fail "temporary route6"
	if ts_app probe --host "$TS_T_ADDR4" --port "$port" --timeout 2 \
	    >>"$TS_TMP/probe.log" 2>&1; then
		ts_fail "$TS_T_ADDR4:$port reachable without the tunnel (server namespace forwards?)"
	fi
	if ts_app probe --host "$TS_T_ADDR6" --port "$port" --timeout 2 \
	    >>"$TS_TMP/probe.log" 2>&1; then
		ts_fail "$TS_T_ADDR6 reachable without the tunnel (server namespace forwards?)"
	fi
	ip -n "$NS_C" route del "$TS_T_NET4" via "$TS_S_ADDR4"
	ip -n "$NS_C" -6 route del "$TS_T_NET6" via "$TS_S_ADDR6"
	ts_log "target unreachable without the tunnel (checked v4 and v6)"
}

# ---- certificates and configuration ---------------------------------------

ts_make_pki() {
	local d=$TS_TMP o
	o=$d/openssl.log
	printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:%s\n' \
	    "$TS_SNI" >"$d/server.ext"
	{
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
		    -nodes -keyout "$d/ca.key" -out "$d/ca.pem" -days 90 \
		    -subj "/CN=tunsplit throwaway test CA" &&
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
		    -nodes -keyout "$d/server.key" -out "$d/server.csr" \
		    -subj "/CN=$TS_SNI" &&
		openssl x509 -req -in "$d/server.csr" -CA "$d/ca.pem" \
		    -CAkey "$d/ca.key" -CAcreateserial -days 90 \
		    -extfile "$d/server.ext" -out "$d/server.pem" &&
		openssl verify -CAfile "$d/ca.pem" "$d/server.pem"
	} >"$o" 2>&1 || { cat "$o"; ts_fail "openssl: could not make the test PKI"; }
	chmod 600 "$d/ca.key" "$d/server.key"
	ts_log "throwaway CA and server certificate (SAN DNS:$TS_SNI) made"
}

# ts_client_outbounds TIMEOUT [TUNNEL_KEYS]: the head of a client
# configuration in the list form, for the tests with several outbounds
# (they set MARK): log, control socket, TUN, the socket mark,
# connect_timeout TIMEOUT, an outbound "tunnel" to the test's server
# (TUNNEL_KEYS, lines indented by 6, added to it) and "home", direct.
# The caller appends more outbounds, the rules and the rest.
ts_client_outbounds() {
	cat <<EOF
log: {level: info, flows: true}
control: $TS_TMP/client.sock
tun: {name: $TS_TUN, mtu: 9000, address: [198.18.0.1/15, "fdfe:dcba:9876::1/64"]}
client:
  mark: $MARK
  connect_timeout: $1${TS_CLIENT_WORKERS:+
  workers: $TS_CLIENT_WORKERS}
  outbounds:
    - name: tunnel
      server: "$TS_S_ADDR4:$TS_SERVER_PORT"
      sni: $TS_SNI
      ca: $TS_TMP/ca.pem
      key: "$TS_KEY"
EOF
	[ -z "${2:-}" ] || printf '%s\n' "$2"
	printf '    - name: home\n      protocol: direct\n'
}

# ts_write_configs [client-extra-yaml [server-extra-yaml]]
# Extra lines are appended inside the client:/server: sections (indent 2).
# TS_CLIENT_WORKERS=N sets the client's workers (any test, run by hand).
# log.flows is on: tests read the per-flow summaries (off by default).
ts_write_configs() {
	local key lvl=${TS_LOG_LEVEL:-info} w=${TS_CLIENT_WORKERS:-}
	case ${1:-} in *"  workers: "*) w= ;; esac	# the test's own
	key=$("$TUNSPLIT" genkey 2>"$TS_TMP/genkey.log") ||
	    ts_fail "tunsplit genkey failed: $(cat "$TS_TMP/genkey.log")"
	[ -n "$key" ] || ts_fail "tunsplit genkey printed nothing"
	TS_KEY=$key
	umask 077
	cat >"$TS_TMP/client.yaml" <<EOF
log: {level: $lvl, flows: true}
control: $TS_TMP/client.sock
tun: {name: $TS_TUN, mtu: ${TS_MTU:-9000}, address: [198.18.0.1/15, "fdfe:dcba:9876::1/64"]}
client:
  server: "$TS_S_ADDR4:$TS_SERVER_PORT"
  sni: $TS_SNI
  ca: $TS_TMP/ca.pem
  key: "$key"
  congestion: bbr
  max_flows: ${TS_MAX_FLOWS:-4096}
  connect_timeout: 10s
  idle_timeout: 5m${w:+
  workers: $w}
${1:-}
EOF
	cat >"$TS_TMP/server.yaml" <<EOF
log: {level: $lvl, flows: true}
control: $TS_TMP/server.sock
server:
  listen: ["$TS_S_ADDR4:$TS_SERVER_PORT", "[$TS_S_ADDR6]:$TS_SERVER_PORT"]
  cert: $TS_TMP/server.pem
  cert_key: $TS_TMP/server.key
  users: [{name: test, key: "$key"}]
  egress: {allow: [$TS_T_NET4, "$TS_T_NET6"]}
${2:-}
EOF
	umask 022
	"$TUNSPLIT" check -c "$TS_TMP/client.yaml" >"$TS_TMP/check-client.log" 2>&1 ||
	    ts_fail "tunsplit check rejects the client config: $(cat "$TS_TMP/check-client.log")"
	"$TUNSPLIT" check -c "$TS_TMP/server.yaml" >"$TS_TMP/check-server.log" 2>&1 ||
	    ts_fail "tunsplit check rejects the server config: $(cat "$TS_TMP/check-server.log")"
	ts_log "configs written and accepted by 'tunsplit check'"
}

# ts_server_users YAML-LIST: the server's users replaced (the line
# ts_write_configs wrote), and the file checked again.
ts_server_users() {
	sed -i "s|^  users: .*|  users: $1|" "$TS_TMP/server.yaml"
	"$TUNSPLIT" check -c "$TS_TMP/server.yaml" >"$TS_TMP/check-users.log" 2>&1 ||
	    ts_fail "server config with users $1: $(cat "$TS_TMP/check-users.log")"
}

# ---- processes --------------------------------------------------------------

# ts_bg NS LOGNAME CMD...: run CMD in namespace NS in the background, output
# appended to $TS_TMP/LOGNAME.log; the PID is left in TS_LAST_PID.  `ip netns
# exec` execs the command, so the PID is the command's own.
ts_bg() {
	local ns=$1 name=$2
	shift 2
	ip netns exec "$ns" "$@" >>"$TS_TMP/$name.log" 2>&1 </dev/null &
	TS_LAST_PID=$!
	TS_PIDS+=("$TS_LAST_PID")
}

ts_alive() { kill -0 "$1" 2>/dev/null; }

# The client's open fds.
# Open descriptors of PID and its worker processes (client.workers: its
# tunsplit children).
ts_fd_count() {
	local p n=0
	for p in $(ts_procs "$1"); do
		n=$((n + $(ls "/proc/$p/fd" 2>/dev/null | wc -l)))
	done
	echo "$n"
}
ts_fds() { ts_fd_count "$TS_CLIENT_PID"; }

# ts_procs PID: PID and its tunsplit children (a client's workers).
ts_procs() { echo "$1" $(pgrep -P "$1" -x tunsplit 2>/dev/null); }

# ts_fds_settle N [TENTHS]: up to TENTHS/10 s (default 3 s) for the
# client to hold N fds (a status command's control connection may linger
# a moment); true when it does.
ts_fds_settle() {
	local i
	for i in $(seq "${2:-30}"); do
		[ "$(ts_fds)" -eq "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

# ts_stalled N TAG: N app connections through the tunnel, each with a few
# bytes sent; they reset (SO_LINGER 0) once $TS_TMP/TAG.go exists.
ts_stalled() {
	ip netns exec "$NS_C" timeout 60 "$TS_PY" -u -c '
import os, socket, struct, sys, time
n, host, port, go = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
socks = []
for i in range(n):
    s = socket.create_connection((host, port), timeout=10)
    s.sendall(b"EOFSEND 16 1\n")
    socks.append(s)
print("open %d" % n, flush=True)
while not os.path.exists(go):
    time.sleep(0.05)
for s in socks:
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
print("reset %d" % n, flush=True)' "$1" "$TS_T_ADDR4" "$TS_TARGET_PORT" \
	    "$TS_TMP/$2.go" >"$TS_TMP/$2.log" 2>&1 &
}

# True while one of the PIDs has not exited (an exited child not yet
# reaped is a zombie, which kill -0 still finds).
ts_any_running() {
	local pid st
	for pid in "$@"; do
		st=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d ' ' -f 1)
		[ -n "$st" ] && [ "$st" != Z ] && return 0
	done
	return 1
}

# ts_wait_port NS PORT [SECONDS [PID]]: wait until something listens on TCP
# PORT in NS; fail early when PID (the process expected to listen) died.
ts_wait_port() {
	local ns=$1 port=$2 secs=${3:-10} pid=${4:-} i
	for i in $(seq $((secs * 10))); do
		if ip netns exec "$ns" ss -Hltn "sport = :$port" 2>/dev/null |
		    grep -q LISTEN; then
			return 0
		fi
		[ -n "$pid" ] && ! ts_alive "$pid" && return 1
		sleep 0.1
	done
	return 1
}

ts_start_server() {
	ts_bg "$NS_S" server "$TUNSPLIT" run -c "$TS_TMP/server.yaml"
	TS_SERVER_PID=$TS_LAST_PID
	ts_wait_port "$NS_S" "$TS_SERVER_PORT" 10 "$TS_SERVER_PID" ||
	    ts_fail "server did not listen on port $TS_SERVER_PORT"
	ts_log "server up (pid $TS_SERVER_PID)"
}

ts_stop_server() {
	local sig=${1:-TERM}
	kill "-$sig" "$TS_SERVER_PID" 2>/dev/null
	wait "$TS_SERVER_PID" 2>/dev/null
	ts_log "server (pid $TS_SERVER_PID) stopped with SIG$sig"
}

# Start the client, wait for it to create and raise the TUN, then route the
# target networks through it.
ts_start_client() {
	local i up=
	ts_bg "$NS_C" client "$TUNSPLIT" run -c "$TS_TMP/client.yaml"
	TS_CLIENT_PID=$TS_LAST_PID
	for i in $(seq 50); do
		ts_alive "$TS_CLIENT_PID" || ts_fail "client exited during start-up"
		if ip -n "$NS_C" link show "$TS_TUN" 2>/dev/null | grep -q '[<,]UP[,>]'; then
			up=1
			break
		fi
		sleep 0.1
	done
	[ -n "$up" ] || ts_fail "client did not bring up $TS_TUN within 5 s"
	# The IPv6 address must have left the tentative state before use.
	for i in $(seq 30); do
		[ -z "$(ip -n "$NS_C" -6 addr show dev "$TS_TUN" tentative 2>/dev/null)" ] && break
		sleep 0.1
	done
	ip -n "$NS_C" route add "$TS_T_NET4" dev "$TS_TUN" ||
	    ts_fail "route $TS_T_NET4 dev $TS_TUN"
	ip -n "$NS_C" -6 route add "$TS_T_NET6" dev "$TS_TUN" ||
	    ts_fail "route $TS_T_NET6 dev $TS_TUN"
	ts_log "client up (pid $TS_CLIENT_PID), $TS_T_NET4 and $TS_T_NET6 routed via $TS_TUN"
}

# ts_start_client_routed: start the client whose config has route: auto
# and wait (10 s) until the daemon says its routes are up.  TS_TUN must be
# the test's own name (tunsplit-route keeps its state per device name in
# /run/tunsplit) and tunsplit-route must be in PATH.
ts_start_client_routed() {
	local i
	ts_bg "$NS_C" client "$TUNSPLIT" run -c "$TS_TMP/client.yaml"
	TS_CLIENT_PID=$TS_LAST_PID
	for i in $(seq 100); do
		ts_alive "$TS_CLIENT_PID" || ts_fail "client exited during start-up"
		grep -q "default routes through $TS_TUN " "$TS_TMP/client.log" &&
		    break
		sleep 0.1
	done
	grep -q "default routes through $TS_TUN " "$TS_TMP/client.log" ||
	    ts_fail "route: auto did not route into $TS_TUN within 10 s"
	for i in $(seq 30); do
		[ -z "$(ip -n "$NS_C" -6 addr show dev "$TS_TUN" tentative 2>/dev/null)" ] && break
		sleep 0.1
	done
	ts_log "client up (pid $TS_CLIENT_PID), routed by tunsplit-route"
}

# ts_start_target [tools.py serve options...]: the target server on port
# $TS_TARGET_PORT (default 9000), IPv4 and IPv6.
ts_start_target() {
	TS_TARGET_PORT=${TS_TARGET_PORT:-9000}
	ts_bg "$NS_T" target "$TS_PY" -u "$TS_TOOLS" serve --bind "$TS_T_ADDR4" \
	    --bind "$TS_T_ADDR6" --port "$TS_TARGET_PORT" "$@"
	TS_TARGET_PID=$TS_LAST_PID
	ts_wait_port "$NS_T" "$TS_TARGET_PORT" 10 "$TS_TARGET_PID" ||
	    ts_fail "target did not listen on port $TS_TARGET_PORT"
}

# ts_start_http DIR [PORT]: nginx (or python's http.server as a fallback)
# serving DIR on the target, IPv4 and IPv6.
ts_start_http() {
	local dir=$1 port=${2:-8080} t
	TS_HTTP_PORT=$port
	chmod 755 "$dir"
	if command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; then
		mkdir -p "$TS_TMP/nginx"
		for t in body proxy fastcgi uwsgi scgi; do mkdir -p "$TS_TMP/nginx/$t"; done
		cat >"$TS_TMP/nginx.conf" <<EOF
worker_processes 1;
pid $TS_TMP/nginx/nginx.pid;
error_log $TS_TMP/nginx-error.log warn;
daemon off;
events { worker_connections 1024; }
http {
	access_log $TS_TMP/nginx-access.log;
	client_body_temp_path $TS_TMP/nginx/body;
	proxy_temp_path $TS_TMP/nginx/proxy;
	fastcgi_temp_path $TS_TMP/nginx/fastcgi;
	uwsgi_temp_path $TS_TMP/nginx/uwsgi;
	scgi_temp_path $TS_TMP/nginx/scgi;
	default_type application/octet-stream;
	sendfile on;
	server {
		listen $TS_T_ADDR4:$port;
		listen [$TS_T_ADDR6]:$port;
		root $dir;
	}
}
EOF
		ts_bg "$NS_T" http "$(command -v nginx || echo /usr/sbin/nginx)" \
		    -c "$TS_TMP/nginx.conf"
		TS_HTTP_WHAT=nginx
	else
		ts_bg "$NS_T" http "$TS_PY" -m http.server --bind "::" \
		    --directory "$dir" "$port"
		TS_HTTP_WHAT="python3 http.server"
	fi
	TS_HTTP_PID=$TS_LAST_PID
	ts_wait_port "$NS_T" "$port" 10 "$TS_HTTP_PID" ||
	    ts_fail "$TS_HTTP_WHAT did not listen on port $port"
	ts_log "$TS_HTTP_WHAT serving $dir on port $port"
}

# ts_seq_flows N SEED: N sequential short flows to the target's EOFSEND
# (e2e/reuseflows.py: hash-checked both ways, the app's FIN before each
# reply), or fail; the summary line is logged.
ts_seq_flows() {
	ip netns exec "$NS_C" timeout 120 "$TS_PY" -u \
	    "$TS_LIB_DIR/e2e/reuseflows.py" flows --host "$TS_T_ADDR4" \
	    --port "$TS_TARGET_PORT" --flows "$1" --seed "$2" \
	    >"$TS_TMP/flows.log" 2>&1 ||
	    ts_fail "flows: $(tail -n 2 "$TS_TMP/flows.log")"
	ts_log "$(tail -n 1 "$TS_TMP/flows.log")"
}

# ts_app ARGS...: run a tools.py app in the client namespace (foreground).
ts_app() {
	ip netns exec "$NS_C" timeout "${TS_APP_TIMEOUT:-300}" \
	    "$TS_PY" -u "$TS_TOOLS" "$@"
}

# ts_log_sum SED FILE: the numbers the sed -n script SED prints from
# FILE's lines, added up (0 if none).  A client logs its counters when it
# stops once per worker process, so a count is their sum.
ts_log_sum() {
	sed -n "$1" "$2" | awk '{ n += $1 } END { print n + 0 }'
}

# ts_wait_log FILE PATTERN [TENTHS]: true once a line of FILE matches
# PATTERN (grep), within TENTHS tenths of a second (50 unless given).
ts_wait_log() {
	local i
	for i in $(seq "${3:-50}"); do
		grep -q -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# ts_hup PID LOG PATTERN WHAT: SIGHUP to PID, then wait (5 s) until LOG has
# one more line matching PATTERN than before the signal: the daemon's own
# word that it has read its file (src/daemon/daemon.c logs "reloaded FILE", or
# "reload: ...; keeping the running configuration" for a broken one).
# Counted rather than ts_wait_log's plain grep, since an earlier reload's
# line is already in the log.  WHAT names the step in a failure.
ts_hup() {
	local n i
	n=$(grep -c -- "$3" "$2" 2>/dev/null)
	kill -HUP "$1" 2>/dev/null || ts_fail "$4: pid $1 is gone"
	for i in $(seq 50); do
		[ "$(grep -c -- "$3" "$2" 2>/dev/null)" -gt "${n:-0}" ] && return 0
		sleep 0.1
	done
	ts_fail "$4: no new '$3' line in $(basename "$2") within 5 s of SIGHUP"
}

# ts_reload PID LOG [WHAT]: SIGHUP, and the daemon must log that it reloaded
# (at level info, the tests' default).
ts_reload() {
	ts_hup "$1" "$2" " reloaded " "${3:-reload}"
}

# ts_expect_sink SEED BYTES TAG: the target must log, within 10 s, a SINK of
# BYTES bytes with the hash of tools.py stream SEED: an upload's proof where
# the path may end a connection on the first EOF.
ts_expect_sink() {
	local want
	want=$(ts_app hash --seed "$1" --bytes "$2")
	ts_wait_log "$TS_TMP/target.log" "SINK $2 bytes sha256 $want" 100 ||
	    ts_fail "$3: target did not log SINK $2 bytes sha256 $want"
	ts_log "$3: target got $2 bytes, sha256 $want"
}

# ts_updown TAG HOST PORT SEED BYTES: download BYTES of stream SEED from the
# target server at HOST:PORT (checked by hash by tools.py), then upload as
# many (ts_expect_sink).
ts_updown() {
	local out
	out=$(ts_app recv --host "$2" --port "$3" --bytes "$5" --seed "$4") ||
	    ts_fail "$1: download: $out"
	ts_log "$1: $out"
	ts_app send --host "$2" --port "$3" --bytes "$5" --seed "$4" \
	    >>"$TS_TMP/app.log" 2>&1 || true
	ts_expect_sink "$4" "$5" "$1: upload"
}

# ts_start_udpecho PORT...: a UDP echo server (udptool.py serve, log
# udpechoPORT.log) on both of the target's addresses at each PORT; fails
# unless all of them listen within 5 s.
ts_start_udpecho() {
	local port i
	for port in "$@"; do
		ts_bg "$NS_T" "udpecho$port" "$TS_PY" -u \
		    "$TS_LIB_DIR/udptool.py" serve --bind "$TS_T_ADDR4" \
		    --bind "$TS_T_ADDR6" --port "$port"
	done
	for port in "$@"; do
		for i in $(seq 50); do
			[ "$(ip netns exec "$NS_T" ss -Hlun "sport = :$port" |
			    wc -l)" -ge 2 ] && continue 2
			sleep 0.1
		done
		ts_fail "the UDP echo server did not listen on port $port"
	done
}

# ts_udptool LOG ARGS...: udptool.py in the client namespace, its output
# appended to LOG.
ts_udptool() {
	local log=$1
	shift
	ip netns exec "$NS_C" timeout 120 "$TS_PY" -u "$TS_LIB_DIR/udptool.py" \
	    "$@" >>"$log" 2>&1
}

# ts_full_cone HOST WANT WHAT: the app (udptool.py cone) talks to the echo
# server at HOST:7, then a second peer in the server namespace sends to the
# address the app was mapped to, which must be WANT (WHAT names it for a
# failure), and the app must receive that datagram.  Its log line is left
# in TS_CONE.
ts_full_cone() {
	local cone maddr mport i
	rm -f "$TS_TMP/mapped"
	ip netns exec "$NS_C" timeout 60 "$TS_PY" -u "$TS_LIB_DIR/udptool.py" \
	    cone --host "$1" --port 7 --out "$TS_TMP/mapped" --wait 20 \
	    >>"$TS_TMP/cone.log" 2>&1 &
	cone=$!
	for i in $(seq 100); do
		[ -s "$TS_TMP/mapped" ] && break
		sleep 0.1
	done
	[ -s "$TS_TMP/mapped" ] || ts_fail "cone: no mapped address"
	read -r maddr mport <"$TS_TMP/mapped"
	[ "$maddr" = "$2" ] ||
	    ts_fail "mapped address $maddr, expected $3 $2"
	ip netns exec "$NS_S" "$TS_PY" -u "$TS_LIB_DIR/udptool.py" send \
	    --to "$maddr:$mport" >>"$TS_TMP/cone.log" 2>&1
	wait "$cone" || ts_fail "full cone: $(tail -n 3 "$TS_TMP/cone.log")"
	# shellcheck disable=SC2034 # for the caller
	TS_CONE=$(grep unsolicited "$TS_TMP/cone.log")
}

# ts_expect_icmp_dropped TAG PROTOCOL: a ping through the client must go
# unanswered and the client log that PROTOCOL carries no ICMP echo (where
# ping is installed).
ts_expect_icmp_dropped() {
	command -v ping >/dev/null 2>&1 || return 0
	ip netns exec "$NS_C" ping -c 1 -W 1 "$TS_T_ADDR4" \
	    >>"$TS_TMP/ping.log" 2>&1 &&
	    ts_fail "$1: ping answered, but $2 carries no ICMP"
	grep -q "icmp: echo requests are dropped: protocol $2" \
	    "$TS_TMP/client.log" ||
	    ts_fail "$1: no log line for the dropped echo"
}

# Everything up to a working tunnel, for most tests.
ts_standard_setup() {
	ts_topology_up
	ts_make_pki
	ts_write_configs "$@"
	ts_start_target ${TS_TARGET_ARGS:-}
	ts_prove_no_forward "$TS_TARGET_PORT"
	ts_start_server
	ts_start_client
}

# ts_status_kb FIELD PID: /proc/PID/status's FIELD (VmRSS, VmHWM) in KiB,
# its workers' (ts_procs) added; 0 when gone.
ts_status_kb() {
	local p kb n=0
	for p in $(ts_procs "$2"); do
		kb=$(awk -v f="$1:" '$1 == f { print $2 }' "/proc/$p/status" \
		    2>/dev/null)
		n=$((n + ${kb:-0}))
	done
	echo "$n"
}

# Resident set size of PID in KiB (0 when gone), its workers' with it.
ts_rss_kb() { ts_status_kb VmRSS "$1"; }

# The daemons must still be running at the end of a test.
ts_check_alive() {
	ts_alive "$TS_CLIENT_PID" || ts_fail "the client died"
	ts_alive "$TS_SERVER_PID" || ts_fail "the server died"
}

# ts_start_danted PORT [COMMAND...]: dante-server in the server namespace
# on $TS_S_ADDR4:PORT, no authentication, relaying the SOCKS COMMANDs
# (connect unless given) out of eth1 to the target; fails unless it
# listens within 10 s.  Leaves DANTE_PID.
ts_start_danted() {
	local port=$1 danted
	shift
	ts_need danted dante-server
	danted=$(command -v danted || echo /usr/sbin/danted)
	cat >"$TS_TMP/danted.conf" <<EOF2
logoutput: stderr
internal: $TS_S_ADDR4 port = $port
external: eth1
clientmethod: none
socksmethod: none
user.privileged: root
user.unprivileged: nobody
client pass { from: 0/0 to: 0/0 log: error }
socks pass {
	from: 0/0 to: 0/0
	command: ${*:-connect}
	log: connect disconnect error
}
EOF2
	ts_bg "$NS_S" danted "$danted" -f "$TS_TMP/danted.conf" \
	    -p "$TS_TMP/danted.pid" -N 1
	DANTE_PID=$TS_LAST_PID
	ts_wait_port "$NS_S" "$port" 10 "$DANTE_PID" ||
	    ts_fail "danted did not listen on $port: $(tail -n 5 "$TS_TMP/danted.log")"
	ts_log "danted up on $TS_S_ADDR4:$port (${*:-connect})"
}

# ts_start_trojan_gfw PORT PASSWORD: Debian's trojan (trojan-gfw) as a
# server in the server namespace on $TS_S_ADDR4:PORT with the test's
# certificate, its fallback 127.0.0.1:8081 (nothing need listen there);
# fails unless it listens within 10 s.  Leaves TROJAN_PID.
ts_start_trojan_gfw() {
	ts_need trojan trojan
	cat >"$TS_TMP/trojan-$1.json" <<EOF2
{
  "run_type": "server",
  "local_addr": "$TS_S_ADDR4", "local_port": $1,
  "remote_addr": "127.0.0.1", "remote_port": 8081,
  "password": ["$2"],
  "log_level": 1,
  "udp_timeout": 60,
  "ssl": { "cert": "$TS_TMP/server.pem", "key": "$TS_TMP/server.key",
    "key_password": "", "prefer_server_cipher": true,
    "alpn": ["http/1.1"], "reuse_session": true, "session_ticket": false,
    "session_timeout": 600, "plain_http_response": "", "curves": "",
    "dhparam": "" },
  "tcp": { "prefer_ipv4": false, "no_delay": true, "keep_alive": true,
    "reuse_port": false, "fast_open": false, "fast_open_qlen": 20 }
}
EOF2
	ts_bg "$NS_S" "trojan-$1" "$(command -v trojan || echo /usr/sbin/trojan)" \
	    -c "$TS_TMP/trojan-$1.json"
	TROJAN_PID=$TS_LAST_PID
	ts_wait_port "$NS_S" "$1" 10 "$TROJAN_PID" ||
	    ts_fail "trojan did not listen on $1: $(tail -n 5 "$TS_TMP/trojan-$1.log")"
}
