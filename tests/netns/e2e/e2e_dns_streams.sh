#!/bin/bash
# DNS upstreams over TCP, TLS and HTTPS (client.dns.upstreams protocol
# tcp, tls, https; issue 16 item 5), each asked by the client itself
# through the outbound the rules pick for the upstream's address
# (topology in lib.sh):
#
#   tsc: dig @198.18.0.53 ──► ts0 ──► client ──┬─ tunnel ──► tss ──► tst
#        (capture on eth0)                     │   dnsstreamtool 10.77.2.2:
#                                              │     tcp 53, tls 853, https 443
#                                              └─ direct (rule) ──► tss
#                                                  dnsstreamtool 10.77.1.2:443
#
#  1. each protocol answers right: *.tcp.test, *.tls.test, *.doh.test
#     through the tunnel (the resolver sees the server's 10.77.2.1),
#     *.home.test over HTTPS direct (the resolver sees the client's
#     10.77.1.1);
#  2. connections are reused: several queries, 30 at once too, one
#     connection each;
#  3. an upstream nobody listens on answers SERVFAIL, at once, and so
#     does one whose outbound (a rule by its port) is block;
#  4. malformed answers (a length prefix or Content-Length promising
#     more than comes, or one past any DNS message) and an answer to
#     another question (never cached) give SERVFAIL, and the upstream
#     answers the next query right;
#  5. leak-proof: the capture on the client's physical interface never
#     shows a packet to the tunnel's resolver (10.77.2.2), while the
#     direct DoH upstream's packets are there (the capture works);
#  6. the other outbounds a rule may pick (by the upstream's port): DoT
#     through trojan (the server logs a trojan session) and DoH through
#     SOCKS5 (dante in tss logs the connect);
#     an upstream of domain "." takes every name no other one takes;
#  7. a reload that moves tls.test to the DoH upstream applies at once,
#     and the upstreams serve on;
#  8. at most 64 queries wait per upstream (more: SERVFAIL at once), and
#     the client stops cleanly with queries in flight.
#
# DNS over TCP from the app (dig +tcp, the retry after a truncated UDP
# answer) is answered by the client the same way, query by query, though
# dns.server is the home resolver and the app's resolver address is
# direct by a rule (the home resolver listens on TCP 53 too: a query
# relayed there would be logged, and captured on eth0, as a leak): each
# name to its upstream, SERVFAIL from a dead one, pipelined
# queries answered by id, a bad length prefix resets that connection only.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_dns_streams

command -v dig >/dev/null 2>&1 || ts_skip "missing tool: dig (apt-get install dnsutils)"
"$TS_PY" -c 'import ssl' 2>/dev/null || ts_skip "python3 without ssl"
RESOLVER=198.18.0.53
MARK=0x7353
TOOL=$(dirname "$0")/../dnsstreamtool.py
CAP=$TS_TMP/capture.txt

PW=dns-streams-trojan-pw
ts_topology_up
ts_make_pki
ts_write_configs "" "  trojan_passwords: [\"$PW\"]"
ts_start_danted 1080
up() {	# NAME PROTOCOL ADDRESS DOMAIN
	printf '      - {name: %s, protocol: %s, address: "%s", domains: [%s]' \
	    "$1" "$2" "$3" "$4"
	[ "$2" = tcp ] || printf ', tls_name: %s, ca: %s' "$TS_SNI" "$TS_TMP/ca.pem"
	printf '}\n'
}
{
	ts_client_outbounds 5s
	cat <<EOF
    - name: troj
      protocol: trojan
      server: "$TS_S_ADDR4:$TS_SERVER_PORT"
      sni: $TS_SNI
      ca: $TS_TMP/ca.pem
      password: "$PW"
    - name: sock
      protocol: socks5
      server: "$TS_S_ADDR4:1080"
    - name: reject
      protocol: block
  rules:
    - dst: $TS_S_ADDR4/32
      outbound: home
    - {dst: $RESOLVER/32, outbound: home}
    - {dst: $TS_T_ADDR4/32, port: 5353, outbound: troj}
    - {dst: $TS_T_ADDR4/32, port: 5354, outbound: sock}
    - {dst: $TS_T_ADDR4/32, port: 5355, outbound: reject}
  final: tunnel
  dns:
    mode: redirect
    server: $TS_S_ADDR4
    cache_size: 64
    upstreams:
$(up dot tls "$TS_T_ADDR4" tls.test)
$(up doh https "$TS_T_ADDR4" doh.test)
$(up plain tcp "$TS_T_ADDR4" tcp.test)
$(up homedoh https "$TS_S_ADDR4" home.test)
$(up dead tls "$TS_T_ADDR4:8853" dead.test)
$(up viatrojan tls "$TS_T_ADDR4:5353" troj.test)
$(up viasocks https "$TS_T_ADDR4:5354" sock.test)
$(up blocked https "$TS_T_ADDR4:5355" blocked.test)
$(up all tcp "$TS_T_ADDR4" '"."')
EOF
} >"$TS_TMP/client.yaml"
chmod 600 "$TS_TMP/client.yaml"
"$TUNSPLIT" check -c "$TS_TMP/client.yaml" >"$TS_TMP/check.log" 2>&1 ||
    ts_fail "tunsplit check: $(cat "$TS_TMP/check.log")"
