#!/bin/bash
# Outbound groups judged by real traffic (issue 17): balance weights and
# strategy flow, fastest moving off a member whose link degrades, and a
# member whose server no longer knows our key going down as "refused".
#
#   tsc$$                 linkem LA (2 ms each way,     tss$$            tst$$
#  +----------------+    later 60 ms + 3 % loss)      +-------------+   +-----------+
#  | app -> ts0 ->  |--lk0 10.77.1.1 == 10.77.1.2 lk0-| server A    |   | target    |
#  | tunsplit client|                                 |  :8443      |   | :9000 on  |
#  |                |    linkem LB (6 ms each way)    | server C    |---| 10.77.2.2,|
#  |                |--lk1 10.77.3.1 == 10.77.3.2 lk1-|  :8445 (lk0)|   | 10.77.2.3,|
#  +----------------+                                 | server B    |   | fd77:2::2 |
#                                                     |  :8444 (lk1)|   | 10.77.2.5 |
#                                                     +-------------+   +-----------+
# Client groups:
#   fast  fastest [a, b]                            final (10.77.2.2)
#   w     balance [{a, weight 3}, b], strategy flow  dst 10.77.2.3
#   fo    failover [c, b]                           dst fd77:2::2
#   slow  failover [a, b]                           dst 10.77.2.4
#   bal   balance [a, b], strategy flow             dst 10.77.2.5
# Every flow downloads 64 KiB whose SHA-256 the app checks.
#  1. w: 40 flows to one destination spread over both servers in turn,
#     30 on A and 10 on B.
#  2. fast: A's path is faster (4 ms round trip against 12 ms): a stream
#     of flows (one every 100 ms) lands on A.  Past fastest's hold time
#     (5 s from its first choice) LA's delay goes to
#     60 ms with 3 % loss: within a few flows the client logs "fastest is
#     now b" and the flows go to B; at most FEW (5) flows reach A after
#     the change, none fails.  A failover group slow [a, b] with its own
#     stream (on A too, 10.77.2.4) sees a marked degraded by its own
#     baseline (log, status, metrics) and moves to B.
#     Each member keeps its own warm pool: b's
#     holds its floor (1) while on standby, and serves b's flows once
#     it is active.
#  3. fo: flows go to C.  C's key table is replaced (SIGHUP) by one
#     without our key: the next flow is refused by C and tried once more
#     on B (the app sees no failure), c is down with why "refused" in
#     the log and in status, and the flows after it go to B at once.
# Every connection the target saw came from the server's address: the
# server namespace does not forward.
#
# The client runs two workers (TS_CLIENT_WORKERS=N: N), the flows spread
# over them by port: fastest's costs, a's slowness and c's refusal are
# the evidence of all workers' flows (group.h), so both move together.
# Strategy flow's round robin and the warm pools stay each worker's own.
#
# TS_CELL=balance (bench/groups_fastest.sh --cell balance) runs instead a
# throughput cell: both links limited to TS_LINK_RATE Mbit/s (40), then
# TS_REPS (3) times, interleaved, a round of TS_PAR (8) parallel
# hash-checked downloads of TS_SIZE (16m) each through slow (A alone)
# and one through bal (both servers); each round's aggregate goodput,
# how its flows split between a and b (tunsplit status) and the CPU
# used meanwhile are logged.  bal's flows must split 4:4, slow's all on A.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_groups_health

ts_find_linkem
TS_APP_TIMEOUT=60
PORT_B=8444
PORT_C=8445
B_ADDR4=10.77.3.2
C_LK1=10.77.3.1
T_ADDR4B=10.77.2.3
T_ADDR4C=10.77.2.4
T_ADDR4D=10.77.2.5
FEW=${TS_FEW:-5}
W=${TS_CLIENT_WORKERS:-2}
# What A's link becomes (linkem --ctl options; bench/groups_fastest.sh
# runs other cells).
DEGRADE=${TS_DEGRADE:---delay 60 --loss 3}
CELL=${TS_CELL:-}
RATE=
[ "$CELL" = balance ] && RATE=${TS_LINK_RATE:-40}

