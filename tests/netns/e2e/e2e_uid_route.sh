#!/bin/bash
# Per-user routing on a host (issue 16): with route: auto,
# client.route_uid_exclude keeps the traffic of the listed users out of
# the TUN, and client.route_uid_include sends only theirs into it.
#
#  tsc$$ (client)                       tss$$ (server)
#  eth0 10.77.1.1 ---------------------- eth0 10.77.1.2
#  default via 10.77.1.2                 lo 10.77.3.2, reached by the
#  route: auto, TUN tsx$$                   client's default route: a
#                                           service (tools.py serve :9100)
#                                           that logs who connects; egress
#                                           allows 10.77.3.2/32 here
#
# A download from the service shows the path it took: the client's own
# address 10.77.1.1 when it went directly, another (the tunsplit
# server's) when it went through the tunnel.  uid 0 (root) and uid UID
# each download once per configuration, hashes checked:
#   route_uid_exclude: [UID]  root through the tunnel, UID directly;
#   route_uid_include: [UID]  UID through the tunnel, root directly.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_uid_route
export PATH="$TS_SRCDIR/src/route:$PATH"
command -v tunsplit-route >/dev/null || ts_fail "tunsplit-route not found"
command -v setpriv >/dev/null || ts_skip "no setpriv (util-linux)"

PUB=10.77.3.2 SVC_PORT=9100 UID_APP=4242
TS_TUN=tsx$$
STATE=/run/tunsplit/$TS_TUN.state
trap 'rm -f "$STATE"; ts_cleanup' EXIT

ts_topology_up
ip -n "$NS_S" addr add "$PUB/32" dev lo
ip -n "$NS_C" route add default via "$TS_S_ADDR4" || ts_fail "default route"
ts_bg "$NS_S" svc "$TS_PY" -u "$TS_TOOLS" serve --bind "$PUB" \
    --port "$SVC_PORT"
ts_wait_port "$NS_S" "$SVC_PORT" 10 "$TS_LAST_PID" ||
    ts_fail "the service did not listen"

# The unprivileged app runs the system python on a copy of tools.py it
# can read (the test's directory is root's).
mkdir -p "$TS_TMP/app" && cp "$TS_TOOLS" "$TS_TMP/app/tools.py" &&
    chmod 755 "$TS_TMP" "$TS_TMP/app" && chmod 644 "$TS_TMP/app/tools.py" ||
    ts_fail "cannot set up the app's copy of tools.py"

fetch() {	# fetch UID SEED: 256 KiB from the service as UID; prints the
		# address the service saw
	local n
	n=$(grep -c " SEND 262144 " "$TS_TMP/svc.log")
	if [ "$1" = 0 ]; then
		ts_app recv --host "$PUB" --port "$SVC_PORT" --bytes 256k \
		    --seed "$2" --timeout 10 >"$TS_TMP/fetch.log" 2>&1
	else
		ip netns exec "$NS_C" timeout 60 setpriv --reuid "$1" \
		    --regid "$1" --clear-groups /usr/bin/python3 -u \
		    "$TS_TMP/app/tools.py" recv --host "$PUB" \
		    --port "$SVC_PORT" --bytes 256k --seed "$2" --timeout 10 \
		    >"$TS_TMP/fetch.log" 2>&1
	fi || ts_fail "uid $1: download failed: $(cat "$TS_TMP/fetch.log")"
	ts_wait_log "$TS_TMP/svc.log" "SEND 262144 " 20
	[ "$(grep -c " SEND 262144 " "$TS_TMP/svc.log")" = $((n + 1)) ] ||
	    ts_fail "uid $1: the service did not log the download"
	sed -n 's/.*target: \[\([0-9.]*\)\]:[0-9]* SEND 262144 .*/\1/p' \
	    "$TS_TMP/svc.log" | tail -n 1
}

expect_path() {	# expect_path UID direct|tunnel SEED
	local seen
	seen=$(fetch "$1" "$3")
	case $2 in
	direct) [ "$seen" = "$TS_C_ADDR4" ] ||
		ts_fail "uid $1 should go directly, the service saw $seen" ;;
	tunnel) [ -n "$seen" ] && [ "$seen" != "$TS_C_ADDR4" ] ||
		ts_fail "uid $1 should go through the tunnel, the service saw ${seen:-nothing}" ;;
	esac
	ts_log "uid $1: $2 (the service saw $seen)"
}

expect_path 0 direct 1			# no client: everybody directly
expect_path "$UID_APP" direct 2

ts_make_pki
run_client() {	# run_client KEY: start the client with KEY: [UID_APP]
	ts_write_configs "  mark: 0x7353
  route: auto
  $1: [$UID_APP]"
	sed -i "s|^  server: \"$TS_S_ADDR4:$TS_SERVER_PORT\"\$|  server: \"$PUB:$TS_SERVER_PORT\"|" \
	    "$TS_TMP/client.yaml"
	sed -i -e "s|^  listen: \[\"$TS_S_ADDR4:$TS_SERVER_PORT\", |  listen: [\"$PUB:$TS_SERVER_PORT\", \"$TS_S_ADDR4:$TS_SERVER_PORT\", |" \
	    -e "s|^  egress: {allow: \[$TS_T_NET4, |  egress: {allow: [$PUB/32, $TS_T_NET4, |" \
	    "$TS_TMP/server.yaml"
	grep -q "allow: \[$PUB/32," "$TS_TMP/server.yaml" ||
	    ts_fail "could not point the configs at $PUB"
	ts_start_server
	ts_wait_port "$NS_S" "$TS_SERVER_PORT" 10 "$TS_SERVER_PID" ||
	    ts_fail "the server does not listen"
	ts_start_client_routed
	ip -n "$NS_C" rule show >"$TS_TMP/rules.txt"
	grep -q "uidrange" "$TS_TMP/rules.txt" ||
	    ts_fail "$1: no uidrange rule: $(cat "$TS_TMP/rules.txt")"
}
stop_all() {	# stop_all N: stop both, keep their logs as *.N.log
	kill -TERM "$TS_CLIENT_PID" 2>/dev/null
	wait "$TS_CLIENT_PID" 2>/dev/null
	ts_stop_server
	mv "$TS_TMP/client.log" "$TS_TMP/client.$1.log"
	mv "$TS_TMP/server.log" "$TS_TMP/server.$1.log"
	ip -n "$NS_C" rule show | grep -q uidrange &&
	    ts_fail "uidrange rules left after the client stopped"
	[ ! -e "$STATE" ] || ts_fail "tunsplit-route state left after the client stopped"
}

run_client route_uid_exclude
expect_path 0 tunnel 3
expect_path "$UID_APP" direct 4
stop_all 1

run_client route_uid_include
expect_path 0 direct 5
expect_path "$UID_APP" tunnel 6
ts_check_alive
stop_all 2
ts_pass "route_uid_exclude and route_uid_include choose who uses the tunnel"
