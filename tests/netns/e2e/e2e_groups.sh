#!/bin/bash
# Outbound groups (issue 17): a failover group of two tunsplit servers,
# health judged by the flows themselves (no probes).
#
#   tsc$$ 10.77.1.1 ------ 10.77.1.2 tss$$ 10.77.2.1 ------ 10.77.2.2 tst$$
#   app -> ts0 -> tunsplit client      server A :8443          target :9000
#     group servers: failover [a, b]   server B :8444
#
# A stream of short flows (64 KiB downloads, SHA-256 checked, one every
# 50 ms) runs throughout (until a second after A is back):
#  1. both up: the flows go to A (the first member).
#  2. A is killed (SIGKILL: its port refuses, its connections are reset):
#     new flows succeed on B; the time from the kill to the first flow
#     that succeeds after it is measured (must be <= 1 s); a flow that
#     failed on A before any byte moved is tried once more on B, so the
#     apps see (almost) no failure: at most 2.
#  3. a long download starts on B; A comes back: after its backoff, one
#     flow tries it and the flows return to A; the long download on B
#     finishes intact (live flows never move).
#  3b. IPv6 flows take the select group pick by a rule: on A until
#     `tunsplit select pick b`, then on B, and still on B after the client
#     restarts (the choice is kept); select on a failover group is an error.
#  3c. A black-holed (nftables drops everything to its port; its
#     connect_timeout is 1 s): each flow that tries A stalls for that and
#     goes on on B (the slowest must take <= connect_timeout + 1 s); after
#     3 such A is down and flows go to B at once (the stream is one flow
#     at a time: that takes 3 connect timeouts, must be <= 5 s).
#  3d. Port 9001 takes the group lone of one member c, whose server port
#     nobody listens on: 3 TCP flows take c down, and then, with no
#     member up, TCP is reset at once and UDP told ICMP "prohibited",
#     as under protocol block.
#  4. both down: flows are refused at once (fail closed), none reaches
#     the target some other way; status says why.
# Every connection the target saw came from the server's address: the
# server namespace does not forward, and no flow was sent direct.
#
# The client runs two workers (TS_CLIENT_WORKERS=N: N), each its own
# share of the flows (the kernel hashes them by port): they judge the
# members' health from the flows of all (group.h), so in 3c 3 timeouts
# in all take A down in every worker, not 3 in each, and in 3d the 5
# flows, wherever they land, give c the backoffs one worker would.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_groups

TS_APP_TIMEOUT=60
PORT_B=8444
W=${TS_CLIENT_WORKERS:-2}

ts_topology_up
ts_make_pki
ts_write_configs
ts_start_target
ts_prove_no_forward "$TS_TARGET_PORT"

umask 077
sed -e "s/:$TS_SERVER_PORT\"/:$PORT_B\"/g" -e "s/server.sock/server-b.sock/" \
    "$TS_TMP/server.yaml" >"$TS_TMP/server-b.yaml"
cat >"$TS_TMP/client.yaml" <<EOF
log: {level: info, flows: true}
control: $TS_TMP/client.sock
metrics: 9353
tun: {name: $TS_TUN, mtu: 9000, address: [198.18.0.1/15, "fdfe:dcba:9876::1/64"]}
client:
  workers: $W
  connect_timeout: 10s
  outbounds:
    - name: a
      server: "$TS_S_ADDR4:$TS_SERVER_PORT"
      sni: $TS_SNI
      ca: $TS_TMP/ca.pem
      key: "$TS_KEY"
      pool: 1
      connect_timeout: 1s
    - name: b
      server: "$TS_S_ADDR4:$PORT_B"
      sni: $TS_SNI
      ca: $TS_TMP/ca.pem
      key: "$TS_KEY"
      pool: 1
    - name: servers
      type: failover
      members: [a, b]
    - name: pick
      type: select
      members: [a, b]
    - name: spread
      type: balance
      members: [a, b]
    - name: c
      server: "$TS_S_ADDR4:8445"
      sni: $TS_SNI
      ca: $TS_TMP/ca.pem
      key: "$TS_KEY"
      pool: 0
    - name: lone
      type: failover
      members: [c]
  rules:
    - port: 9001
      outbound: lone
    - dst: "$TS_T_ADDR6/128"
      outbound: pick
  final: servers