"$TUNSPLIT" check --secrets -c "$TS_TMP/client.yaml" >"$TS_TMP/dump.yaml" \
    2>"$TS_TMP/dump.log" || ts_fail "check --secrets: $(cat "$TS_TMP/dump.log")"
grep -q "protocol: https" "$TS_TMP/dump.yaml" &&
    grep -q "tls_name: \"*$TS_SNI" "$TS_TMP/dump.yaml" ||
    ts_fail "the dump lacks the stream upstreams: $(sed -n '/dns:/,$p' "$TS_TMP/dump.yaml")"
chmod 600 "$TS_TMP/dump.yaml"
"$TUNSPLIT" check -c "$TS_TMP/dump.yaml" >"$TS_TMP/dump2.log" 2>&1 ||
    ts_fail "the dump does not load: $(cat "$TS_TMP/dump2.log")"

ts_bg "$NS_T" far "$TS_PY" -u "$TOOL" --bind "$TS_T_ADDR4" --tcp 53 \
    --tls 853 --https 443 --cert "$TS_TMP/server.pem" --key "$TS_TMP/server.key" \
    a.tcp.test=10.55.3.1 b.tcp.test=10.55.3.2 c.tcp.test=10.55.3.3 \
    a.tls.test=10.55.1.1 b.tls.test=10.55.1.2 c.tls.test=10.55.1.3 \
    d.tls.test=10.55.1.4 a.doh.test=10.55.2.1 b.doh.test=10.55.2.2 \
    c.doh.test=10.55.2.3 d.doh.test=10.55.2.4 x.any.example=10.55.7.1 \
    t.tcp.test=10.55.3.9 t.tls.test=10.55.1.9 t.doh.test=10.55.2.9
ts_wait_log "$TS_TMP/far.log" ready || ts_fail "dnsstreamtool (tunnel side) did not start"
ts_bg "$NS_T" far2 "$TS_PY" -u "$TOOL" --bind "$TS_T_ADDR4" --tls 5353 \
    --https 5354 --cert "$TS_TMP/server.pem" --key "$TS_TMP/server.key" \
    a.troj.test=10.55.4.1 a.sock.test=10.55.5.1 a.tls.test=10.55.6.1
ts_wait_log "$TS_TMP/far2.log" ready || ts_fail "dnsstreamtool (second) did not start"
ts_bg "$NS_S" home "$TS_PY" -u "$TOOL" --bind "$TS_S_ADDR4" --https 443 --tcp 53 \
    --cert "$TS_TMP/server.pem" --key "$TS_TMP/server.key" a.home.test=10.66.1.1
ts_wait_log "$TS_TMP/home.log" ready || ts_fail "dnsstreamtool (home) did not start"

ts_start_server
ts_start_client
ts_bg "$NS_C" sniff "$TS_PY" -u "$(dirname "$0")/leaksniff.py" --out "$CAP" \
    --iface eth0 --seconds 120
ts_wait_log "$TS_TMP/sniff.log" ready || ts_fail "leaksniff did not start"

dig_c() { ip netns exec "$NS_C" timeout 20 dig +time=8 +tries=1 "@$RESOLVER" "$@"; }
want() {	# NAME ADDR
	local a
	a=$(dig_c +short "$1" A)
	[ "$a" = "$2" ] || ts_fail "$1: '$a', want $2 ($(tail -n 3 "$TS_TMP/client.log"))"
}
seen() { grep -c "^$1 $2 $3\$" "$TS_TMP/$4.log"; }

