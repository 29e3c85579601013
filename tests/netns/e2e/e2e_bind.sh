#!/bin/bash
# The request header is bound to its TLS connection (protocol version 2):
# a header captured in plaintext and replayed on a new TLS connection is
# refused, even after a server restart has emptied the replay cache, while
# version 1 headers -- refused unless accept_v1 -- show the hole it closes.
#
#   tsc: ts_probe, tunsplit client ══TLS══ tss: server ── tst: tools.py :9000
#
# ts_probe plays a client that records the plaintext of its request header
# (-S, what a compromised endpoint, a debugging proxy or a leaked TLS key
# log would give away) and replays it verbatim on a new TLS connection
# (-L).  Served means status 0 and then the target's 100000-byte stream,
# SHA-256 checked; refused means not one byte back (no status byte: the
# server closes, there is no cover site here) and the reason in the
# server's log.
#   1. accept_v1 off (the default): a v2 header is served; the same bytes
#      on another connection: refused, "bad MAC"; a v1 header: refused,
#      "version 1 header".
#   2. accept_v1 on: a v1 header is served, its replay is caught by the
#      replay cache ("replayed header"); a v2 header is captured too.
#   3. The server restarts (empty cache).  The v1 header replayed: served
#      again -- the hole; the v2 header replayed: refused, "bad MAC".
#   4. The server restarts with accept_v1 off: the v1 replay is refused too.
# Through it all the tunsplit client's own flows carry hash-checked data.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_bind

PROBE=${TS_PROBE:-$(dirname "$TUNSPLIT")/tests/tools/ts_probe}
[ -x "$PROBE" ] || ts_fail "ts_probe not built ($PROBE)"

ts_standard_setup "  pool: 0"
SRV=$TS_S_ADDR4:$TS_SERVER_PORT
slog=$TS_TMP/server.log
N=100000
GET="SEND $N 7 0\\n"
want=$("$TS_PY" -c "import sys; sys.path.insert(0, '$(dirname "$TS_TOOLS")')
from tools import stream_hash; print(stream_hash(7, $N))") ||
    ts_fail "cannot compute the expected stream hash"

probe() {	# probe NAME ARGS...: one connection, received bytes in NAME.1
	local name=$1
	shift
	ip netns exec "$NS_C" timeout 20 "$PROBE" -c "$SRV" -C "$TS_TMP/ca.pem" \
	    -T 5000 -o "$TS_TMP/$name" "$@" >"$TS_TMP/probe-$name.log" 2>&1
}
served() {	# served NAME ARGS...
	local f=$TS_TMP/$1.1
	probe "$@" || ts_fail "$1: ts_probe failed: $(cat "$TS_TMP/probe-$1.log")"
	[ "$(head -c 1 "$f" | od -An -tx1 | tr -d ' ')" = 00 ] ||
	    ts_fail "$1: no status 0: $(cat "$TS_TMP/probe-$1.log")"
	[ "$(tail -c +2 "$f" | sha256sum | cut -d ' ' -f 1)" = "$want" ] ||
	    ts_fail "$1: the target's stream did not arrive intact ($(($(wc -c <"$f") - 1)) bytes)"
	ts_log "$1: status 0, $N bytes intact"
}
refused() {	# refused NAME REASON ARGS...
	local name=$1 why=$2 n
	shift 2
	n=$(grep -c "rejected .*: $why" "$slog")
	probe "$name" "$@" || ts_fail "$name: ts_probe failed: $(cat "$TS_TMP/probe-$name.log")"
	[ ! -s "$TS_TMP/$name.1" ] ||
	    ts_fail "$name: $(wc -c <"$TS_TMP/$name.1") bytes came back: $(cat "$TS_TMP/probe-$name.log")"
	for _ in $(seq 30); do
		[ "$(grep -c "rejected .*: $why" "$slog")" -gt "$n" ] && break
		sleep 0.1
	done
	[ "$(grep -c "rejected .*: $why" "$slog")" -gt "$n" ] ||
	    ts_fail "$name: no '$why' rejection in the server log"
	ts_log "$name: refused ($why), nothing came back"
}
tunnel() {	# tunnel WHAT: a flow of the tunsplit client, hash-checked
	ts_app recv --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --bytes 2m \
	    --seed 5 >"$TS_TMP/app-$1.log" 2>&1 ||
	    ts_fail "client flow $1: $(tail -n 1 "$TS_TMP/app-$1.log")"
	ts_log "client flow $1: $(tail -n 1 "$TS_TMP/app-$1.log")"
}
restart() {	# restart [SERVER-YAML-LINE]: the server, anew
	ts_stop_server TERM
	sed -i '/^  accept_v1:/d' "$TS_TMP/server.yaml"
	[ -n "${1:-}" ] && printf '%s\n' "$1" >>"$TS_TMP/server.yaml"
	ts_start_server
}

# ---- 1. defaults: v2 bound, v1 refused ------------------------------------
served v2 -k "$TS_KEY" -t "$TS_T_ADDR4:$TS_TARGET_PORT" -d "$GET" \
    -S "$TS_TMP/hdr-v2a"
[ "$(head -c 1 "$TS_TMP/hdr-v2a" | od -An -tx1 | tr -d ' ')" = 02 ] ||
    ts_fail "the captured header is not version 2"
refused v2-replay 'bad MAC' -L "$TS_TMP/hdr-v2a" -d "$GET"
refused v1-default 'version 1 header' -1 -k "$TS_KEY" \
    -t "$TS_T_ADDR4:$TS_TARGET_PORT" -d "$GET"
tunnel defaults

# ---- 2. accept_v1: v1 served once, then a replay ---------------------------
restart "  accept_v1: true"
served v1 -1 -k "$TS_KEY" -t "$TS_T_ADDR4:$TS_TARGET_PORT" -d "$GET" \
    -S "$TS_TMP/hdr-v1"
[ "$(head -c 1 "$TS_TMP/hdr-v1" | od -An -tx1 | tr -d ' ')" = 01 ] ||
    ts_fail "the captured header is not version 1"
refused v1-replay 'replayed header' -L "$TS_TMP/hdr-v1" -d "$GET"
served v2b -k "$TS_KEY" -t "$TS_T_ADDR4:$TS_TARGET_PORT" -d "$GET" \
    -S "$TS_TMP/hdr-v2b"
refused v2b-replay 'bad MAC' -L "$TS_TMP/hdr-v2b" -d "$GET"

# ---- 3. after a restart: the replay cache is empty --------------------------
restart "  accept_v1: true"
served v1-after-restart -L "$TS_TMP/hdr-v1" -d "$GET"
ts_log "(version 1: the recorded header worked again after the restart)"
refused v2b-after-restart 'bad MAC' -L "$TS_TMP/hdr-v2b" -d "$GET"
refused v2a-after-restart 'bad MAC' -L "$TS_TMP/hdr-v2a" -d "$GET"
tunnel after-restart

# ---- 4. accept_v1 off again ---------------------------------------------------
restart
refused v1-refused 'version 1 header' -L "$TS_TMP/hdr-v1" -d "$GET"
tunnel last

ts_check_alive
ts_pass "a captured v2 header replayed on a new TLS connection is refused (bad MAC), before and after a server restart; v1 refused by default, and with accept_v1 replayable after a restart; client flows intact"
