#!/bin/bash
# The socks5 outbound against real SOCKS5 servers from Debian: dante-server
# (no authentication) and microsocks (RFC 1929 username/password).
#
#   tsc$$ 10.77.1.1 ----------- 10.77.1.2 tss$$ 10.77.2.1 ---- 10.77.2.2 tst$$
#   app -> ts0 -> tunsplit      danted :1080     (external eth1)    target
#   client (protocol: socks5)   microsocks :1081 (-u/-P)            :9000
#
# No tunsplit server anywhere: tss does not forward, so the only way from
# the app to the target is app -> ts0 -> tunsplit client -> SOCKS5 proxy
# -> target.  Each TUN flow is its own SOCKS5 connection.  Checked:
#   (a) danted: 8 MiB down and up, v4 and v6, SHA-256 both ends; 64 MiB
#       down; 16 concurrent flows (half up, half down); half-close; a closed
#       port resets the app's connection (CONNECT reply "connection
#       refused", logged with its meaning);
#   (b) connect_mode faithful: the CONNECT reply is the connect status, so
#       a closed port refuses the app's SYN itself (ECONNREFUSED);
#   (c) microsocks with username/password: transfers intact;
#   (d) a wrong password: the app sees a reset, the log says why, the
#       daemon keeps serving, and SIGHUP with the right one fixes it;
#   (e) the proxy down: a clean reset, "socks5 proxy unreachable".
# Skipped, with a message, only when a package cannot be installed.
. "$(dirname "$0")/../lib.sh"
ts_init interop_socks5

need_pkg() {	# BINARY PACKAGE
	command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] && return 0
	ts_log "installing $2"
	apt-get install -y "$2" >"$TS_TMP/apt-$2.log" 2>&1 ||
	    ts_skip "Debian package '$2' not installed and cannot be installed"
}
need_pkg danted dante-server
need_pkg microsocks microsocks
MICROSOCKS=$(command -v microsocks)
DANTE_PORT=1080
MICRO_PORT=1081
USER_NAME=tsuser
PW="pw-$$-secret"
N=$((8 << 20))
BIG=$((64 << 20))
TS_APP_TIMEOUT=120

# client_conf PORT [EXTRA-YAML]: a socks5 client config, checked.
client_conf() {
	umask 077
	cat >"$TS_TMP/client.yaml" <<EOF
log: {level: info, flows: true}
control: $TS_TMP/client.sock
tun: {name: $TS_TUN, mtu: 9000, address: [198.18.0.1/15, "fdfe:dcba:9876::1/64"]}
client:
  protocol: socks5
  server: "$TS_S_ADDR4:$1"
  connect_timeout: 10s
${2:-}
EOF
	umask 022
	"$TUNSPLIT" check -c "$TS_TMP/client.yaml" >"$TS_TMP/check.log" 2>&1 ||
	    ts_fail "tunsplit check: $(cat "$TS_TMP/check.log")"
	# The dump never shows the password.
	grep -q -- "$PW" "$TS_TMP/check.log" &&
	    ts_fail "tunsplit check printed the password"
	return 0
}

restart_client() {
	if [ -n "${TS_CLIENT_PID:-}" ] && ts_alive "$TS_CLIENT_PID"; then
		kill -TERM "$TS_CLIENT_PID" 2>/dev/null
		wait "$TS_CLIENT_PID" 2>/dev/null
	fi
	ts_start_client
}

app() {	# tools.py ARGS: must succeed; its last line is logged
	ts_app "$@" >>"$TS_TMP/apps.log" 2>&1 ||
	    ts_fail "$*: $(tail -n 1 "$TS_TMP/apps.log")"
	ts_log "  $(tail -n 1 "$TS_TMP/apps.log")"
}

# wait_log FILE PATTERN WHAT: the pattern must show up within 5 s.
wait_log() {
	local i
	for i in $(seq 50); do
		grep -q -- "$2" "$1" && return 0
		sleep 0.1
	done
	ts_fail "$3: no '$2' in $(basename "$1")"
}

ts_topology_up
ts_start_target
ts_prove_no_forward "$TS_TARGET_PORT"
closed=9999
ip netns exec "$NS_T" ss -Hltn "sport = :$closed" | grep -q . &&
    ts_fail "port $closed is open on the target"

ts_start_danted "$DANTE_PORT"

# ---- (a) danted, no authentication -------------------------------------------
client_conf "$DANTE_PORT" "  connect_mode: fast"
ts_start_client
ts_log "(a) danted"
seed=10
for host in "$TS_T_ADDR4" "$TS_T_ADDR6"; do
	seed=$((seed + 1))
	app recv --host "$host" --port "$TS_TARGET_PORT" --bytes "$N" --seed "$seed"
	app send --host "$host" --port "$TS_TARGET_PORT" --bytes "$N" --seed "$seed"
done
app recv --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --bytes "$BIG" --seed 20
app multi --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --conns 16 \
    --bytes 2m --seed 30
app halfclose --host "$TS_T_ADDR6" --port "$TS_TARGET_PORT" --seed 40
for host in "$TS_T_ADDR4" "$TS_T_ADDR6"; do
	app refused --host "$host" --port "$closed" --within 3
done
wait_log "$TS_TMP/client.log" "CONNECT failed: connection refused (reply 5)" \
    "(a) refused"
