#!/bin/bash
# An app that reuses its source port at once (lib.sh draws the topology).
#
# When the target closes first, the client's lwIP sends the first FIN and
# keeps the connection in TIME_WAIT for 2 MSL; the app's end closes
# second and keeps nothing, so its kernel may pick the same source port
# for the next connection to the same target -- busy apps do, and one did
# in e2e_status under load.  lwIP 2.1 answered that SYN with an ACK of the
# old connection, the app with a RST that TIME_WAIT ignores, and the
# connect hung for up to 120 s.  Here the app binds one fixed port for
# each of several connections in a row, IPv4 and IPv6, and each must
# connect and get its bytes within a few seconds.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_port_reuse
ts_standard_setup

ROUNDS=5 LIMIT=5
for host in "$TS_T_ADDR4" "$TS_T_ADDR6"; do
	out=$(ip netns exec "$NS_C" timeout 120 "$TS_PY" - "$host" \
	    "$TS_TARGET_PORT" "$ROUNDS" "$LIMIT" <<'EOF' 2>&1
import errno, socket, sys, time

host, port, rounds, limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
fam = socket.AF_INET6 if ":" in host else socket.AF_INET
lport = 40555
busy = (errno.EADDRINUSE, errno.EADDRNOTAVAIL)
for i in range(rounds):
    t0 = time.monotonic()
    try:
        while True:
            s = socket.socket(fam, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.settimeout(limit)
            try:
                s.bind(("", lport))
                s.connect((host, port))
                break
            except OSError as e:
                # Our last connection may still wait for its final ACK.
                s.close()
                if e.errno not in busy or time.monotonic() - t0 > 2:
                    raise
                time.sleep(0.01)
        s.sendall(b"SEND 1000 %d 0\n" % i)
        got = 0
        while True:
            d = s.recv(65536)
            if not d:
                break
            got += len(d)
    except OSError as e:
        print("round %d: %s after %.2f s" % (i, e, time.monotonic() - t0))
        sys.exit(1)
    s.close()
    if got != 1000:
        print("round %d: %d bytes, want 1000" % (i, got))
        sys.exit(1)
    print("round %d: port %d, %.3f s" % (i, lport, time.monotonic() - t0))
EOF
	) || ts_fail "$host: $out"
	ts_log "$host: $(echo "$out" | tr '\n' ' ')"
done
# Each new connection after the first ended a TIME_WAIT of lwIP's.
st=$(ip netns exec "$NS_C" "$TUNSPLIT" status -s "$TS_TMP/client.sock" --json) ||
    ts_fail "tunsplit status"
tw=$("$TS_PY" -c 'import json,sys; print(json.load(sys.stdin)["tun"]["tw_reused"])' <<<"$st") ||
    ts_fail "no tun.tw_reused in: $st"
[ "$tw" -eq $((2 * (ROUNDS - 1))) ] ||
    ts_fail "tun.tw_reused is $tw, want $((2 * (ROUNDS - 1)))"
ts_log "status: tun.tw_reused $tw"
ts_check_alive
ts_pass "$ROUNDS connections in a row from one source port, IPv4 and IPv6, none stalled"
