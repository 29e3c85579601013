#!/bin/bash
# Unauthenticated connections are small, counted and bounded apart from
# authenticated ones.  A stranger on a second address of the client host
# (10.77.1.3) opens 300 connections that send half a ClientHello and stop
# and 100 that complete the TLS handshake and send nothing (in turn); a
# second one (10.77.1.4) then opens 40 more half ClientHellos.  The server
# runs with max_preauth_per_source 32, max_preauth 48 and
# handshake_timeout 5s.  While the strangers hold them:
#
#   - at most 32 are held per source; past that a connection waits for
#     a turn, unread and without a TLS object (an honest client's burst
#     is served in turn), at most 4 x 32 per source and 2 x 48 in all at
#     a time, and the rest are reset at the accept; both counted (sessions
#     waited, preauth_source refusals, status and metrics); the status
#     shows the unauthenticated sessions, never more than 48;
#   - past 48 the oldest connections of the busiest source are closed
#     (counted as preauth), never the real client's warm connections;
#   - the server's resident memory grows by less than 4 MiB -- before the
#     limits one source could hold 4,096 of them at ~47 KB each;
#   - the real client (10.77.1.1) still gets its flows through, 4
#     downloads and an upload of 1 MiB, byte for byte, and
#     max_conns_per_source is not what refuses anyone;
#
# then handshake_timeout ends the strangers' connections (they never
# authenticate, and there is no cover site), the idle handshakes and the
# waiting ones too, and the count is back to the client's own warm
# connections.
#
#   tsc: stranger.py preauth (10.77.1.3, .4) ─┐
#        tunsplit client (10.77.1.1) ─────────┴─ tunsplit server ── tst: target
. "$(dirname "$0")/../lib.sh"
ts_init fault_preauth

src2=10.77.1.3 src3=10.77.1.4
ts_topology_up
ip -n "$NS_C" addr add "$src2/24" dev eth0 || ts_fail "second client address"
ip -n "$NS_C" addr add "$src3/24" dev eth0 || ts_fail "third client address"
ts_make_pki
# Unindented lines land at the top level of the YAML file.
ts_write_configs "" "  handshake_timeout: 5s
  max_preauth_per_source: 32
  max_preauth: 48
metrics: \"127.0.0.1:9354\""
ts_start_target
ts_start_server
ts_start_client

status() {
	ip netns exec "$NS_S" "$TUNSPLIT" status -s "$TS_TMP/server.sock" --json
}
field() {	# field JSON PY-EXPR (on st, lim)
	printf '%s' "$1" | "$TS_PY" -c "import json,sys; st=json.load(sys.stdin); lim=st['limits']; print($2)"
}

# A flow first, so that the server's memory has settled for the baseline.
TS_APP_TIMEOUT=30
ts_app recv --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --bytes 1m \
    --seed 1 >>"$TS_TMP/app.log" 2>&1 || ts_fail "first flow: $(tail -n 1 "$TS_TMP/app.log")"
rss0=$(ts_rss_kb "$TS_SERVER_PID")

release=$TS_TMP/stranger.release
t0=$(date +%s.%N)
# stranger SOURCE ARGS...: its connections, up when it says ready.
start_stranger() {
	local ready=$TS_TMP/stranger-$1.ready src=$1 i
	shift
	ts_bg "$NS_C" "stranger-$src" "$TS_PY" -u "$TS_LIB_DIR/stranger.py" \
	    --server "$TS_S_ADDR4" --port "$TS_SERVER_PORT" --source "$src" \
	    --timeout 2 --ready "$ready" --release "$release" --hold 20 \
	    preauth "$@"
	stranger=$TS_LAST_PID
	for i in $(seq 200); do
		[ -s "$ready" ] && return 0
		ts_alive "$stranger" ||
		    ts_fail "stranger $src: $(tail -n 1 "$TS_TMP/stranger-$src.log")"
		sleep 0.1
	done
	ts_fail "stranger $src did not get its connections up"
}
start_stranger "$src2" --partial 300 --idle 100
stranger2=$stranger
st=$(status) || ts_fail "server status"
held1=$(field "$st" 'lim["preauth"]')
start_stranger "$src3" --partial 40
st=$(status) || ts_fail "server status"
rss1=$(ts_rss_kb "$TS_SERVER_PID")
held=$(field "$st" 'lim["preauth"]')
refused=$(field "$st" 'lim["refused"]')
ts_log "strangers up: $held1, then $held unauthenticated sessions held, $(field "$st" 'st["sessions"]["waited"]') waited, refused $refused; server RSS $rss0 -> $rss1 KiB"
waited=$(field "$st" 'st["sessions"]["waited"]')
# 400 + 40 connections, 32 + 32 held at a time: every other one waited
# for a turn (and was then held and maybe closed for max_preauth), or was
# refused at the accept.
[ "$(field "$st" 'lim["refused"]["preauth_source"] + st["sessions"]["waited"] + lim["refused"]["preauth"] >= 376')" = True ] ||
    ts_fail "connections past the source's share neither waited nor were refused: waited $waited, refused $refused"