# 1. Each protocol, each its way.
want a.tcp.test 10.55.3.1
want a.tls.test 10.55.1.1
want a.doh.test 10.55.2.1
want a.home.test 10.66.1.1
for p in tcp:a.tcp.test tls:a.tls.test https:a.doh.test; do
	[ "$(seen "${p%%:*}" "$TS_S2_ADDR4" "${p#*:}" far)" = 1 ] ||
	    ts_fail "the tunnel's resolver did not see ${p#*:} over ${p%%:*} from the server: $(cat "$TS_TMP/far.log")"
done
[ "$(seen https "$TS_C_ADDR4" a.home.test home)" = 1 ] ||
    ts_fail "the home resolver did not see a.home.test from the client: $(cat "$TS_TMP/home.log")"
ts_log "tcp, tls and https through the tunnel (from $TS_S2_ADDR4); https direct (from $TS_C_ADDR4)"

# 2. Reuse: more queries, no new connection.
want b.tcp.test 10.55.3.2
want b.tls.test 10.55.1.2
want c.tls.test 10.55.1.3
want b.doh.test 10.55.2.2
want c.doh.test 10.55.2.3
# 30 at once to each (pipelined over tls, one after another over https):
# each gets its own answer.
# Each dig from a port of its own: dig sets SO_REUSEPORT, so two at once
# may share a port, and the kernel hands both answers to one of them.
pids=()
port=41000
for z in tls doh; do
	for i in $(seq 30); do
		port=$((port + 1))
		dig_c -b "0.0.0.0#$port" "p$i.$z.test" A >"$TS_TMP/par-$z-$i.txt" 2>&1 &
		pids+=($!)
	done
done
wait "${pids[@]}"	# only these: the daemons are children too
for z in tls doh; do
	for i in $(seq 30); do
		grep -q "status: NXDOMAIN" "$TS_TMP/par-$z-$i.txt" &&
		    grep -q "^;p$i\.$z\.test\..*IN.*A" "$TS_TMP/par-$z-$i.txt" ||
		    ts_fail "parallel p$i.$z.test: $(cat "$TS_TMP/par-$z-$i.txt")"
	done
done
for p in tcp tls https; do
	n=$(grep -c "^conn $TS_S2_ADDR4 $p\$" "$TS_TMP/far.log")
	[ "$n" = 1 ] || ts_fail "$p: $n connections for its queries, want 1 (reuse)"
done
ts_log "one connection per upstream for all its queries"

# 3. A dead upstream: SERVFAIL, quickly.
t0=$(date +%s%N)
r=$(dig_c www.dead.test A | grep -o 'status: [A-Z]*')
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$r" = "status: SERVFAIL" ] || ts_fail "dead upstream: '$r', want SERVFAIL"
[ "$ms" -lt 3000 ] || ts_fail "dead upstream: SERVFAIL after $ms ms"
ts_log "dead upstream: SERVFAIL in $ms ms"
# One whose outbound is block: SERVFAIL, nothing sent anywhere.
r=$(dig_c www.blocked.test A | grep -o 'status: [A-Z]*')
[ "$r" = "status: SERVFAIL" ] || ts_fail "blocked upstream: '$r', want SERVFAIL"
! grep -q "5355" "$TS_TMP/server.log" ||
    ts_fail "the blocked upstream's query reached the server: $(grep 5355 "$TS_TMP/server.log")"

# 4. Malformed answers: SERVFAIL, and the upstream serves on.
for n in trunc.tls.test big.tls.test trunc.doh.test big.doh.test \
    trunc.tcp.test big.tcp.test wrong.tls.test; do
	r=$(dig_c "$n" A | grep -o 'status: [A-Z]*')
	[ "$r" = "status: SERVFAIL" ] || ts_fail "$n: '$r', want SERVFAIL"
done
want d.tls.test 10.55.1.4
want d.doh.test 10.55.2.4
want c.tcp.test 10.55.3.3
grep -q "malformed answer" "$TS_TMP/client.log" ||
    ts_fail "the client did not log the malformed answers"
st=$(ip netns exec "$NS_C" "$TUNSPLIT" status --json -s "$TS_TMP/client.sock") ||
    ts_fail "status"
for u in dot:tls:3 doh:https:2 plain:tcp:2 dead:tls:1; do
	IFS=: read -r n p f <<<"$u"
	grep -q "{\"name\":\"$n\",[^}]*\"protocol\":\"$p\",\"failed\":$f}" <<<"$st" ||
	    ts_fail "status: upstream $n: $(grep -o "{\"name\":\"$n\",[^}]*}" <<<"$st")"
done
ts_log "truncated and oversize answers: SERVFAIL; the upstreams serve on"
# Over the 512 bytes of a query without EDNS: the additional records
# go (no TC, the address is there); an answer section that long comes
# back truncated (TC), with no records.
r=$(dig_c +noedns +ignore long.tls.test A)
grep -q "flags: qr rd ra;" <<<"$r" && grep -q "10.55.9.1" <<<"$r" &&
    grep -q "ADDITIONAL: 0" <<<"$r" ||
    ts_fail "long.tls.test without EDNS: $r"
r=$(dig_c +noedns +ignore huge.tls.test A)
grep -q "flags: qr tc rd ra;" <<<"$r" && grep -q "ANSWER: 0" <<<"$r" ||
    ts_fail "huge.tls.test without EDNS: $r"
[ "$(dig_c +short huge.tls.test A | wc -l)" = 60 ] ||
    ts_fail "huge.tls.test with EDNS: not 60 addresses"
ts_log "long answers: additional records dropped to fit 512 bytes, TC when the answer itself is longer"

# 4b. Over TCP: each query answered by the client, each name by its
# upstream; never relayed to dns.server (the home resolver, direct).
for p in tcp:t.tcp.test:10.55.3.9 tls:t.tls.test:10.55.1.9 \
    https:t.doh.test:10.55.2.9; do
	IFS=: read -r pr n a <<<"$p"
	r=$(dig_c +tcp +short "$n" A)
	[ "$r" = "$a" ] || ts_fail "$n over TCP: '$r', want $a"
	[ "$(seen "$pr" "$TS_S2_ADDR4" "$n" far)" = 1 ] ||
	    ts_fail "$n over TCP did not go to its $pr upstream: $(tail -n 3 "$TS_TMP/far.log")"
done
r=$(dig_c +tcp www.dead.test A | grep -o 'status: [A-Z]*')
[ "$r" = "status: SERVFAIL" ] || ts_fail "dead upstream over TCP: '$r', want SERVFAIL"
# The retry after a truncated answer: the whole answer, from the upstream.
[ "$(dig_c +noedns +short huge.tls.test A | wc -l)" = 60 ] ||
    ts_fail "huge.tls.test: the retry over TCP did not get its 60 addresses"
cat >"$TS_TMP/tcpdns.py" <<'PY'
import socket, struct, sys
def q(i, name):
    return struct.pack("!HHHHHH", i, 0x0100, 1, 0, 0, 0) + b"".join(
        bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0\0\1\0\1"
def read(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise EOFError
        b += c
    return b
def ask(s, i):
    m = read(s, struct.unpack("!H", read(s, 2))[0])
    return struct.unpack("!H", m[:2])[0], m[3] & 15, m[-4:]
host = sys.argv[1]
a = socket.create_connection((host, 53), timeout=8)
b = socket.create_connection((host, 53), timeout=8)
names = ["a.tcp.test", "a.tls.test", "www.dead.test", "a.doh.test", "t.tls.test"]
a.sendall(b"".join(struct.pack("!H", len(m)) + m for m in
                   (q(100 + i, n) for i, n in enumerate(names))))
got = {}
for _ in names:
    i, rc, tail = ask(a, 0)
    got[i] = (rc, socket.inet_ntoa(tail) if rc == 0 else "-")
print("pipelined", " ".join(f"{names[i - 100]}={got[i][0]}/{got[i][1]}"
                              for i in sorted(got)))
b.sendall(b"\0\3abc")
try:
    print("bad-length", "answered" if b.recv(100) else "closed")
except ConnectionResetError:
    print("bad-length", "reset")
m = q(7, "c.tcp.test")
a.sendall(struct.pack("!H", len(m)) + m)
i, rc, tail = ask(a, 0)
print("after", i, rc, socket.inet_ntoa(tail))
a.shutdown(socket.SHUT_WR)
print("fin", "closed" if a.recv(100) == b"" else "open")
PY
r=$(ip netns exec "$NS_C" timeout 20 "$TS_PY" "$TS_TMP/tcpdns.py" "$RESOLVER" 2>&1)
want_r="pipelined a.tcp.test=0/10.55.3.1 a.tls.test=0/10.55.1.1 www.dead.test=2/- a.doh.test=0/10.55.2.1 t.tls.test=0/10.55.1.9
bad-length reset
after 7 0 10.55.3.3
fin closed"
[ "$r" = "$want_r" ] || ts_fail "queries over one TCP connection: $r"
[ "$(grep -c "^tcp " "$TS_TMP/home.log")" = 0 ] ||
    ts_fail "queries over TCP went to dns.server: $(grep "^tcp " "$TS_TMP/home.log" | head -n 3)"
ts_log "over TCP: each name to its upstream, SERVFAIL from a dead one, pipelined, a bad length resets that connection only"

# 5. Nothing to the tunnel's resolver on the wire; the direct one's there.
sleep 0.3
l=$(awk -v t="$TS_T_ADDR4" '$4 == t || $3 == t' "$CAP")
[ -z "$l" ] || ts_fail "packets to the tunnelled resolver on eth0: $(head -n 5 <<<"$l")"
grep -q "^eth0 tcp $TS_C_ADDR4 $TS_S_ADDR4 [0-9]* 443\$" "$CAP" ||
    ts_fail "the capture lacks the direct DoH upstream: $(head -n 5 "$CAP")"
l=$(awk '$7 == "dns" || ($2 == "tcp" && $6 == 53)' "$CAP")
[ -z "$l" ] || ts_fail "plain DNS on eth0: $(head -n 5 <<<"$l")"
ts_log "capture: $(wc -l <"$CAP") packets on eth0, none to $TS_T_ADDR4, the direct DoH ones there"

# 6. Through trojan and SOCKS5 (the server's trojan session: after 7).
want a.troj.test 10.55.4.1
want a.sock.test 10.55.5.1
[ "$(seen tls "$TS_S2_ADDR4" a.troj.test far2)" = 1 ] &&
    [ "$(seen https "$TS_S2_ADDR4" a.sock.test far2)" = 1 ] ||
    ts_fail "the second resolver's log: $(cat "$TS_TMP/far2.log")"
grep -q "$TS_T_ADDR4.5354" "$TS_TMP/danted.log" ||
    ts_fail "dante did not connect to $TS_T_ADDR4:5354: $(tail -n 3 "$TS_TMP/danted.log")"
ts_log "DoT through trojan, DoH through SOCKS5"
# The last upstream's "." takes every name no other one does.
want x.any.example 10.55.7.1
[ "$(seen tcp "$TS_S2_ADDR4" x.any.example far)" = 1 ] ||
    ts_fail "the catch-all upstream did not ask x.any.example: $(tail -n 3 "$TS_TMP/far.log")"

# 7. Reload: tls.test now to the second resolver's DoT (through trojan).
sed -i 's/domains: \[troj.test\]/domains: [troj.test, tls.test]/' "$TS_TMP/client.yaml"
sed -i '/name: dot,/d' "$TS_TMP/client.yaml"
ts_reload "$TS_CLIENT_PID" "$TS_TMP/client.log" "client SIGHUP: tls.test to viatrojan"
want a.tls.test 10.55.6.1
want b.doh.test 10.55.2.2
# The reload closed the old upstreams' connections: the server logs the
# trojan session now.
ts_wait_log "$TS_TMP/server.log" "$TS_T_ADDR4:5353 user trojan#" ||
    ts_fail "no trojan session to $TS_T_ADDR4:5353 on the server: $(grep trojan "$TS_TMP/server.log" | tail -n 3)"
ts_log "reload: a.tls.test from the other upstream, the cache emptied"

# 8. 70 queries at an upstream that answers none, and one over TCP: 64
# wait (the bound), the other 7 are SERVFAIL at once.  Then the client stops with those 64
# in flight: nothing freed is used (a sanitizer build reports it).
# One of the 64 comes over TCP first, still in flight at the stop too.
dig_c +tcp +time=10 slow0.tls.test A >"$TS_TMP/slow-tcp.txt" 2>&1 &
tcpdig=$!
ts_wait_log "$TS_TMP/far2.log" "slow0.tls.test" ||
    ts_fail "the query over TCP did not reach the silent upstream"
pids=()
for i in $(seq 70); do
	dig_c +time=2 +tries=1 -b "0.0.0.0#$((42000 + i))" "slow$i.tls.test" A \
	    >"$TS_TMP/slow-$i.txt" 2>&1 &
	pids+=($!)
done
wait "${pids[@]}"
n=$(cat "$TS_TMP"/slow-[0-9]*.txt | grep -c "status: SERVFAIL")
[ "$n" = 7 ] || ts_fail "70 queries at a silent upstream: $n SERVFAIL, want 7 (63 wait, with the TCP one)"
grep -q "^tls $TS_S2_ADDR4 slow[0-9]*.tls.test\$" "$TS_TMP/far2.log" ||
    ts_fail "the slow queries never reached their upstream"
kill -TERM "$TS_CLIENT_PID"
wait "$TS_CLIENT_PID"
rc=$?
[ "$rc" = 0 ] || ts_fail "the client stopped with a query in flight: exit $rc: $(tail -n 5 "$TS_TMP/client.log")"
wait "$tcpdig" 2>/dev/null
ts_log "the client stopped cleanly with a query in flight"

ts_pass "dns over tcp, tls and https through the chosen outbound, reuse, SERVFAIL on failure"