# ---- topology: two linkem links from client to server ----------------------
ts_ns_add "$NS_C"
ts_ns_add "$NS_S"
ts_ns_add "$NS_T"
# linkem NAME DEV DELAY: a link between the client and server namespaces.
linkem() {
	ts_start_linkem "linkem-$1" "$NS_C" --a-netns "/run/netns/$NS_C" \
	    --a-name "$2" --b-netns "/run/netns/$NS_S" --b-name "$2" \
	    --delay "$3" ${RATE:+--rate "$RATE"} --ctl "$TS_TMP/$1.ctl"
	ip -n "$NS_C" link set "$2" up
	ip -n "$NS_S" link set "$2" up
}
linkem la lk0 2
linkem lb lk1 6
ip -n "$NS_C" addr add "$TS_C_ADDR4/24" dev lk0
ip -n "$NS_S" addr add "$TS_S_ADDR4/24" dev lk0
ip -n "$NS_C" addr add "$TS_C_ADDR6/64" dev lk0 nodad
ip -n "$NS_S" addr add "$TS_S_ADDR6/64" dev lk0 nodad
ip -n "$NS_C" addr add "$C_LK1/24" dev lk1
ip -n "$NS_S" addr add "$B_ADDR4/24" dev lk1
ts_target_link_up
ip -n "$NS_T" addr add "$T_ADDR4B/24" dev eth0
ip -n "$NS_T" addr add "$T_ADDR4C/24" dev eth0
ip -n "$NS_T" addr add "$T_ADDR4D/24" dev eth0

ts_make_pki
ts_write_configs
TS_TARGET_PORT=9000
ts_bg "$NS_T" target "$TS_PY" -u "$TS_TOOLS" serve --bind "$TS_T_ADDR4" \
    --bind "$T_ADDR4B" --bind "$T_ADDR4C" --bind "$T_ADDR4D" \
    --bind "$TS_T_ADDR6" \
    --port "$TS_TARGET_PORT"
ts_wait_port "$NS_T" "$TS_TARGET_PORT" 10 "$TS_LAST_PID" ||
    ts_fail "target did not listen"

umask 077
sed -e "s/\"$TS_S_ADDR4:$TS_SERVER_PORT\", \"\[$TS_S_ADDR6\]:$TS_SERVER_PORT\"/\"$B_ADDR4:$PORT_B\"/" \
    -e "s/server.sock/server-b.sock/" "$TS_TMP/server.yaml" >"$TS_TMP/server-b.yaml"
sed -e "s/:$TS_SERVER_PORT\"/:$PORT_C\"/g" -e "s/server.sock/server-c.sock/" \
    "$TS_TMP/server.yaml" >"$TS_TMP/server-c.yaml"
cat >"$TS_TMP/client.yaml" <<EOF
log: {level: info, flows: true}
control: $TS_TMP/client.sock
metrics: 9354
tun: {name: $TS_TUN, mtu: 9000, address: [198.18.0.1/15, "fdfe:dcba:9876::1/64"]}
client:
  workers: $W
  connect_timeout: 5s
  outbounds:
    - {name: a, server: "$TS_S_ADDR4:$TS_SERVER_PORT", sni: $TS_SNI, ca: $TS_TMP/ca.pem, key: "$TS_KEY", pool: 4}
    - {name: b, server: "$B_ADDR4:$PORT_B", sni: $TS_SNI, ca: $TS_TMP/ca.pem, key: "$TS_KEY", pool: 4}
    - {name: c, server: "$TS_S_ADDR4:$PORT_C", sni: $TS_SNI, ca: $TS_TMP/ca.pem, key: "$TS_KEY", pool: 1}
    - name: fast
      type: fastest
      members: [a, b]
    - name: w
      type: balance
      strategy: flow
      members: [{name: a, weight: 3}, b]
    - name: fo
      type: failover
      members: [c, b]
    - name: slow
      type: failover
      members: [a, b]
    - name: bal
      type: balance
      strategy: flow
      members: [a, b]
  rules:
    - {dst: "$T_ADDR4B/32", outbound: w}
    - {dst: "$T_ADDR4C/32", outbound: slow}
    - {dst: "$T_ADDR4D/32", outbound: bal}
    - {dst: "$TS_T_ADDR6/128", outbound: fo}
  final: fast
EOF
umask 022
"$TUNSPLIT" check -c "$TS_TMP/client.yaml" >"$TS_TMP/check.log" 2>&1 ||
    ts_fail "tunsplit check: $(cat "$TS_TMP/check.log")"
for s in server server-b server-c; do
	"$TUNSPLIT" check -c "$TS_TMP/$s.yaml" >"$TS_TMP/check.log" 2>&1 ||
	    ts_fail "tunsplit check $s: $(cat "$TS_TMP/check.log")"
