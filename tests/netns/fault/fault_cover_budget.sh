#!/bin/bash
# Strangers at the cover site must not take the users' memory.  A stranger
# on a second address of the client host (10.77.1.3) opens 60 TLS
# connections to the server, asks each for an 8 MiB file with a plain
# HTTP GET (not a tunsplit header: relayed to the cover site, nginx) and
# never reads; another (10.77.1.4) does the same with 4, and once those
# have filled the cover's budget, with 16 more.  The server runs
# with max_buffer_memory 4M (its cover relays get the default
# cover_buffer_memory, an eighth: 1 MiB) and max_cover_per_source 12,
# with small socket buffers so that the answers pile up in the relays.
# While the strangers hold them:
#
#   - at most 12 cover relays per source, the first stranger's other 48
#     refused (cover_source); the cover relays stay within their own
#     budget (peak <= 1 MiB) and the second stranger's last 16 are
#     refused (cover_memory); both counted in the status and the metrics;
#   - the real client (10.77.1.1) still opens new flows, and 8 downloads
#     and an upload of 1 MiB through the tunnel complete byte for byte;
#     no session is refused for memory (limit "memory" stays 0) -- before
#     the cover had its own budget the stranger filled max_buffer_memory
#     and real flows were refused ("limit: max_buffer_memory");
#
# and after the stranger leaves the cover budget is empty again.
#
#   tsc: stranger.py cover (10.77.1.3, .4) ─┐
#        tunsplit client (10.77.1.1) ───────┴─ tunsplit server ── tst: nginx
#                                                     (cover), target
. "$(dirname "$0")/../lib.sh"
ts_init fault_cover_budget

src2=10.77.1.3 src3=10.77.1.4
ts_topology_up
ip -n "$NS_C" addr add "$src2/24" dev eth0 || ts_fail "second client address"
ip -n "$NS_C" addr add "$src3/24" dev eth0 || ts_fail "third client address"
ts_sysctl "$NS_S" net/ipv4/tcp_wmem "4096 16384 65536"
ts_sysctl "$NS_S" net/ipv4/tcp_rmem "4096 16384 65536"
ts_make_pki
www=$TS_TMP/www
mkdir -p "$www"
head -c 8M /dev/zero >"$www/big"
chmod 644 "$www/big"
# Unindented lines land at the top level of the YAML file.
ts_write_configs "" "  max_buffer_memory: 4M
  max_cover_per_source: 12
  fallback: $TS_T_ADDR4:8080
metrics: \"127.0.0.1:9354\""
ts_start_http "$www" 8080
ts_start_target
ts_start_server
ts_start_client

status() {
	ip netns exec "$NS_S" "$TUNSPLIT" status -s "$TS_TMP/server.sock" --json
}
field() {	# field JSON PY-EXPR (on st; cm: the cover's budget)
	printf '%s' "$1" | "$TS_PY" -c "import json,sys; st=json.load(sys.stdin); lim=st['limits']; cm=lim.get('cover_memory', lim['buffer_memory']); print($2)"
}

# stranger NAME SOURCE CONNS: connections held until $release (--hold:
# only a bound should the test die), ready when all are up; their pid
# added to strangers.
release=$TS_TMP/stranger.release
strangers=()
start_stranger() {
	local ready=$TS_TMP/stranger-$1.ready i pid
	ts_bg "$NS_C" "stranger-$1" "$TS_PY" -u "$TS_LIB_DIR/stranger.py" \
	    --server "$TS_S_ADDR4" --port "$TS_SERVER_PORT" --source "$2" \
	    --ready "$ready" --release "$release" --hold 300 cover --conns "$3"
	pid=$TS_LAST_PID
	strangers+=("$pid")
	for i in $(seq 200); do
		[ -s "$ready" ] && return 0
		ts_alive "$pid" ||
		    ts_fail "stranger $1: $(tail -n 1 "$TS_TMP/stranger-$1.log")"
		sleep 0.1
	done
	ts_fail "stranger $1 did not get its connections up"
}
# cover_used N: wait (up to 20 s) until the cover relays hold N relay
# buffers (RELAY_BUF_SIZE, 65528 bytes: each relay whose stranger does
# not read holds one, full of the cover's answer).
cover_used() {
	for i in $(seq 200); do
		st=$(status) || ts_fail "server status"
		[ "$(field "$st" 'cm["used"]')" -ge $(($1 * 65528)) ] && return 0
		sleep 0.1
	done
	ts_fail "cover relays do not hold $1 buffers: $(field "$st" 'cm')"
}
start_stranger a "$src2" 60
cover_used 12
# The second stranger's first 4 take what is left of the budget (4
# buffers); admission keeps one buffer's room, so with 15 in use its
# next relays are refused for memory (and past 12, for the source).
start_stranger b "$src3" 4
cover_used 15
start_stranger c "$src3" 16
for i in $(seq 100); do
	st=$(status) || ts_fail "server status"
	[ "$(field "$st" 'lim["refused"]["cover_memory"]')" -gt 0 ] && break
	sleep 0.1