EOF
umask 022
"$TUNSPLIT" check -c "$TS_TMP/client.yaml" >"$TS_TMP/check.log" 2>&1 ||
    ts_fail "tunsplit check: $(cat "$TS_TMP/check.log")"

start_a() {
	ts_bg "$NS_S" server "$TUNSPLIT" run -c "$TS_TMP/server.yaml"
	PID_A=$TS_LAST_PID
	ts_wait_port "$NS_S" "$TS_SERVER_PORT" 10 "$PID_A" ||
	    ts_fail "server A did not listen"
}
start_a
ts_bg "$NS_S" server-b "$TUNSPLIT" run -c "$TS_TMP/server-b.yaml"
PID_B=$TS_LAST_PID
ts_wait_port "$NS_S" "$PORT_B" 10 "$PID_B" || ts_fail "server B did not listen"
ts_start_client

# The stream of short flows (flowstream.py): "T ok|fail ..." per flow.
stream() {
	ip netns exec "$NS_C" timeout 60 "$TS_PY" -u \
	    "$TS_LIB_DIR/e2e/flowstream.py" "$TS_T_ADDR4" "$TS_TARGET_PORT" \
	    "$TS_TMP/$2" --secs "$1" --gap 0.05 --timeout 5 \
	    >>"$TS_TMP/apps.log" 2>&1
}
# flows_on LOG: the flows a server has carried (its per-flow lines).
flows_on() { grep -c "sess [0-9]*: closed: .* -> $TS_T_ADDR4:" "$TS_TMP/$1.log"; }
status() {
	ip netns exec "$NS_C" "$TUNSPLIT" status -s "$TS_TMP/client.sock"
}

# ---- 1, 2: A up, then killed ---------------------------------------------------
stream 30 stream1.log &
sp=$!
for i in $(seq 100); do	# some flows on A first (slow under ASan)
	[ "$(flows_on server)" -ge 10 ] && break
	sleep 0.1
done
a_before=$(flows_on server)
[ "$a_before" -ge 10 ] || ts_fail "both up: only $a_before flows on A in 10 s"
[ "$(flows_on server-b)" -eq 0 ] ||
    ts_fail "both up: flows went to B: $(flows_on server-b)"
t_kill=$(date +%s.%N)
kill -KILL "$PID_A"
wait "$PID_A" 2>/dev/null
ts_log "server A killed at $t_kill"
ts_wait_log "$TS_TMP/client.log" "outbound a: down" 30 ||
    ts_fail "no log line for a going down"
sleep 1.5
st=$(status) || ts_fail "status"
grep -q "^  group failover of a, b: active b" <<<"$st" ||
    ts_fail "status does not show b active: $st"
grep -q "^  group balance of a, b: active by destination over b$" <<<"$st" ||
    ts_fail "status does not show the balance group on b alone: $st"
grep -qE "^  down for [0-9]+ s \((server unreachable|TLS|connect|server closed|refused: reset)" \
    <<<"$st" || ts_fail "status does not say a is down, and why: $st"
ts_log "status: $(grep -A1 '^outbound \(a\|servers\) ' <<<"$st" | tr '\n' '|')"
ip netns exec "$NS_C" "$TS_PY" -c 'import urllib.request, sys
sys.stdout.write(urllib.request.urlopen("http://127.0.0.1:9353/metrics",
    timeout=5).read().decode())' >"$TS_TMP/c.prom" || ts_fail "metrics"
for want in 'tunsplit_outbound_up{outbound="a"} 0' \
    'tunsplit_outbound_up{outbound="b"} 1' \
    'tunsplit_outbound_up{outbound="servers"} 1' \
    'tunsplit_group_active{group="servers",member="b"} 1' \
    'tunsplit_group_active{group="spread",member="b"} 1'; do
	grep -qxF "$want" "$TS_TMP/c.prom" || ts_fail "metrics lack: $want"