done
ts_bg "$NS_S" server "$TUNSPLIT" run -c "$TS_TMP/server.yaml"
TS_SERVER_PID=$TS_LAST_PID
ts_wait_port "$NS_S" "$TS_SERVER_PORT" 10 "$TS_LAST_PID" || ts_fail "A did not listen"
ts_bg "$NS_S" server-b "$TUNSPLIT" run -c "$TS_TMP/server-b.yaml"
PID_B=$TS_LAST_PID
ts_wait_port "$NS_S" "$PORT_B" 10 "$TS_LAST_PID" || ts_fail "B did not listen"
ts_bg "$NS_S" server-c "$TUNSPLIT" run -c "$TS_TMP/server-c.yaml"
PID_C=$TS_LAST_PID
ts_wait_port "$NS_S" "$PORT_C" 10 "$PID_C" || ts_fail "C did not listen"
ts_start_client

# stream HOST COUNT OUT [GAP]: COUNT flows one after another
# (flowstream.py), a flow GAP seconds after the one before started.
stream() {
	ip netns exec "$NS_C" timeout 120 "$TS_PY" -u \
	    "$TS_LIB_DIR/e2e/flowstream.py" "$1" "$TS_TARGET_PORT" \
	    "$TS_TMP/$3" --count "$2" --gap "${4:-0}" >>"$TS_TMP/apps.log" 2>&1
}
# flows_on LOG DST: the flows a server has carried to DST.
flows_on() { grep -c "sess [0-9]*: closed: .* -> $2:" "$TS_TMP/$1.log"; }
# wait_flows LOG DST N: until the server's log has N flows to DST (5 s):
# its line comes a moment after the app saw the end.
wait_flows() {
	local i
	for i in $(seq 50); do
		[ "$(flows_on "$1" "$2")" -ge "$3" ] && return 0
		sleep 0.1
	done
	return 1
}
all_ok() {	# all_ok OUT COUNT
	local ok
	ok=$(grep -c " ok " "$TS_TMP/$1")
	[ "$ok" -eq "$2" ] ||
	    ts_fail "$1: $ok of $2 flows ok: $(grep -v ' ok ' "$TS_TMP/$1" | head -n 3)"
}
# metrics FILE: the client's metrics page into FILE.
metrics() {
	ip netns exec "$NS_C" "$TS_PY" -c 'import urllib.request, sys
sys.stdout.write(urllib.request.urlopen("http://127.0.0.1:9354/metrics",
    timeout=5).read().decode())' >"$1" || ts_fail "metrics"
}
status() {
	ip netns exec "$NS_C" "$TUNSPLIT" status -s "$TS_TMP/client.sock" "$@"
}
# each_worker WHAT PATTERN: until every worker has logged PATTERN (10 s;
# worker 0's lines have no "worker N: " tag).
each_worker() {
	local i k tag
	for k in $(seq 0 $((W - 1))); do
		tag=
		[ "$k" -eq 0 ] || tag="worker $k: "
		for i in $(seq 100); do
			grep -qE "^[-0-9]+ [0-9:.]+ [a-z]+: $tag$2" \
			    "$TS_TMP/client.log" && break
			[ "$i" -lt 100 ] || ts_fail "$1: not in worker $k"
			sleep 0.1
		done
	done
}
# pool OUTBOUND FIELD: its warm pool's counter (status --json).
pool() {
	status --json | "$TS_PY" -c 'import json, sys
o = [x for x in json.load(sys.stdin)["outbounds"] if x["name"] == sys.argv[1]][0]
print(o["pool"][sys.argv[2]])' "$1" "$2" || ts_fail "status --json"
}

# obstat OUTBOUND FIELD: one of its counters (status --json).
obstat() {
	status --json | "$TS_PY" -c 'import json, sys
o = [x for x in json.load(sys.stdin)["outbounds"] if x["name"] == sys.argv[1]][0]
print(o[sys.argv[2]])' "$1" "$2" || ts_fail "status --json"
}
# ticks PID...: their CPU time so far, in clock ticks.
ticks() {
	local p t=0
	for p in "$@"; do
		t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat")))
	done
	echo "$t"
}
# busy: the machine's busy and total clock ticks so far.
busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8 }' /proc/stat; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", (b > 0 ? 100 * a / b : 0) }'; }

