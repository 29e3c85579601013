#!/bin/bash
# trojan interoperability with Debian's trojan (trojan-gfw), both ways.
#
#   (a) app -> ts0 -> tunsplit client (protocol: trojan) ==TLS==> trojan
#       server (run_type server, in tss) -> target; TCP, and UDP (trojan
#       UDP ASSOCIATE) to the UDP echo server on :7
#   (b) app -> trojan client (run_type client: SOCKS5 on 127.0.0.1 in tsc)
#       ==TLS==> tunsplit server (trojan_passwords) -> target; TCP, and UDP
#       through the trojan client's SOCKS5 UDP ASSOCIATE (trojan UDP
#       packets to the tunsplit server) to the UDP echo server on :7
#
#   tsc$$ 10.77.1.1 ---- 10.77.1.2 tss$$ 10.77.2.1 ---- 10.77.2.2 tst$$
#   (a) tunsplit client    trojan :8444  (fallback: http on 127.0.0.1:8081)
#   (b) trojan client      tunsplit server :8443
#
# Every transfer is checked with SHA-256 on both ends.  trojan-gfw has no
# half-close (either side's EOF ends its session), so uploads are checked
# against the hash the target logs when it sees EOF, not a reply.
# Skipped, with a message, only when the trojan package cannot be installed.
. "$(dirname "$0")/../lib.sh"
ts_init interop_trojan

ts_need trojan trojan
TROJAN=$(command -v trojan || echo /usr/sbin/trojan)
PW=interop-$$-secret
TROJAN_PORT=8444
SOCKS_PORT=1080
UDP_PORT=7
N=$((8 << 20))

# trojan_json RUN_TYPE LOCAL_ADDR LOCAL_PORT REMOTE_ADDR REMOTE_PORT
trojan_json() {
	local ssl
	if [ "$1" = server ]; then
		ssl="\"cert\": \"$TS_TMP/server.pem\", \"key\": \"$TS_TMP/server.key\", \"key_password\": \"\", \"prefer_server_cipher\": true, \"alpn\": [\"http/1.1\"], \"reuse_session\": true, \"session_ticket\": false, \"session_timeout\": 600, \"plain_http_response\": \"\", \"curves\": \"\", \"dhparam\": \"\""
	else
		ssl="\"verify\": true, \"verify_hostname\": true, \"cert\": \"$TS_TMP/ca.pem\", \"sni\": \"$TS_SNI\", \"alpn\": [\"h2\", \"http/1.1\"], \"reuse_session\": true, \"session_ticket\": false, \"curves\": \"\""
	fi
	cat <<JSON
{
  "run_type": "$1",
  "local_addr": "$2", "local_port": $3,
  "remote_addr": "$4", "remote_port": $5,
  "password": ["$PW"],
  "log_level": 1,
  "ssl": { $ssl },
  "tcp": { "prefer_ipv4": false, "no_delay": true, "keep_alive": true,
    "reuse_port": false, "fast_open": false, "fast_open_qlen": 20 }
}
JSON
}