[ "$waited" -ge 1 ] || ts_fail "no connection waited for a turn"
[ "$(field "$st" 'lim["refused"]["preauth"] > 0')" = True ] ||
    ts_fail "max_preauth closed nothing: $refused"
[ "$(field "$st" 'lim["refused"]["source"]')" -eq 0 ] ||
    ts_fail "max_conns_per_source refused, not the pre-auth limit: $refused"
# The first stranger's 32 and the client's own warm connections; then
# never past max_preauth.
[ "$held1" -ge 32 ] && [ "$held1" -le 40 ] ||
    ts_fail "$held1 unauthenticated sessions held, 32 from the stranger expected"
[ "$held" -le 48 ] || ts_fail "$held unauthenticated sessions, max_preauth is 48"
# A sanitizer build's allocations carry redzones and a quarantine.
rsslim=4096
[ -n "${TS_SANITIZED:-}" ] && rsslim=32768
[ $((rss1 - rss0)) -lt $rsslim ] ||
    ts_fail "the server grew by $((rss1 - rss0)) KiB for $held unauthenticated connections"
prom=$(ip netns exec "$NS_S" "$TS_PY" -c 'import urllib.request as u; print(u.urlopen("http://127.0.0.1:9354/metrics", timeout=5).read().decode())') ||
    ts_fail "metrics"
printf '%s\n' "$prom" | grep -Eq '^tunsplit_limit_refused_total\{limit="preauth(_source)?"\} [1-9]' &&
printf '%s\n' "$prom" | grep -q '^tunsplit_preauth_sessions [1-9]' &&
printf '%s\n' "$prom" | grep -q '^tunsplit_sessions_waited_total [1-9]' ||
    ts_fail "the pre-auth limit is not in the metrics: $(printf "%s\n" "$prom" | grep -e preauth -e waited)"
# The busiest source made room, not the client.
grep -q "sess [0-9]*: closed: $TS_C_ADDR4:[0-9]* .*limit: max_preauth" \
    "$TS_TMP/server.log" && ts_fail "a real client's connection was closed for max_preauth"

# The real client meanwhile.
for seed in 2 3 4 5; do
	out=$(ts_app recv --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" \
	    --bytes 1m --seed "$seed" 2>&1) ||
	    ts_fail "real download $seed while the stranger holds its connections: $out"
done
ts_log "4 downloads of 1 MiB intact: $out"
ts_app send --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --bytes 1m \
    --seed 6 >>"$TS_TMP/app.log" 2>&1 || true
ts_expect_sink 6 1048576 "upload while the stranger holds its connections"

# handshake_timeout (5 s) ends every one of them: none authenticates.
for i in $(seq 80); do
	st=$(status) || ts_fail "server status"
	[ "$(field "$st" 'lim["preauth"]')" -le 8 ] && break
	sleep 0.1
done
secs=$(echo "$(date +%s.%N) - $t0" | bc)
[ "$(field "$st" 'lim["preauth"]')" -le 8 ] ||
    ts_fail "unauthenticated sessions outlived handshake_timeout: $(field "$st" 'lim["preauth"]') after ${secs}s"
touch "$release"
wait "$stranger" "$stranger2"
ts_log "$src2: $(tail -n 1 "$TS_TMP/stranger-$src2.log"); $src3: $(tail -n 1 "$TS_TMP/stranger-$src3.log")"
grep -q 'handshake timeout\|header timeout' "$TS_TMP/server.log" ||
    ts_fail "no session ended by the deadline"
ts_check_alive
ts_pass "300 partial ClientHellos and 100 idle handshakes from one source, 40 from another: 32 held per source, $held in all (RSS +$((rss1 - rss0)) KiB), $waited waited, $(field "$st" 'lim["refused"]["preauth_source"]') refused at the accept, $(field "$st" 'lim["refused"]["preauth"]') closed for max_preauth, all gone by the deadline (${secs}s); real flows intact"