done
ts_log "strangers holding: $(field "$st" 'st["cover"]["relayed"]') relayed to the cover, cover memory $(field "$st" 'cm'), main budget $(field "$st" 'lim["buffer_memory"]')"

# The real client, meanwhile: downloads and an upload, hash-checked.
TS_APP_TIMEOUT=30
for seed in 1 2 3 4 5 6 7 8; do
	out=$(ts_app recv --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" \
	    --bytes 1m --seed "$seed" 2>&1) ||
	    ts_fail "real download $seed while the stranger holds the cover: $out"
done
ts_log "8 downloads of 1 MiB intact: $out"
ts_app send --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --bytes 1m \
    --seed 9 >>"$TS_TMP/app.log" 2>&1 || true
ts_expect_sink 9 1048576 "upload while the stranger holds the cover"

st=$(status) || ts_fail "server status"
refused=$(field "$st" 'st["limits"]["refused"]')
cmem=$(field "$st" 'st["limits"]["cover_memory"]')
ts_log "refused: $refused; cover memory: $cmem"
[ "$(field "$st" 'st["limits"]["refused"]["memory"]')" -eq 0 ] ||
    ts_fail "real sessions were refused for memory: $refused"
[ "$(field "$st" 'st["limits"]["cover_memory"]["peak"] <= 1048576')" = True ] ||
    ts_fail "the cover relays went past their budget: $cmem"
[ "$(field "$st" 'st["limits"]["refused"]["cover_memory"] > 0 and st["limits"]["refused"]["cover_source"] >= 48')" = True ] ||
    ts_fail "cover refusals not counted: $refused"
[ "$(field "$st" 'st["limits"]["cover_sessions"] <= 24')" = True ] ||
    ts_fail "more cover sessions than max_cover_per_source allows: $(field "$st" 'st["limits"]["cover_sessions"]')"
prom=$(ip netns exec "$NS_S" "$TS_PY" -c 'import urllib.request as u; print(u.urlopen("http://127.0.0.1:9354/metrics", timeout=5).read().decode())') ||
    ts_fail "metrics"
printf '%s\n' "$prom" | grep -q '^tunsplit_limit_refused_total{limit="cover_memory"} [1-9]' &&
printf '%s\n' "$prom" | grep -q '^tunsplit_limit_refused_total{limit="cover_source"} [1-9]' ||
    ts_fail "cover refusals not in the metrics"
printf '%s\n' "$prom" | grep -q '^tunsplit_cover_memory_peak_bytes ' ||
    ts_fail "no cover memory in the metrics"

touch "$release"
wait "${strangers[@]}"
ts_log "$src2: $(tail -n 1 "$TS_TMP/stranger-a.log"); $src3: $(tail -n 1 "$TS_TMP/stranger-b.log"), then $(tail -n 1 "$TS_TMP/stranger-c.log")"
for i in $(seq 50); do
	st=$(status) || ts_fail "server status"
	[ "$(field "$st" 'st["limits"]["cover_memory"]["used"]')" -eq 0 ] && break
	sleep 0.1
done
[ "$(field "$st" 'st["limits"]["cover_memory"]["used"]')" -eq 0 ] ||
    ts_fail "cover memory still in use after the stranger left: $(field "$st" 'st["limits"]["cover_memory"]')"
ts_check_alive
ts_pass "strangers with 60 + 4 + 16 cover connections held unread: at most 12 per source, cover relays within their 1 MiB (refused: $refused), real downloads and upload intact, no real session refused"