ts_topology_up
ts_make_pki
ts_write_configs "  protocol: trojan
  password: \"$PW\"
  pool: 2" "  trojan_passwords: [\"other-password\", \"$PW\"]
  fallback: \"127.0.0.1:8081\""
ts_start_target
ts_start_udpecho "$UDP_PORT"
ts_prove_no_forward "$TS_TARGET_PORT"

# ---- (a) tunsplit client -> trojan server ------------------------------------
ts_bg "$NS_S" fallback "$TS_PY" -m http.server --bind 127.0.0.1 8081
trojan_json server "$TS_S_ADDR4" "$TROJAN_PORT" 127.0.0.1 8081 \
    >"$TS_TMP/trojan-server.json"
ts_bg "$NS_S" trojan-server "$TROJAN" -c "$TS_TMP/trojan-server.json"
TROJAN_SERVER_PID=$TS_LAST_PID
ts_wait_port "$NS_S" "$TROJAN_PORT" 10 "$TROJAN_SERVER_PID" ||
    ts_fail "trojan server did not listen on $TROJAN_PORT"
sed -i "s/:$TS_SERVER_PORT\"/:$TROJAN_PORT\"/" "$TS_TMP/client.yaml"
ts_start_client

# Each upload has its own seed, so its hash in the target's log is its own
# (trojan-gfw has no half-close: that hash is the upload's only proof).
ts_updown "(a) $TS_T_ADDR4" "$TS_T_ADDR4" "$TS_TARGET_PORT" 11 "$N"
ts_updown "(a) $TS_T_ADDR6" "$TS_T_ADDR6" "$TS_TARGET_PORT" 12 "$N"
# UDP: the app's datagrams leave the TUN as a trojan UDP ASSOCIATE.
udp() { ts_udptool "$TS_TMP/udpapp.log" "$@"; }
udp echo --host "$TS_T_ADDR4" --port "$UDP_PORT" --sizes 1,512,1400,8000 \
    --seed 3 || ts_fail "(a) UDP echo from $TS_T_ADDR4: $(tail -n 3 "$TS_TMP/udpapp.log")"
udp echo --host "$TS_T_ADDR6" --port "$UDP_PORT" --sizes 1,512,1400,8000 \
    --seed 4 || ts_fail "(a) UDP echo from $TS_T_ADDR6: $(tail -n 3 "$TS_TMP/udpapp.log")"
ts_log "(a) UDP: $(grep -c 'bytes intact' "$TS_TMP/udpapp.log") datagrams echoed intact (IPv4, IPv6)"
ts_alive "$TROJAN_SERVER_PID" || ts_fail "trojan server died"
# The trojan server relayed it all: its log names the target.
grep -q "$TS_T_ADDR4" "$TS_TMP/trojan-server.log" ||
    ts_fail "(a) trojan server's log does not show the target"
kill -TERM "$TS_CLIENT_PID" 2>/dev/null
wait "$TS_CLIENT_PID" 2>/dev/null
ts_log "(a) passed"

if [ -n "${INTEROP_ONLY_A:-}" ]; then
	ts_pass "(a) only"
fi

# ---- (b) trojan client -> tunsplit server --------------------------------------
ts_start_server
trojan_json client 127.0.0.1 "$SOCKS_PORT" "$TS_S_ADDR4" "$TS_SERVER_PORT" \
    >"$TS_TMP/trojan-client.json"
ts_bg "$NS_C" trojan-client "$TROJAN" -c "$TS_TMP/trojan-client.json"
TROJAN_CLIENT_PID=$TS_LAST_PID
ts_wait_port "$NS_C" "$SOCKS_PORT" 10 "$TROJAN_CLIENT_PID" ||
    ts_fail "trojan client did not listen on $SOCKS_PORT"
ip -n "$NS_C" route add "$TS_T_NET4" via "$TS_S_ADDR4"	# never used: no forwarding

socks_app() {	# ARGS for socks_io.py
	ip netns exec "$NS_C" timeout 120 "$TS_PY" -u - "$@" <<'PY'
import socket, struct, sys, hashlib, ipaddress
sys.path.insert(0, sys.argv[1])
import tools
mode, proxy, host, port, n, seed = sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
s = socket.create_connection(("127.0.0.1", proxy), timeout=30)
s.sendall(b"\x05\x01\x00")
assert s.recv(2) == b"\x05\x00", "socks method"
ip = ipaddress.ip_address(host)
atyp = b"\x01" if ip.version == 4 else b"\x04"
s.sendall(b"\x05\x01\x00" + atyp + ip.packed + struct.pack(">H", port))
def need(k):
    got = b""
    while len(got) < k:
        b = s.recv(k - len(got))
        if not b:
            sys.exit("socks: EOF in reply")
        got += b
    return got
rep = need(4)
if rep[1] != 0:
    sys.exit("socks: reply %d" % rep[1])
# The bound address's type is the proxy's choice, not ours.
need({1: 4, 4: 16}.get(rep[3], 0) + 2)
if mode == "recv":
    s.sendall(b"SEND %d %d 0\n" % (n, seed))
    h = hashlib.sha256(); got = 0
    while True:
        b = s.recv(1 << 16)
        if not b:
            break
        h.update(b); got += len(b)
    want = tools.stream_hash(seed, n)
    if got != n or h.hexdigest() != want:
        sys.exit("recv: got %d sha256 %s, want %d %s" % (got, h.hexdigest(), n, want))
    print("recv: %d bytes sha256 %s match" % (got, want))
else:
    s.sendall(b"SINK\n")
    for b in tools.stream(seed, n):
        s.sendall(b)
    s.shutdown(socket.SHUT_WR)
    try:
        while s.recv(1 << 16):
            pass
    except OSError:
        pass
    print("send: %d bytes sent" % n)
PY
}

seed=20
for host in "$TS_T_ADDR4" "$TS_T_ADDR6"; do
	seed=$((seed + 1))
	out=$(socks_app "$TS_LIB_DIR" recv "$SOCKS_PORT" "$host" \
	    "$TS_TARGET_PORT" "$N" "$seed" 2>&1) ||
	    ts_fail "(b) download from $host: $out"
	ts_log "(b) $host $out"
	out=$(socks_app "$TS_LIB_DIR" send "$SOCKS_PORT" "$host" \
	    "$TS_TARGET_PORT" "$N" "$seed" 2>&1) ||
	    ts_fail "(b) upload to $host: $out"
	ts_expect_sink "$seed" "$N" "(b) upload to $host"
done
grep -q "trojan" "$TS_TMP/server.log" ||
    ts_fail "(b) the tunsplit server's log shows no trojan session"

# (b) UDP: the trojan client's SOCKS5 UDP ASSOCIATE (RFC 1928 section 7)
# becomes a trojan UDP ASSOCIATE to the tunsplit server, which sends each
# datagram to the echo server on the target.  One association carries
# datagrams to both families; every echo must come back from the target's
# address and port, byte for byte, and the SHA-256 of everything sent must
# equal that of everything received.
socks_udp() {	# PROXY-PORT TARGET-PORT SIZES HOST...
	ip netns exec "$NS_C" timeout 120 "$TS_PY" -u - "$@" <<'PY'
import hashlib, ipaddress, random, select, socket, struct, sys, time
proxy, port, sizes, hosts = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4:]
c = socket.create_connection(("127.0.0.1", proxy), timeout=10)
c.sendall(b"\x05\x01\x00")
assert c.recv(2) == b"\x05\x00", "socks method"
c.sendall(b"\x05\x03\x00\x01" + bytes(6))       # UDP ASSOCIATE 0.0.0.0:0
rep = c.recv(262)
if len(rep) < 10 or rep[1] != 0:
    sys.exit("socks: UDP ASSOCIATE refused: %r" % rep)
if rep[3] == 1:
    relay = (str(ipaddress.ip_address(rep[4:8])), struct.unpack(">H", rep[8:10])[0])
else:
    relay = (str(ipaddress.ip_address(rep[4:20])), struct.unpack(">H", rep[20:22])[0])
if relay[0] in ("0.0.0.0", "::"):
    relay = ("127.0.0.1", relay[1])
u = socket.socket(socket.AF_INET6 if ":" in relay[0] else socket.AF_INET, socket.SOCK_DGRAM)
rng = random.Random(7)
up, down, n = hashlib.sha256(), hashlib.sha256(), 0
for host in hosts:
    ip = ipaddress.ip_address(host)
    hdr = b"\x00\x00\x00" + (b"\x01" if ip.version == 4 else b"\x04") + ip.packed + struct.pack(">H", port)
    for size in [int(x) for x in sizes.split(",")]:
        data = rng.randbytes(size)
        got = None
        for attempt in range(3):
            u.sendto(hdr + data, relay)
            end = time.monotonic() + 3
            while time.monotonic() < end:
                r, _, _ = select.select([u], [], [], end - time.monotonic())
                if not r:
                    break
                pkt = u.recv(65536)
                if pkt[:len(hdr)] != hdr:
                    sys.exit("udp: reply header %s, want %s (the target's address)" % (pkt[:len(hdr)].hex(), hdr.hex()))
                if pkt[len(hdr):] == data:
                    got = pkt[len(hdr):]
                    break
                print("udp: %d bytes that are not the echo of %d" % (len(pkt) - len(hdr), size))
            if got is not None:
                break
        if got is None:
            sys.exit("udp: %d bytes to %s: no intact echo" % (size, host))
        up.update(data); down.update(got); n += 1
if up.hexdigest() != down.hexdigest():
    sys.exit("udp: sha256 sent %s, received %s" % (up.hexdigest(), down.hexdigest()))
print("udp: %d datagrams to %s echoed intact, sha256 %s both ways" % (n, " ".join(hosts), up.hexdigest()))
PY
}
out=$(socks_udp "$SOCKS_PORT" "$UDP_PORT" 1,512,1400,4000,8000 "$TS_T_ADDR4" "$TS_T_ADDR6" 2>&1) ||
    ts_fail "(b) UDP through the trojan client's SOCKS5 UDP ASSOCIATE: $out"