# Every flow was its own SOCKS5 connection through danted.
n=$(grep -c "flow [0-9]* .*: closed" "$TS_TMP/client.log")
[ "$n" -ge 20 ] || ts_fail "(a) only $n flows closed cleanly"
grep -q "$TS_T_ADDR4" "$TS_TMP/danted.log" ||
    ts_fail "(a) danted's log does not show the target"
# No warm pool for socks5: the status has no pool section.
st=$(ip netns exec "$NS_C" "$TUNSPLIT" status --json -s "$TS_TMP/client.sock") ||
    ts_fail "(a) tunsplit status failed"
grep -q '"pool"' <<<"$st" && ts_fail "(a) the client has a warm pool: $st"
grep -q "none of\|socks5 proxy unreachable" "$TS_TMP/client.log" &&
    ts_fail "(a) unexpected proxy failure in the log"
ts_log "(a) passed ($n flows)"

# ---- (b) connect_mode faithful -------------------------------------------------
client_conf "$DANTE_PORT" "  connect_mode: faithful"
restart_client
app recv --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --bytes "$N" --seed 50
for host in "$TS_T_ADDR4" "$TS_T_ADDR6"; do
	ts_app refused --host "$host" --port "$closed" --within 3 \
	    >>"$TS_TMP/apps.log" 2>&1 ||
	    ts_fail "(b) $host: $(tail -n 1 "$TS_TMP/apps.log")"
	grep -q "ECONNREFUSED" <(tail -n 1 "$TS_TMP/apps.log") ||
	    ts_fail "(b) $host: want the SYN refused: $(tail -n 1 "$TS_TMP/apps.log")"
	ts_log "  $(tail -n 1 "$TS_TMP/apps.log")"
done
ts_log "(b) passed"

# ---- (c) microsocks, username/password ----------------------------------------
ts_bg "$NS_S" microsocks "$MICROSOCKS" -i "$TS_S_ADDR4" -p "$MICRO_PORT" \
    -u "$USER_NAME" -P "$PW"
MICRO_PID=$TS_LAST_PID
ts_wait_port "$NS_S" "$MICRO_PORT" 10 "$MICRO_PID" ||
    ts_fail "microsocks did not listen on $MICRO_PORT"
client_conf "$MICRO_PORT" "  username: $USER_NAME
  password: \"$PW\""
restart_client
# microsocks has no half-close (either side's EOF ends the session), so
# an upload is checked against the hash the target logs at EOF.
for host in "$TS_T_ADDR4" "$TS_T_ADDR6"; do
	seed=$((seed + 1))
	app recv --host "$host" --port "$TS_TARGET_PORT" --bytes "$N" --seed "$seed"
	ts_app send --host "$host" --port "$TS_TARGET_PORT" --bytes "$N" \
	    --seed "$seed" >>"$TS_TMP/apps.log" 2>&1 || true
	want=$(ts_app hash --seed "$seed" --bytes "$N")
	wait_log "$TS_TMP/target.log" "SINK $N bytes sha256 $want" \
	    "(c) upload to $host"
	ts_log "  target got $N bytes from the app, sha256 $want"
done
# Concurrent downloads.
pids=()
for i in 1 2 3 4 5 6; do
	ts_app recv --host "$TS_T_ADDR6" --port "$TS_TARGET_PORT" --bytes 2m \
	    --seed $((60 + i)) >>"$TS_TMP/apps-c.log" 2>&1 &
	pids+=($!)
done
for p in "${pids[@]}"; do
	wait "$p" || ts_fail "(c) concurrent download: $(cat "$TS_TMP/apps-c.log")"
done
ts_log "  6 concurrent downloads intact"
grep -q -- "$PW" "$TS_TMP/client.log" && ts_fail "(c) the password was logged"
ts_log "(c) passed"

# ---- (d) wrong password: reset, logged, daemon serves on; SIGHUP fixes it -----
client_conf "$MICRO_PORT" "  username: $USER_NAME
  password: \"wrong-$PW\""
restart_client
for i in 1 2 3; do
	app refused --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --within 3
done
wait_log "$TS_TMP/client.log" "socks5 proxy rejected username '$USER_NAME'" \
    "(d) wrong password"
grep -q "socks5 authentication failed" "$TS_TMP/client.log" ||
    ts_fail "(d) no 'socks5 authentication failed' flow line"
ts_alive "$TS_CLIENT_PID" || ts_fail "(d) the client died"
sed -i "s/\"wrong-$PW\"/\"$PW\"/" "$TS_TMP/client.yaml"
kill -HUP "$TS_CLIENT_PID"
wait_log "$TS_TMP/client.log" "reloaded $TS_TMP/client.yaml" "(d) SIGHUP"
app recv --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --bytes "$N" --seed 70
grep -q -- "$PW" "$TS_TMP/client.log" && ts_fail "(d) the password was logged"
ts_log "(d) passed"

# ---- (e) the proxy down ----------------------------------------------------------
kill -TERM "$MICRO_PID"
wait "$MICRO_PID" 2>/dev/null
for host in "$TS_T_ADDR4" "$TS_T_ADDR6"; do
	app refused --host "$host" --port "$TS_TARGET_PORT" --within 3
done
wait_log "$TS_TMP/client.log" "socks5 proxy unreachable" "(e) proxy down"
ts_alive "$TS_CLIENT_PID" || ts_fail "(e) the client died"
ts_alive "$DANTE_PID" || ts_fail "danted died"
ts_pass "socks5 outbound: danted (v4+v6, 8 MiB each way, 64 MiB, 16 concurrent, half-close, refused), faithful, microsocks user/pass, wrong password, proxy down"
