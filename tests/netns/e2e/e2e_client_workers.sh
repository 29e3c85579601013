#!/bin/bash
# The client with two worker processes (client.workers: 2): one TUN
# queue each, DNS steered to worker 0, which issues the fake addresses
# and tells worker 1 before it answers (src/client/workers.h).
#
#   tsc: app ── dig n<i>.test @198.18.0.53 ──► ts0 queue 0: worker 0
#        app ── connect 198.19.x.y ──► ts0 queue 0 or 1 (by the kernel's
#        steering on addresses and ports) ══TLS══► tss ──► tst: target
#
#  1. 24 names, each resolved and at once dialled (the worker that gets
#     the flow must know the name the instant the answer is out), 64 KiB
#     hash-checked each: every flow carried its name to the server, and
#     both workers carried some (worker 1's log lines are tagged, its flow
#     ids even); a fake address never issued is still refused, on either;
#  2. the status adds the workers up: 24 flows, both workers listed, the
#     flow list of held flows has both workers' ids;
#  3. SIGHUP: worker 0 reloads and tells worker 1, which reloads too;
#  4. SIGTERM: both drain -- a download held open ends whole, new
#     connections are refused at once on either queue, worker 1 runs on
#     until worker 0 ends -- and end, the client exits 0;
#  5. a worker killed: the client says so and exits 1 (its queue's
#     flows are gone; a supervisor restarts the whole);
#  6. steering refused (TUNSPLIT_TUN_NO_STEER): one worker, said in the
#     log, flows still go.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_client_workers

command -v dig >/dev/null 2>&1 || ts_skip "missing tool: dig (apt-get install dnsutils)"
ETC_S=/etc/netns/$NS_S
trap 'rc=$?; rm -rf "$ETC_S"; (exit $rc); ts_cleanup' EXIT
RESOLVER=198.18.0.53		# routed into the TUN: worker 0 answers
N=24

ts_topology_up
ts_make_pki
ts_write_configs "  workers: 2
  dns:
    mode: fake-ip
    fake_ip_file: $TS_TMP/fakeip.table"
mkdir -p "$ETC_S" || ts_fail "mkdir $ETC_S"
{
	printf '127.0.0.1\tlocalhost\n'
	for i in $(seq $N); do printf '%s\tn%d.test\n' "$TS_T_ADDR4" "$i"; done
} >"$ETC_S/hosts"
printf 'hosts: files\n' >"$ETC_S/nsswitch.conf"
ts_start_target
ts_start_server
ts_start_client
log=$TS_TMP/client.log
grep -q "client ready: .*, 2 workers" "$log" ||
    ts_fail "the client does not say it runs 2 workers: $(grep -m 3 'tun\|ready' "$log")"
child=$(pgrep -P "$TS_CLIENT_PID" -x tunsplit | head -n 1)
[ -n "$child" ] || ts_fail "no worker process under the client ($TS_CLIENT_PID)"

# gone PID: true once PID has ended, within 10 s.
gone() {
	local i
	for i in $(seq 100); do
		ts_alive "$1" || return 0
		sleep 0.1
	done
	return 1
}

# The client again (its TUN's routes went with it).
restart() {
	ip -n "$NS_C" route del "$TS_T_NET4" 2>/dev/null
	ip -n "$NS_C" -6 route del "$TS_T_NET6" 2>/dev/null
	ts_start_client
}
dig_c() { ip netns exec "$NS_C" timeout 20 dig +time=2 +tries=2 "@$RESOLVER" "$@"; }
# by_name I WHAT: n$I.test resolved to a fake address, and 64 KiB
# fetched from it, hash-checked; WHAT names the flow when it fails.
by_name() {
	local a
	a=$(dig_c +short "n$1.test" A)
	case $a in 198.19.*) ;; *) ts_fail "$2: n$1.test A: '$a'" ;; esac
	ts_app recv --host "$a" --port "$TS_TARGET_PORT" --bytes 64k \
	    --seed "$1" >>"$TS_TMP/app.log" 2>&1 ||
	    ts_fail "$2: flow to n$1.test ($a): $(tail -n 1 "$TS_TMP/app.log")"
}

# ---- 1. resolve and dial at once, N names -----------------------------------
for i in $(seq $N); do by_name "$i" "two workers"; done
for i in $(seq $N); do
	grep -q "n$i\.test" "$TS_TMP/server.log" ||
	    ts_fail "the server never dialled n$i.test"
done
ts_wait_log "$log" "flow [0-9]* .*up [0-9]* down 65536 bytes" ||
    ts_fail "no flow summaries in the log"
sleep 1
w1=$(grep -c "worker 1: flow [0-9]*[02468] .*down 65536 bytes" "$log")
all=$(grep -c "flow [0-9]* .*down 65536 bytes" "$log")
w0=$((all - w1))
[ "$all" -eq $N ] || ts_fail "$all flow summaries, $N expected"
[ "$w0" -gt 0 ] && [ "$w1" -gt 0 ] ||
    ts_fail "flows per worker: $w0 and $w1 (both must have some; all on one: 2 in 2^24)"
grep -q "worker 1: flow [0-9]*[13579] " "$log" &&
    ts_fail "worker 1 gave an odd flow id: $(grep -m 1 'worker 1: flow [0-9]*[13579] ' "$log")"
