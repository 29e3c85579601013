# shellcheck shell=bash
# Helpers for the fault and soak tests (soak_*.sh, fault_*.sh), on top of
# lib.sh.  Source lib.sh first.
#
# Sizes: the tests that take long at the full size of issue 9 run a reduced
# size by default, so that the CI run stays short; TS_SOAK=1 runs the full
# sizes (soak_churn then takes 3 to 5 minutes):
#
#   test                      default         TS_SOAK=1        sanitizer build
#   soak_flows.sh             10,000 flows    10,000 flows     2,000
#   soak_churn.sh             5,000 conns     100,000 conns    1,500
#   fault_reset_storm.sh      100 conns       400 conns
#   fault_server_restart.sh   3 restarts      10 restarts
#   fault_nofile.sh, fault_loris.sh, fault_garbage.sh, e2e_egress.sh: one size
#
# Any size can also be set directly (TS_FLOWS, TS_CHURN, ...; see each test).

TS_SOAK_PY=$TS_LIB_DIR/soak.py
TS_SOAK_PORT=9100

# ts_soak_size DEFAULT FULL [SANITIZED]: the size to use; SANITIZED (default
# DEFAULT) in a sanitizer build (TS_SANITIZED, set by scripts/test.sh
# --asan), which runs several times slower.
ts_soak_size() {
	if [ -n "${TS_SOAK:-}" ] && [ "$TS_SOAK" != 0 ]; then
		echo "$2"
	elif [ -n "${TS_SANITIZED:-}" ]; then
		echo "${3:-$1}"
	else
		echo "$1"
	fi
}

# Each of these counts PID with its worker processes (ts_procs; the
# descriptors and RSS: ts_fd_count and ts_status_kb in lib.sh).
# Peak resident set size of PID in KiB (the workers' peaks summed: an
# upper bound).
ts_hwm_kb() { ts_status_kb VmHWM "$1"; }

# User + system CPU time of PID in clock ticks.
ts_cpu_ticks() {
	local p
	# Fields after the ")" of the command name: utime is the 12th, stime
	# the 13th.
	for p in $(ts_procs "$1"); do
		sed 's/.*) //' "/proc/$p/stat" 2>/dev/null
	done | awk '{ n += $12 + $13 } END { print n + 0 }'
}

ts_mb() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

# The asyncio target (soak.py serve) on $TS_SOAK_PORT, IPv4 and IPv6.
ts_start_soak_target() {
	ts_bg "$NS_T" soak-target "$TS_PY" -u "$TS_SOAK_PY" serve \
	    --bind "$TS_T_ADDR4" --bind "$TS_T_ADDR6" --port "$TS_SOAK_PORT"
	TS_SOAK_TARGET_PID=$TS_LAST_PID
	ts_wait_port "$NS_T" "$TS_SOAK_PORT" 10 "$TS_SOAK_TARGET_PID" ||
	    ts_fail "soak target did not listen on port $TS_SOAK_PORT"
}

# ts_soak_app ARGS...: soak.py app in the client namespace (foreground).
ts_soak_app() {
	ip netns exec "$NS_C" timeout "${TS_APP_TIMEOUT:-170}" \
	    "$TS_PY" -u "$TS_SOAK_PY" "$@"
}

# ts_wait_file FILE SECONDS [PID]: wait until FILE exists; fail early when
# PID died.
ts_wait_file() {
	local f=$1 secs=$2 pid=${3:-} i
	for i in $(seq $((secs * 10))); do
		[ -e "$f" ] && return 0
		[ -n "$pid" ] && ! ts_alive "$pid" && return 1
		sleep 0.1
	done
	return 1
}

# Short-lived connections from many apps leave TIME_WAIT behind on whoever
# closes first; let the namespaces reuse those ports, as a busy host would.
ts_soak_sysctls() {
	local ns
	for ns in "$NS_C" "$NS_S" "$NS_T"; do
		ts_sysctl "$ns" net/ipv4/tcp_tw_reuse 1
		ts_sysctl "$ns" net/ipv4/ip_local_port_range "1024 65535"
		ts_sysctl "$ns" net/core/somaxconn 8192
		ts_sysctl "$ns" net/ipv4/tcp_max_syn_backlog 8192
	done
}