ts_log "(b) $out"
ts_wait_log "$TS_TMP/server.log" "udp: up [1-9][0-9]* dgrams .*(trojan)" 100 ||
    ts_fail "(b) UDP: the tunsplit server logged no trojan UDP association"

# The same by hand, for what the trojan client does not send: an empty
# datagram (echoed as an empty packet from the target), a datagram to a
# name (localhost: unresolved, or resolved to loopback and denied; never
# echoed), then a malformed packet (address type 2), which must end the
# stream.
ip netns exec "$NS_C" timeout 60 "$TS_PY" -u - "$TS_S_ADDR4" \
    "$TS_SERVER_PORT" "$TS_TMP/ca.pem" "$TS_SNI" "$PW" "$TS_T_ADDR4" \
    "$UDP_PORT" >"$TS_TMP/rawtrojan.log" 2>&1 <<'PY' ||
import hashlib, socket, ssl, struct, sys
host, port, ca, sni, pw, target, tport = sys.argv[1:8]
ctx = ssl.create_default_context(cafile=ca)
t = ctx.wrap_socket(socket.create_connection((host, int(port)), timeout=10),
                    server_hostname=sni)
tip = socket.inet_aton(target)
def pkt(atyp, addr, p, data):
    return bytes([atyp]) + addr + struct.pack(">HH", p, len(data)) + b"\r\n" + data