done

# ---- 3: a long download on B; A back ------------------------------------------
ts_app recv --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --bytes 8m \
    --seed 60 --rate 2m >"$TS_TMP/long.log" 2>&1 &
long=$!
sleep 0.5
b_long=$(flows_on server-b)
a_old=$(flows_on server)
start_a
t_back=$(date +%s.%N)
ts_log "server A back at $t_back"
ts_wait_log "$TS_TMP/client.log" "outbound a: up again" 100 ||
    ts_fail "a did not come back up"
sleep 1		# flows on A again
touch "$TS_TMP/stream1.log.stop"
wait "$sp"
wait "$long" || ts_fail "the long download on B: $(cat "$TS_TMP/long.log")"
ts_log "long download on B intact: $(cat "$TS_TMP/long.log")"
grep -q "SEND $((8 << 20)) bytes" "$TS_TMP/server-b.log" 2>/dev/null ||
    grep -q "flow [0-9]* .*down $((8 << 20))" "$TS_TMP/server-b.log" ||
    [ "$(flows_on server-b)" -gt "$b_long" ] ||
    ts_fail "the long download was not on B"

# The numbers.
read -r ok fail first_ok gap back_ok last_fail <<<"$(awk -v k="$t_kill" \
    -v b="$t_back" '
	$2 == "ok" { ok++ } $2 != "ok" { fail++; lf = $1 }
	$1 > k && $2 == "ok" && !f { f = $1 }
	END { printf "%d %d %s %.3f %d %s\n", ok, fail, f, f - k, 0, lf }' \
    "$TS_TMP/stream1.log")"
ts_log "stream: $ok flows ok, $fail failed (last at $last_fail); first success" \
    "after the kill ${gap} s after it"
# (0.000: a flow that had its bytes before the kill ended right after it)
awk -v g="$gap" 'BEGIN { exit !(g >= 0 && g <= 1.0) }' ||
    ts_fail "failover took ${gap} s (> 1 s, or no flow after the kill)"
# A flow that failed on A before any byte moved was tried once more on
# B: the app saw nothing.  (A warm connection to A that had taken the
# app's first bytes when A died cannot be: at most the pool's one, in
# each worker.)
[ "$fail" -le $((W + 1)) ] || ts_fail "$fail flows failed across the failover"
retried=$(grep -c "outbound a: .* before any byte moved: tried once more on b" \
    "$TS_TMP/client.log")
[ "$retried" -ge 1 ] || ts_fail "no flow was tried again on b"
# Failures only around the kill.
awk -v k="$t_kill" -v b="$t_back" '$2 != "ok" && ($1 < k - 0.2 || $1 > b + 0.5) { bad++ }
    END { exit bad > 0 }' "$TS_TMP/stream1.log" ||
    ts_fail "flows failed away from the kill: $(grep fail "$TS_TMP/stream1.log")"
a_after=$(($(flows_on server) - a_old))
t_up=$(grep -m1 "outbound a: up again" "$TS_TMP/client.log")
ts_log "client: $t_up"
[ "$a_after" -gt 0 ] || ts_fail "no flow returned to A after it came back"
ts_log "A carried $a_after flows after its restart"

# ---- 3b: select, kept across a restart ---------------------------------------
flows6_on() { grep -c "sess [0-9]*: closed: .* -> \[$TS_T_ADDR6\]:" "$TS_TMP/$1.log"; }
v6_on() {	# v6_on TAG SERVERLOG: one hash-checked download, carried there
	local a0 b0
	a0=$(flows6_on server) b0=$(flows6_on server-b)
	ts_app recv --host "$TS_T_ADDR6" --port "$TS_TARGET_PORT" --bytes 1m \
	    --seed 70 >>"$TS_TMP/apps.log" 2>&1 ||
	    ts_fail "$1: $(tail -n 1 "$TS_TMP/apps.log")"
	sleep 0.3	# the server's line for the flow
	if [ "$2" = server ]; then
		[ "$(flows6_on server)" -gt "$a0" ] &&
		    [ "$(flows6_on server-b)" -eq "$b0" ] ||
		    ts_fail "$1: the flow was not carried by A alone"
	else
		[ "$(flows6_on server-b)" -gt "$b0" ] &&
		    [ "$(flows6_on server)" -eq "$a0" ] ||
		    ts_fail "$1: the flow was not carried by B alone"
	fi
	ts_log "$1: $(tail -n 1 "$TS_TMP/apps.log")"
}
sel() { ip netns exec "$NS_C" "$TUNSPLIT" select -s "$TS_TMP/client.sock" "$@"; }
st=$(status) || ts_fail "status"
grep -q "^  group balance of a, b: active by destination over a, b$" <<<"$st" ||
    ts_fail "status does not show the balance group on a and b: $st"