# ---- the throughput cell (TS_CELL=balance) -----------------------------------
if [ "$CELL" = balance ]; then
	par=${TS_PAR:-8}
	hz=$(getconf CLK_TCK)
	for r in $(seq "${TS_REPS:-3}"); do
		for via in slow bal; do
			dst=$T_ADDR4C
			[ "$via" = bal ] && dst=$T_ADDR4D
			a0=$(obstat a opened)
			b0=$(obstat b opened)
			c0=$(ticks "$TS_CLIENT_PID")
			s0=$(ticks "$TS_SERVER_PID" "$PID_B")
			l0=$(ticks "$(cat "$TS_TMP/linkem-la.pid")" "$(cat "$TS_TMP/linkem-lb.pid")")
			read -r m0 t0 < <(busy)
			w0=$(date +%s.%N)
			ip netns exec "$NS_C" timeout 600 "$TS_PY" -u \
			    "$TS_LIB_DIR/e2e/flowstream.py" "$dst" \
			    "$TS_TARGET_PORT" "$TS_TMP/$via-$r.log" --count 1 \
			    --parallel "$par" --bytes "${TS_SIZE:-16m}" \
			    --timeout 60 >>"$TS_TMP/apps.log" 2>&1
			wall=$(awk -v a="$w0" -v b="$(date +%s.%N)" \
			    'BEGIN { print (b - a) * '"$hz"' }')
			read -r m1 t1 < <(busy)
			all_ok "$via-$r.log" "$par"
			na=$(($(obstat a opened) - a0))
			nb=$(($(obstat b opened) - b0))
			mbit=$(awk '{ if (min == "" || $1 < min) min = $1
			    if ($4 > max) max = $4; b += $3 }
			    END { printf "%.1f", b * 8 / (max - min) / 1e6 }' \
			    "$TS_TMP/$via-$r.log")
			ts_log "cell balance round $r: $via $mbit Mbit/s," \
			    "$na flows on a, $nb on b; CPU (% of one core):" \
			    "client $(pct $(($(ticks "$TS_CLIENT_PID") - c0)) "$wall")," \
			    "servers $(pct $(($(ticks "$TS_SERVER_PID" "$PID_B") - s0)) "$wall")," \
			    "linkem $(pct $(($(ticks "$(cat "$TS_TMP/linkem-la.pid")" "$(cat "$TS_TMP/linkem-lb.pid")") - l0)) "$wall");" \
			    "machine $(pct $((m1 - m0)) $((t1 - t0))) % busy"
			if [ "$via" = bal ]; then
				[ "$na" -eq $((par / 2)) ] && [ "$nb" -eq $((par - par / 2)) ] ||
				    ts_fail "bal split $na:$nb, not even"
			else
				[ "$na" -eq "$par" ] && [ "$nb" -eq 0 ] ||
				    ts_fail "slow split $na:$nb, not all on a"
			fi
		done
	done
	ts_check_alive
	ts_pass "cell balance: $((${TS_REPS:-3} * 2)) rounds of $par flows"
fi

# ---- 1. balance weights, strategy flow ---------------------------------------
stream "$T_ADDR4B" 40 w.log
all_ok w.log 40
for i in $(seq 50); do
	[ $(($(flows_on server "$T_ADDR4B") + $(flows_on server-b "$T_ADDR4B"))) \
	    -ge 40 ] && break
	sleep 0.1
done
wa=$(flows_on server "$T_ADDR4B")
wb=$(flows_on server-b "$T_ADDR4B")
ts_log "balance w (a weight 3, b 1, strategy flow): $wa flows on A, $wb on B"
[ $((wa + wb)) -eq 40 ] || ts_fail "balance: $wa + $wb flows, not 40"
# (round robin: any 4 flows in a row split 3:1; each worker counts its
# own, and a worker's k flows give a at least 3k/4 and less than one
# more: 30 flows on A, plus at most one per worker past the first)
[ "$wa" -ge 30 ] && [ "$wa" -le $((30 + W - 1)) ] ||
    ts_fail "balance: weights 3:1 gave $wa:$wb, not 30:10 (give or take $((W - 1)))"

# ---- 2. fastest, then A's link degrades ------------------------------------
stream "$TS_T_ADDR4" 400 fast.log 0.1 &
sp=$!
stream "$T_ADDR4C" 400 slow.log 0.1 &
sp2=$!
sleep 5.5	# past the hold time (5 s) of fastest's first choice
for i in $(seq 150); do	# measured both, settled on A
	[ "$(flows_on server "$TS_T_ADDR4")" -ge 15 ] &&
	    [ "$(flows_on server "$T_ADDR4C")" -ge 15 ] && break
	sleep 0.1