t.sendall(hashlib.sha224(pw.encode()).hexdigest().encode() + b"\r\n" +
          b"\x03\x01" + bytes(6) + b"\r\n")
buf = b""
def packet():
    global buf
    while True:
        if len(buf) >= 11:
            n = struct.unpack(">H", buf[7:9])[0]
            if len(buf) >= 11 + n:
                p, buf = buf[:11 + n], buf[11 + n:]
                return p
        b = t.recv(65536)
        if not b:
            sys.exit("EOF before a packet")
        buf += b
t.sendall(pkt(1, tip, int(tport), b""))
p = packet()
if p != pkt(1, tip, int(tport), b""):
    sys.exit("empty datagram: got %s" % p.hex())
print("empty datagram echoed as an empty packet from %s:%s" % (target, tport))
t.sendall(pkt(3, b"\x09localhost", int(tport), b"to a name"))
t.sendall(pkt(1, tip, int(tport), b"after the name"))
p = packet()
if p != pkt(1, tip, int(tport), b"after the name"):
    sys.exit("after the name: got %s" % p.hex())
print("the datagram to a name was not answered; the next one was")
t.sendall(b"\x02" + bytes(16))
t.settimeout(10)
try:
    while t.recv(65536):
        pass
except ssl.SSLError as e:
    pass
print("malformed packet: the server closed the stream")
PY
    ts_fail "(b) raw trojan UDP: $(cat "$TS_TMP/rawtrojan.log")"
ts_log "(b) raw trojan UDP: $(tr '\n' ';' <"$TS_TMP/rawtrojan.log")"
ts_wait_log "$TS_TMP/server.log" "malformed trojan packet" ||
    ts_fail "(b) raw trojan UDP: no 'malformed trojan packet' in the server log"
grep -Eq "udp: up 2 dgrams .*[ (]1 to names.*\(trojan\)" "$TS_TMP/server.log" ||
    ts_fail "(b) raw trojan UDP: the datagram to a name was not counted"

# A wrong password is treated like any unauthenticated client.
sed "s/\"$PW\"/\"wrong-$PW\"/" "$TS_TMP/trojan-client.json" \
    >"$TS_TMP/trojan-bad.json"
sed -i "s/\"local_port\": $SOCKS_PORT/\"local_port\": $((SOCKS_PORT + 1))/" \
    "$TS_TMP/trojan-bad.json"
ts_bg "$NS_C" trojan-bad "$TROJAN" -c "$TS_TMP/trojan-bad.json"
ts_wait_port "$NS_C" $((SOCKS_PORT + 1)) 10 "$TS_LAST_PID" ||
    ts_fail "second trojan client did not listen"
if out=$(socks_app "$TS_LIB_DIR" recv $((SOCKS_PORT + 1)) "$TS_T_ADDR4" \
    "$TS_TARGET_PORT" 1024 23 2>&1); then
	ts_fail "(b) a wrong trojan password got through: $out"
fi
grep -q "rejected .*bad trojan password: relayed to the cover site" \
    "$TS_TMP/server.log" ||
    ts_fail "(b) wrong password: no rejection to the cover site in the server log"
# The cover site (python's http.server) got the trojan line as a request.
ts_wait_log "$TS_TMP/fallback.log" "code 400" ||
    ts_fail "(b) wrong password: the cover site saw nothing"
ts_log "(b) wrong password: relayed to the cover site ($out)"

# Password rotation on SIGHUP: the "wrong" one becomes the only one.
sed -i "s/\"other-password\", \"$PW\"/\"wrong-$PW\"/" "$TS_TMP/server.yaml"
grep -q "wrong-$PW" "$TS_TMP/server.yaml" || ts_fail "server.yaml not rewritten"
ts_reload "$TS_SERVER_PID" "$TS_TMP/server.log" "(b) SIGHUP with new passwords"
out=$(socks_app "$TS_LIB_DIR" recv $((SOCKS_PORT + 1)) "$TS_T_ADDR4" \
    "$TS_TARGET_PORT" "$N" 31 2>&1) ||
    ts_fail "(b) after reload, the new password does not work: $out"
if socks_app "$TS_LIB_DIR" recv "$SOCKS_PORT" "$TS_T_ADDR4" \
    "$TS_TARGET_PORT" 1024 32 >/dev/null 2>&1; then
	ts_fail "(b) after reload, the old password still works"
fi
ts_log "(b) reload: new password accepted ($out), old one refused"
ts_alive "$TS_SERVER_PID" || ts_fail "the tunsplit server died"
ts_pass "(a) tunsplit client -> trojan server and (b) trojan client -> tunsplit server, TCP v4+v6 $N bytes each way sha256 match; UDP v4+v6 echoes intact both ways"