v6_on "pick, first member" server
sel servers b >"$TS_TMP/sel.log" 2>&1 &&
    ts_fail "select on a failover group was accepted: $(cat "$TS_TMP/sel.log")"
grep -q "no group of that name with type: select" "$TS_TMP/sel.log" ||
    ts_fail "select servers b: $(cat "$TS_TMP/sel.log")"
sel pick b >"$TS_TMP/sel.log" 2>&1 || ts_fail "select pick b: $(cat "$TS_TMP/sel.log")"
grep -qx "pick b" "$TS_TMP/client.sock.select" ||
    ts_fail "the choice was not kept: $(cat "$TS_TMP/client.sock.select")"
v6_on "pick after select b" server-b
kill -TERM "$TS_CLIENT_PID"
wait "$TS_CLIENT_PID" 2>/dev/null
ts_start_client
grep -q "select: 1 choice kept from" "$TS_TMP/client.log" ||
    ts_fail "the restarted client did not read the choice"
v6_on "pick after a restart" server-b
ts_log "select: pick moved to b, and stayed there across a restart"

# ---- 3c: A black-holed -------------------------------------------------------
bh=
if command -v nft >/dev/null 2>&1; then
	l_bh=$(wc -l <"$TS_TMP/client.log")
	t_bh=$(date +%s.%N)
	ip netns exec "$NS_S" nft -f - <<EOF || ts_fail "nftables black hole"
table inet tsgroups {
	chain in {
		type filter hook input priority 0; policy accept;
		tcp dport $TS_SERVER_PORT drop
	}
}
EOF
	stream 6 stream3.log
	ip netns exec "$NS_S" nft delete table inet tsgroups
	# bh: from the black hole to the first flow started after it that
	# took under 0.3 s; worst: the slowest flow; fails: as the app saw.
	read -r bh worst bfail <<<"$(awk -v k="$t_bh" '
	    $1 > k && $2 == "ok" && $4 - $1 < 0.3 && !f { f = $1 }
	    $4 - $1 > w { w = $4 - $1 } $2 != "ok" { n++ }
	    END { printf "%.3f %.3f %d\n", f - k, w, n }' "$TS_TMP/stream3.log")"
	ts_log "black hole: flows quick again ${bh} s after it, the slowest" \
	    "took ${worst} s, $bfail failed (warm connections to A)"
	awk -v w="$worst" 'BEGIN { exit !(w > 0 && w <= 2.0) }' ||
	    ts_fail "black hole: a flow took ${worst} s"
	awk -v b="$bh" 'BEGIN { exit !(b > 0 && b <= 5.0) }' ||
	    ts_fail "black hole: flows quick again only after ${bh} s"
	[ "$bfail" -le "$W" ] || ts_fail "black hole: $bfail flows failed"
	grep -q "outbound a: down (connect timeout" "$TS_TMP/client.log" ||
	    ts_fail "black hole: a not down for its connect timeout"
	# 3 flows that met the timeout (tried again on b, or a warm
	# connection's, failed) took A down in every worker, wherever they
	# ran; after that only trials (one at a time, in any worker) met it.
	tail -n +"$((l_bh + 1))" "$TS_TMP/client.log" >"$TS_TMP/bh.log"
	timeouts=$(grep -cE "outbound a: connect timeout before any byte moved|: connect timeout, .* outbound a," \
	    "$TS_TMP/bh.log")
	trials=$(grep -c "outbound a: down [0-9]* s (connect timeout.*one flow let through" \
	    "$TS_TMP/bh.log")
	ts_log "black hole: $timeouts flows met A's timeout, $trials of them trials"
	[ "$timeouts" -ge 3 ] && [ $((timeouts - trials)) -le 3 ] ||
	    ts_fail "black hole: $timeouts flows met A's timeout, $trials of them trials: not 3 in all workers"
	for k in $(seq 1 $((W - 1))); do
		grep -q "worker $k: outbound a: down (connect timeout" \
		    "$TS_TMP/bh.log" ||
		    ts_fail "black hole: worker $k did not take a down"
	done
	[ "$(grep -c " ok " "$TS_TMP/stream3.log")" -ge 20 ] ||
	    ts_fail "black hole: too few flows succeeded"