done
grep -q "group fast: fastest is now a" "$TS_TMP/client.log" ||
    ts_fail "fastest did not choose a: $(grep 'group fast' "$TS_TMP/client.log")"
grep -q "group fast: fastest is now b" "$TS_TMP/client.log" &&
    ts_fail "fastest chose b with A faster: $(grep 'group fast' "$TS_TMP/client.log")"
on_b=$(flows_on server-b "$TS_T_ADDR4")
[ "$on_b" -le 2 ] || ts_fail "fastest: $on_b flows on B while A was faster"
# b on standby: its own pool holds the floor (1), warm for a failover
# (a pool in each worker: status adds them up).
pt=$(pool b target)
po=$(pool b opened)
[ "$pt" -eq "$W" ] && [ "$po" -ge "$W" ] ||
    ts_fail "standby b's pool: target $pt (want the floor, 1, in each of $W workers), opened $po"
echo "$DEGRADE" >"$TS_TMP/la.ctl"
kill -HUP "$(cat "$TS_TMP/linkem-la.pid")"
ts_wait_log "$TS_TMP/linkem-la.log" "reloaded" 20 || ts_fail "linkem LA reload"
# Counted from linkem's word that it applies the change.
t_deg=$(date +%s.%N)
a_before=$(flows_on server "$TS_T_ADDR4")
ts_wait_log "$TS_TMP/client.log" "group fast: fastest is now b" 150 ||
    ts_fail "fastest did not move to b: $(grep 'group fast' "$TS_TMP/client.log")"
t_sw=$(date +%s.%N)
a_after=$(($(flows_on server "$TS_T_ADDR4") - a_before))
each_worker "fastest moved to b" "group fast: fastest is now b"
# failover slow [a, b]: a's own baseline judges it degraded, and the
# flows go to b (only for the default change: a milder one may stay
# within the bar, HEALTH_SLOW_* in src/client/health.h).  Status at
# once: a trial after the backoff (1 s, then 2 s) may find it
# acceptable again, the baseline having moved towards the new delay.
if [ -z "${TS_DEGRADE:-}" ]; then
	ts_wait_log "$TS_TMP/client.log" "outbound a: degraded (slow: first byte" 200 ||
	    ts_fail "a not marked degraded: $(grep 'outbound a' "$TS_TMP/client.log")"
	st2=$(status) || ts_fail "status"
	each_worker "a degraded" "outbound a: degraded \(slow: first byte"
	t_dg=$(date +%s.%N)
	b_now=$(flows_on server-b "$T_ADDR4C")
	sleep 1
	[ "$(flows_on server-b "$T_ADDR4C")" -gt "$b_now" ] ||
	    ts_fail "failover: no flows on B with a degraded"
	# (or on a trial of one flow, after its backoff: the same why)
	grep -qE "^  (degraded|trial) for [0-9]+ s \(slow: first byte [0-9]+ ms, its baseline [0-9]+ ms\)" \
	    <<<"$st2" || ts_fail "status does not show a degraded and why: $st2"
	metrics "$TS_TMP/c-degraded.prom"
	grep -qxE 'tunsplit_outbound_degraded\{outbound="a"\} 1' \
	    "$TS_TMP/c-degraded.prom" || ts_fail "metrics do not show a degraded"
	ts_log "failover: $(grep -m1 'outbound a: degraded' "$TS_TMP/client.log" |
	    sed 's/.*outbound a/outbound a/'), $(awk -v a="$t_deg" \
	    -v b="$t_dg" 'BEGIN { printf "%.1f", b - a }') s after the change"
fi
sleep 2
b_now=$(flows_on server-b "$TS_T_ADDR4")
sleep 1
[ "$(flows_on server-b "$TS_T_ADDR4")" -gt "$b_now" ] ||
    ts_fail "fastest: no new flows on B after the switch"
st=$(status) || ts_fail "status"
touch "$TS_TMP/fast.log.stop" "$TS_TMP/slow.log.stop"
wait "$sp"
wait "$sp2"
total=$(wc -l <"$TS_TMP/fast.log")
all_ok fast.log "$total"
all_ok slow.log "$(wc -l <"$TS_TMP/slow.log")"
took=$(awk -v a="$t_deg" -v b="$t_sw" 'BEGIN { printf "%.2f", b - a }')
ts_log "fastest: A degraded ($DEGRADE) at $t_deg; moved to b ${took} s" \
    "later, $a_after flows reached A meanwhile; $total flows, all ok"
