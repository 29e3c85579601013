#!/bin/bash
# The benchmark's short-connection client (bench/conns) on one namespace's
# loopback: it must count what it measured and refuse what it did not.
#
#   conns seq   -> a server that answers /1k with the same 1 KiB, then one
#                  whose every 50th answer differs in one byte
#   conns burst -> rrlat -s (the bench's echo server), then an echo that
#                  changes one byte of each connection, then one that
#                  closes after half
#
# The good servers must give every connection and no failure; each bad one
# exactly the failures it caused, and a non-zero exit.
. "$(dirname "$0")/../lib.sh"
ts_init bench_conns

ts_find_bench CONNS conns
ts_find_bench RRLAT rrlat
ts_ns_add "$NS_S"
ip -n "$NS_S" link set lo up
A=127.0.0.1

cat >"$TS_TMP/srv.py" <<'EOF'
import socket, sys, threading
mode, port = sys.argv[1], int(sys.argv[2])
body = bytes((i * 7) & 0xff for i in range(1024))
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", port))
ls.listen(1024)
n = 0
def http(c, i):
    got = b""
    while b"\r\n\r\n" not in got:
        b = c.recv(4096)
        if not b:
            return
        got += b
    b2 = bytearray(body)
    if mode == "http-bad" and i % 50 == 0:
        b2[100] ^= 1
    c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 1024\r\n\r\n" + b2)
def echo(c, i):
    off = 0
    while True:
        b = c.recv(65536)
        if not b:
            return
        b = bytearray(b)
        if mode == "echo-flip" and off <= 1000 < off + len(b):
            b[1000 - off] ^= 0x80
        if mode == "echo-half" and off + len(b) > 32768:
            c.sendall(b[:32768 - off])
            return
        off += len(b)
        c.sendall(b)
def serve(c, i):
    try:
        (http if mode.startswith("http") else echo)(c, i)
    finally:
        c.close()
while True:
    c, _ = ls.accept()
    n += 1
    threading.Thread(target=serve, args=(c, n), daemon=True).start()
EOF

PORT=7100
serve() {	# MODE -> $PORT: a new server of that mode
	PORT=$((PORT + 1))
	ts_bg "$NS_S" "srv-$1" "$TS_PY" "$TS_TMP/srv.py" "$1" "$PORT"
	ts_wait_port "$NS_S" "$PORT" 10 "$TS_LAST_PID" ||
	    ts_fail "server $1 did not listen"
}

# run NAME ARGS...: conns ARGS (the port is $PORT) -> $OUT, $RC
run() {
	local name=$1
	shift
	RC=0
	OUT=$(ip netns exec "$NS_S" timeout 60 "$CONNS" "$@" 2>"$TS_TMP/$name.err") ||
	    RC=$?
	echo "$name (rc $RC): $OUT" >>"$TS_TMP/results.log"
}

# field NAME: the number NAME in $OUT
field() {
	echo "$OUT" | sed -n "s/.*\"$1\": \\([0-9.]*\\).*/\\1/p"
}

expect() {	# WHAT RC CONNECTIONS FAILED
	[ "$RC" = "$2" ] && [ "$(field connections)" = "$3" ] &&
	    [ "$(field failed)" = "$4" ] ||
	    ts_fail "$1: want rc $2, $3 connections, $4 failed; got rc $RC: $OUT"
}

serve http-good
run seq-good seq $A $PORT 200
expect "seq, good server" 0 200 0
[ "$(field body_bytes)" = 1024 ] || ts_fail "seq: body of $(field body_bytes) B"

serve http-bad
run seq-bad seq $A $PORT 200
expect "seq, every 50th body changed" 1 196 4

PORT=$((PORT + 1))
ts_bg "$NS_S" rrlat "$RRLAT" -s -l $A -p $PORT
ts_wait_port "$NS_S" "$PORT" 10 "$TS_LAST_PID" || ts_fail "rrlat -s did not listen"
run burst-good burst $A $PORT 200 65536
expect "burst, rrlat -s" 0 200 0
[ "$(field bytes_each_way)" = 65536 ] || ts_fail "burst: $OUT"

serve echo-flip
run burst-flip burst $A $PORT 50 65536
expect "burst, one byte flipped on each" 1 0 50

serve echo-half
run burst-half burst $A $PORT 50 65536
expect "burst, echo closes after half" 1 0 50

ts_pass "seq and burst count good servers' connections and each bad one's failures"