terr=$(ip netns exec "$NS_C" timeout 20 "$TS_PY" -c '
import socket
for port in range(40000, 40008):
    s = socket.socket()
    s.settimeout(10)
    try:
        s.connect(("198.19.250.1", 9000))
        print("connected"); break
    except socket.timeout:
        print("timeout"); break
    except OSError as e:
        pass
    s.close()
else:
    print("refused")
' 2>&1)
[ "$terr" = refused ] || ts_fail "TCP to a never-issued fake address: $terr"
ts_log "$N names resolved and dialled at once, hash-checked: worker 0 $w0 flows, worker 1 $w1"

# ---- 2. the status adds up ----------------------------------------------------
st=$("$TUNSPLIT" status -j -s "$TS_TMP/client.sock") || ts_fail "status: $st"
printf '%s' "$st" >"$TS_TMP/status.json"
"$TS_PY" - "$TS_TMP/status.json" "$N" "$w0" "$w1" <<'EOF' || ts_fail "status: $(cat "$TS_TMP/status.json" | head -c 600)"
import json, sys
st = json.load(open(sys.argv[1]))
n, w0, w1 = (int(x) for x in sys.argv[2:5])
flows = st["flows"]
assert flows["total"] == n, "total %r, want %d" % (flows["total"], n)
w = [x["flows"] for x in st["workers"]]
assert w == [w0, w1], "per worker %r, want %r" % (w, [w0, w1])
EOF
ts_log "status: $N flows in all, per worker $w0 and $w1"

# ---- 3. SIGHUP reaches both ------------------------------------------------------
ts_reload "$TS_CLIENT_PID" "$log"
ts_wait_log "$log" "worker 1: reloaded " ||
    ts_fail "worker 1 did not reload: $(grep -i reload "$log" | tail -n 3)"
by_name 1 "after the reload"
ts_log "SIGHUP: both workers reloaded"

# ---- 4. SIGTERM: both drain, then end, status 0 --------------------------------
# A download held open across it (on either worker); meanwhile new
# connections, spread over both queues by their ports, are refused at
# once by whichever worker the kernel steers them to -- worker 1 too,
# which has no flow left but runs on until worker 0 ends the client.
a=$(dig_c +short n1.test A)
case $a in 198.19.*) ;; *) ts_fail "drain: n1.test A: '$a'" ;; esac
ts_bg "$NS_C" app-drain timeout 60 "$TS_PY" -u "$TS_TOOLS" recv --host "$a" \
    --port "$TS_TARGET_PORT" --bytes 4m --rate 1m --seed 41 \
    --progress "$TS_TMP/drain.progress"
drain=$TS_LAST_PID
for i in $(seq 50); do
	[ -s "$TS_TMP/drain.progress" ] && break
	sleep 0.1
done
[ -s "$TS_TMP/drain.progress" ] || ts_fail "drain: the download did not start"
kill -TERM "$TS_CLIENT_PID"
ts_wait_log "$log" "draining" || ts_fail "drain: not logged"
for i in 1 2 3 4 5 6 7 8; do
	ts_app refused --host "$a" --port "$TS_TARGET_PORT" --within 2 \
	    >>"$TS_TMP/refused.log" 2>&1 ||
	    ts_fail "drain: new connection $i: $(tail -n 1 "$TS_TMP/refused.log")"
done
ts_alive "$child" || ts_fail "worker 1 ended before the client did"
wait "$drain" || ts_fail "drain: the download: $(tail -n 1 "$TS_TMP/app-drain.log")"
gone "$TS_CLIENT_PID" && gone "$child" ||
    ts_fail "the client or worker 1 still runs 10 s after its last flow"
wait "$TS_CLIENT_PID"
rc=$?
[ "$rc" -eq 0 ] || ts_fail "the client exited $rc after SIGTERM"
ts_log "SIGTERM: download intact, 8 new connections refused, both workers ended, exit 0"

# ---- 5. a worker killed: the client stops, exit 1 ---------------------------------
restart
child=$(pgrep -P "$TS_CLIENT_PID" -x tunsplit | head -n 1)
[ -n "$child" ] || ts_fail "no worker process after the restart"
kill -KILL "$child"
gone "$TS_CLIENT_PID" ||
    ts_fail "the client runs on 10 s after its worker was killed"
wait "$TS_CLIENT_PID"
rc=$?
[ "$rc" -eq 1 ] || ts_fail "the client exited $rc after its worker was killed, 1 expected"
grep -q "worker 1 ended (signal 9); stopping the client" "$log" ||
    ts_fail "no word of the killed worker: $(tail -n 3 "$log")"
ts_log "worker 1 killed: the client said so and exited 1"

# ---- 6. no steering: one worker ----------------------------------------------------
export TUNSPLIT_TUN_NO_STEER=1
restart
unset TUNSPLIT_TUN_NO_STEER
grep -q "running one worker, not 2" "$log" ||
    ts_fail "the fallback was not logged: $(grep -m 3 'tun' "$log")"
[ -z "$(pgrep -P "$TS_CLIENT_PID" -x tunsplit)" ] ||
    ts_fail "a worker process runs although steering was refused"
for i in 1 2 3 4; do by_name "$i" "one worker"; done
ts_check_alive
ts_pass "2 client workers: $N flows by fake name spread $w0/$w1 with every name known in time, status summed, reload and drain reach both, a killed worker stops the client (exit 1), steering refused runs one worker"