grep "group fast" "$TS_TMP/client.log" | sed 's/^/  /'
[ "$a_after" -le "$FEW" ] ||
    ts_fail "fastest: $a_after flows reached A after it degraded (> $FEW)"
grep -A2 "^outbound a " <<<"$st" | grep -q "first byte" ||
    ts_fail "status lacks a's first-byte time: $st"
metrics "$TS_TMP/c.prom"
grep -qE '^tunsplit_outbound_first_byte_seconds\{outbound="a",avg="recent"\} 0\.[0-9]+$' \
    "$TS_TMP/c.prom" || ts_fail "metrics lack a's first-byte time"
grep -qxE 'tunsplit_outbound_degraded\{outbound="b"\} 0' "$TS_TMP/c.prom" ||
    ts_fail "metrics lack b's degraded gauge"
grep -qxF 'tunsplit_group_active{group="fast",member="b"} 1' "$TS_TMP/c.prom" ||
    ts_fail "metrics do not show b active in fast"
pool_b=$(pool b taken)
[ "$pool_b" -gt 5 ] || ts_fail "active b's own pool served $pool_b flows"

# ---- 3. C refuses our key --------------------------------------------------
echo "--delay 2 --loss 0" >"$TS_TMP/la.ctl"	# C shares A's link
kill -HUP "$(cat "$TS_TMP/linkem-la.pid")"
stream "$TS_T_ADDR6" 5 fo1.log
all_ok fo1.log 5
wait_flows server-c "\[$TS_T_ADDR6\]" 5 ||
    ts_fail "fo: $(flows_on server-c "\[$TS_T_ADDR6\]") of 5 flows on C"
other=$("$TUNSPLIT" genkey)
sed -i "s|key: \"$TS_KEY\"|key: \"$other\"|" "$TS_TMP/server-c.yaml"
ts_hup "$PID_C" "$TS_TMP/server-c.log" "reloaded" "C without our key"
b1=$(flows_on server-b "\[$TS_T_ADDR6\]")
stream "$TS_T_ADDR6" 5 fo2.log
ts_wait_log "$TS_TMP/client.log" "outbound c: down (refused" 20 ||
    ts_fail "no log line for c going down as refused: $(grep 'outbound c' "$TS_TMP/client.log")"
# The first flow met the refusal: tried once more on b when nothing had
# left for the server yet; else (its first bytes went with the request,
# and the server may have passed them on: never repeated) it fails.
# The flows after it go to b at once.
fails=$(grep -vc " ok " "$TS_TMP/fo2.log")
[ "$fails" -le 1 ] && ! tail -n 4 "$TS_TMP/fo2.log" | grep -qv " ok " ||
    ts_fail "refused: flows failed after the first: $(cat "$TS_TMP/fo2.log")"
wait_flows server-b "\[$TS_T_ADDR6\]" $((b1 + 5 - fails)) ||
    ts_fail "refused: $(($(flows_on server-b "\[$TS_T_ADDR6\]") - b1)) of $((5 - fails)) flows on B"
[ "$fails" -eq 1 ] || grep -q "outbound c: .* before any byte moved: tried once more on b" \
    "$TS_TMP/client.log" || ts_fail "the refused flow was not tried on b"
# One refusal took c down in every worker: no other flow met it.
met=$(($(grep -c "outbound c: .* before any byte moved: tried once more on b" \
    "$TS_TMP/client.log") + fails))
[ "$met" -eq 1 ] || ts_fail "refused: $met flows met C's refusal, not 1"
each_worker "c down as refused" "outbound c: down \(refused"
[ "$(flows_on server-c "\[$TS_T_ADDR6\]")" -eq 5 ] ||
    ts_fail "refused: a flow went through C without our key"
st=$(status) || ts_fail "status"
grep -qE "^  down for [0-9]+ s \(refused" <<<"$st" ||
    ts_fail "status does not say c is down as refused: $st"
grep -q "^  group failover of c, b: active b" <<<"$st" ||
    ts_fail "status does not show fo on b: $st"
ts_log "refused: $fails of 5 flows failed;" \
    "$(grep -m1 'outbound c: down' "$TS_TMP/client.log" | sed 's/.*outbound c/outbound c/')"
ts_check_alive
ts_pass "balance 3:1 gave $wa:$wb, fastest left degraded A in ${took} s" \
    "($a_after flows on A), refused member down at its first refusal"
