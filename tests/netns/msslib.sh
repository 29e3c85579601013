# shellcheck shell=bash
# The TUN MTU x app MSS transfer matrix of issue 14, for one outbound:
# sourced by e2e_mss_native.sh, e2e_mss_trojan.sh and e2e_mss_socks5.sh
# after lib.sh, once their tunnel is up (any TUN MTU; the client is
# restarted per MTU with only the mtu in client.yaml changed).
#
# Cases (TCP_MAXSEG is set on the app's socket before connect, so its SYN
# announces that MSS, as a host behind a smaller MTU would):
#
#   TUN MTU 1500   MSS 536, 1220, 1460 (1460 is also what the route gives;
#                  IPv6 announces 1440 there)
#   TUN MTU 9000   the route's (8960, IPv6 8940), 536, 1220, 1460, and
#                  1460 by `ip route ... advmss 1460` on the routes into
#                  the TUN (no socket option)
#
# each to the target's IPv4 and IPv6 address, download and upload,
# MSS_BYTES each (64 MiB, TS_MSS_BYTES to change).  Every download is
# checked byte for byte and by SHA-256 by tools.py, every upload by the
# count and SHA-256 the target reports for what it got (in its reply, or
# in its log if a proxy ends the session first); a reset fails the case.  The MSS
# the app announced (tcp_info) must be the one the case names, so a case
# cannot pass without testing what it says.  A failing case is recorded
# under its name (outbound, mtu, mss, family, direction) and the matrix
# goes on; the test fails at the end listing every failed case, and
# prints each case's wall time either way.
#
# The full size moves 2 GiB per outbound and runs in the sanitizer build
# too: the Python apps and hashing, not the daemons, set the pace.
# Measured on the 2-core VM under load 5-7, native and trojan side by
# side as make -j2 runs them, then SOCKS5: 47, 47 and 33 s; with ASan and
# UBSan 52, 52 and 29 s.
MSS_BYTES=${TS_MSS_BYTES:-64m}
MSS_FAILS=()
MSS_TIMES=()
MSS_CASES=0
MSS_SEED=1400
TS_APP_TIMEOUT=${TS_APP_TIMEOUT:-120}

# mss_want MTU SPEC FAMILY: the MSS the app's SYN must announce.
mss_want() {
	local route=$(($1 - 40))
	[ "$3" = 6 ] && route=$(($1 - 60))
	case $2 in
	route) echo "$route" ;;
	advmss*) echo "${2#advmss}" ;;
	*) echo $(($2 < route ? $2 : route)) ;;
	esac
}

# mss_client_mtu MTU: (re)start the client with its TUN at MTU.
mss_client_mtu() {
	if ip -n "$NS_C" link show "$TS_TUN" 2>/dev/null | grep -q " mtu $1 "; then
		return 0
	fi
	if [ -n "${TS_CLIENT_PID:-}" ] && ts_alive "$TS_CLIENT_PID"; then
		kill -TERM "$TS_CLIENT_PID" 2>/dev/null
		wait "$TS_CLIENT_PID" 2>/dev/null
	fi
	sed -i "s/^\(tun: {.*mtu: \)[0-9]*/\1$1/" "$TS_TMP/client.yaml"
	ts_start_client
	ip -n "$NS_C" link show "$TS_TUN" | grep -q " mtu $1 " ||
	    ts_fail "$TS_TUN: mtu is not $1: $(ip -n "$NS_C" link show "$TS_TUN")"
}

# mss_routes [advmss N]: the routes into the TUN, with or without advmss.
mss_routes() {
	ip -n "$NS_C" route change "$TS_T_NET4" dev "$TS_TUN" "$@" &&
	    ip -n "$NS_C" -6 route change "$TS_T_NET6" dev "$TS_TUN" "$@" ||
	    ts_fail "ip route change ... dev $TS_TUN $*"
}