else
	ts_log "black hole: skipped (no nft)"
fi

# ---- 3d: a group with no member up: TCP reset, UDP prohibited ---------------
# 3 flows take c down (1 s backoff); two failed trials make it 4 s,
# time enough for the checks below (each app a new python).
ip netns exec "$NS_C" "$TS_PY" - "$TS_T_ADDR4" >>"$TS_TMP/apps.log" 2>&1 <<'EOF' ||
import socket, sys, time
for pause in (0, 0, 0, 1.1, 2.1):
    time.sleep(pause)
    try:
        socket.create_connection((sys.argv[1], 9001), timeout=3).recv(1)
    except OSError:
        pass
EOF
    ts_fail "lone: the flows that take c down"
ts_wait_log "$TS_TMP/client.log" "outbound c: still down (server unreachable); the next try in 4000 ms" 10 ||
    ts_fail "c did not go down with a 4 s backoff"
ts_app refused --host "$TS_T_ADDR4" --port 9001 --within 0.5 \
    >>"$TS_TMP/apps.log" 2>&1 ||
    ts_fail "lone down: TCP not reset at once: $(tail -n 1 "$TS_TMP/apps.log")"
ts_udptool "$TS_TMP/apps.log" refused --to "$TS_T_ADDR4:9001" \
    --errno EHOSTUNREACH ||
    ts_fail "lone down: UDP: $(tail -n 2 "$TS_TMP/apps.log")"
ts_log "lone down: TCP reset at once, UDP told 'prohibited'"

# ---- 4: both down: refused, fail closed -------------------------------------
kill -KILL "$PID_A" "$PID_B"
wait "$PID_A" "$PID_B" 2>/dev/null
stream 3 stream2.log
n_ok=$(grep -c " ok " "$TS_TMP/stream2.log")
n_all=$(wc -l <"$TS_TMP/stream2.log")
[ "$n_ok" -eq 0 ] || ts_fail "both down: $n_ok flows succeeded"
[ "$n_all" -ge 20 ] || ts_fail "both down: only $n_all flows tried (slow refusals?)"
grep -q "flow [0-9]* .*: blocked\|outbound servers" "$TS_TMP/client.log" ||
    ts_fail "no flow refused by the group"
st=$(status) || ts_fail "status"
grep -q "^  group failover of a, b: DOWN: no member up" <<<"$st" ||
    ts_fail "status does not say the group is down: $st"
ts_log "both down: $n_all flows refused, none delivered; status: $(grep '^  group' <<<"$st")"

# Nothing went direct: every connection the target saw came from the server.
if grep -E "^target: \[[0-9a-f.:]+\]:[0-9]+ " "$TS_TMP/target.log" |
    grep -v -e "\[$TS_S2_ADDR4\]" -e "\[$TS_S2_ADDR6\]" | grep -q .; then
	ts_fail "the target saw a connection not from the server"
fi
ts_alive "$TS_CLIENT_PID" || ts_fail "the client died"
ts_pass "failover in ${gap} s ($fail flows failed, $retried retried on B), back to A after its restart, black hole: slowest flow ${worst:-skipped} s, fail closed"