# mss_case MTU SPEC FAMILY DIR: one transfer (DIR down or up); SPEC is
# route, an MSS for TCP_MAXSEG, or advmssN (the routes must carry it).
mss_case() {
	local mtu=$1 spec=$2 fam=$3 dir=$4 host=$TS_T_ADDR4 mss=0 want
	local name out rc t0 dt hash log=$TS_TMP/mss-apps.log why=
	[ "$fam" = 6 ] && host=$TS_T_ADDR6
	case $spec in route | advmss*) ;; *) mss=$spec ;; esac
	want=$(mss_want "$mtu" "$spec" "$fam")
	name="$MSS_OUTBOUND mtu $mtu mss $spec IPv$fam $dir"
	MSS_SEED=$((MSS_SEED + 1))
	MSS_CASES=$((MSS_CASES + 1))
	printf '=== %s (seed %d)\n' "$name" "$MSS_SEED" >>"$log"
	t0=$(date +%s.%N)
	if [ "$dir" = down ]; then
		out=$(ts_app recv --host "$host" --port "$TS_TARGET_PORT" \
		    --bytes "$MSS_BYTES" --seed "$MSS_SEED" --mss "$mss" 2>&1)
		rc=$?
		[ "$rc" = 0 ] || why="$(tail -n 1 <<<"$out") (exit $rc)"
	else
		out=$(ts_app send --host "$host" --port "$TS_TARGET_PORT" \
		    --bytes "$MSS_BYTES" --seed "$MSS_SEED" --mss "$mss" 2>&1)
		rc=$?
		# Exit 0: the target's reply gave the count and SHA-256 of
		# what it got, equal to what was sent.  A proxy may end the
		# session at the app's EOF, before that reply: then the
		# target's own log of the bytes it got is the proof
		# (ts_expect_sink, without the exit).
		if [ "$rc" != 0 ]; then
			hash=$(ts_app hash --seed "$MSS_SEED" --bytes "$MSS_BYTES")
			ts_wait_log "$TS_TMP/target.log" \
			    "SINK $MSS_N bytes sha256 $hash" 100 ||
			    why="the target did not log the upload's sha256 $hash: $(tail -n 1 <<<"$out") (exit $rc)"
		fi
	fi
	dt=$(echo "$(date +%s.%N) $t0" | awk '{ printf "%.2f", $1 - $2 }')
	printf '%s\n' "$out" >>"$log"
	if [ -z "$why" ] && ! grep -q "mss announced $want," <<<"$out"; then
		why="the app did not announce MSS $want: $(grep 'mss announced' <<<"$out")"
	fi
	if [ -n "$why" ]; then
		MSS_FAILS+=("$name: $why")
		MSS_TIMES+=("$(printf '%-44s %7ss  FAIL' "$name" "$dt")")
		ts_log "FAIL $name: $why"
	else
		MSS_TIMES+=("$(printf '%-44s %7ss  ok' "$name" "$dt")")
		ts_log "ok $name ($dt s): $(tail -n 1 <<<"$out")"
	fi
}

# mss_matrix OUTBOUND: every case above through the running tunnel, then
# pass or fail the test with the per-case times.
mss_matrix() {
	local mtu spec fam dir t0
	MSS_OUTBOUND=$1
	MSS_N=$("$TS_PY" -c 'import sys; sys.path.insert(0, sys.argv[1])
import tools; print(tools.parse_size(sys.argv[2]))' "$TS_LIB_DIR" "$MSS_BYTES")
	t0=$(date +%s)
	for mtu in 1500 9000; do
		mss_client_mtu "$mtu"
		for spec in route 536 1220 1460 advmss1460; do
			[ "$mtu" = 1500 ] && case $spec in route | advmss*) continue ;; esac
			[ "${spec#advmss}" != "$spec" ] && mss_routes advmss "${spec#advmss}"
			for fam in 4 6; do
				for dir in down up; do
					mss_case "$mtu" "$spec" "$fam" "$dir"
				done
			done
			[ "${spec#advmss}" != "$spec" ] && mss_routes
		done
		ts_alive "$TS_CLIENT_PID" || ts_fail "the client died (mtu $mtu)"
	done
	ts_log "per-case wall time ($MSS_BYTES each):"
	printf '  %s\n' "${MSS_TIMES[@]}"
	ts_log "matrix took $(($(date +%s) - t0)) s"
	[ "${#MSS_FAILS[@]}" = 0 ] ||
	    ts_fail "${#MSS_FAILS[@]} of $MSS_CASES cases failed:$(printf '\n  %s' "${MSS_FAILS[@]}")"
}
