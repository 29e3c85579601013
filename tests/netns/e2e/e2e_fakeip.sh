#!/bin/bash
# Fake-IP DNS (client.dns mode: fake-ip) end to end (topology in lib.sh):
#
#   tsc: app ── resolv.conf: 198.18.0.53 ──► ts0 ── client answers A/AAAA
#        itself (198.19.x.y, fdfe:dcba:9876:1::x, TTL 1)
#   tsc: app ── connect 198.19.x.y ──► client ══ TLS, request names
#        "app.test" ══► tss: server resolves it from its own
#        /etc/hosts (/etc/netns/tss$$/hosts) ──► tst: target
#
#  1. getent (the system resolver, through a resolv.conf of the test's own
#     namespace) and dig get fake addresses, A and AAAA, TTL 1; an
#     excluded name and a TXT query are forwarded to the pinned resolver
#     (dnsmasq on the target) and get its real answers; over TCP too;
#  2. TCP to the fake IPv4 and IPv6 addresses: 4 MiB each way, SHA-256
#     checked; the server's log names app.test, not the fake address;
#  3. UDP echo and ping to the fake address: the replies come back from
#     it;
#  4. a fake address that was never issued is refused at once (RST, ICMP)
#     and counted; status shows the table's counters;
#  5. after a client restart the names keep their fake addresses (the
#     table's file) and a flow to one issued before the restart works;
#  6. with route: auto and no dns.server, a query to an address on a
#     connected network (the server's 10.77.1.2) is still answered by the
#     client, and the fake addresses are still reached through the TUN.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_fakeip

for t in dig dnsmasq getent; do
	command -v $t >/dev/null 2>&1 || [ -x /usr/sbin/$t ] ||
	    ts_skip "missing tool: $t (apt-get install dnsmasq-base dnsutils)"
done
DNSMASQ=$(command -v dnsmasq || echo /usr/sbin/dnsmasq)
export PATH="$TS_SRCDIR/src/route:$PATH"
command -v tunsplit-route >/dev/null || ts_fail "tunsplit-route not found"
ETC_S=/etc/netns/$NS_S
ETC_C=/etc/netns/$NS_C
TS_TUN=tsf$$			# route: auto keeps its state by this name
STATE=/run/tunsplit/$TS_TUN.state
trap 'rc=$?; rm -rf "$ETC_S" "$ETC_C" "$STATE"; (exit $rc); ts_cleanup' EXIT

RESOLVER=198.18.0.53		# any address routed into the TUN
FAKE6_NET=fdfe:dcba:9876:1::/64
TABLE=$TS_TMP/fakeip.table

ts_topology_up
ts_make_pki
ts_write_configs "  dns:
    mode: fake-ip
    server: $TS_T_ADDR4
    fake_ip_file: $TABLE
    fake_ip_exclude: [real.test]"

# The server resolves the app's names from files only: no DNS query.
mkdir -p "$ETC_S" "$ETC_C" || ts_fail "mkdir /etc/netns"
printf '127.0.0.1\tlocalhost\n%s\tapp.test other.test\n%s\tapp.test other.test\n' \
    "$TS_T_ADDR4" "$TS_T_ADDR6" >"$ETC_S/hosts"
printf 'hosts: files\n' >"$ETC_S/nsswitch.conf"
# The client's apps ask DNS only, at an address inside the TUN.
printf 'nameserver %s\noptions timeout:2 attempts:2\n' "$RESOLVER" \
    >"$ETC_C/resolv.conf"
printf 'hosts: dns\n' >"$ETC_C/nsswitch.conf"

ts_start_target
ts_start_udpecho 7
ts_bg "$NS_T" dnsmasq "$DNSMASQ" -k --conf-file=/dev/null --no-resolv \
    --no-hosts --bind-interfaces --listen-address="$TS_T_ADDR4" --port=53 \
    --user=root --pid-file= --log-queries --log-facility=- \
    --host-record=real.test,10.77.2.77 --txt-record=app.test,"real-txt"
for i in $(seq 50); do
	ip netns exec "$NS_T" ss -Hlun 'sport = :53' | grep -q . && break
	sleep 0.1
done
ts_start_server
ts_start_client
# The client routes the IPv6 range itself (the IPv4 one is inside the
# TUN's own 198.18.0.1/15).
ip -n "$NS_C" -6 route show "$FAKE6_NET" | grep -q "dev $TS_TUN" ||
    ts_fail "no route $FAKE6_NET dev $TS_TUN: $(ip -n "$NS_C" -6 route)"

dig_c() { ip netns exec "$NS_C" timeout 20 dig +time=2 +tries=2 "@$RESOLVER" "$@"; }
# answer NAME TYPE: "TTL ADDRESS" of the first answer record
answer() { dig_c +noall +answer "$1" "$2" | awk '$4 == "'"$2"'" { print $2, $5; exit }'; }

# 1. Answers.
a4=$(answer app.test A)
case $a4 in "1 198.19."*) ;; *) ts_fail "app.test A: '$a4', want a 198.19.0.0/16 address with TTL 1" ;; esac
a4=${a4#1 }
a6=$(answer app.test AAAA)
case $a6 in "1 fdfe:dcba:9876:1::"*) ;; *) ts_fail "app.test AAAA: '$a6'" ;; esac
a6=${a6#1 }
[ "$(answer APP.Test A)" = "1 $a4" ] || ts_fail "APP.Test: not the same address as app.test"
o4=$(answer other.test A)
o4=${o4#1 }
[ -n "$o4" ] && [ "$o4" != "$a4" ] || ts_fail "other.test A: '$o4' (app.test: $a4)"
g=$(ip netns exec "$NS_C" timeout 20 getent ahostsv4 app.test | awk 'NR == 1 { print $1 }')
[ "$g" = "$a4" ] || ts_fail "getent ahostsv4 app.test: '$g', want $a4"
[ "$(answer real.test A)" = "0 10.77.2.77" ] ||
    ts_fail "real.test (excluded) A: '$(answer real.test A)', want dnsmasq's 10.77.2.77"
txt=$(dig_c +short app.test TXT)
[ "$txt" = '"real-txt"' ] || ts_fail "app.test TXT: '$txt', want dnsmasq's"
# Over TCP the client answers too, query by query: the same fake
# address; an excluded name from dns.server (asked over TCP).
r=$(dig_c +tcp +short app.test A)
[ "$r" = "$a4" ] || ts_fail "app.test A over TCP: '$r', want $a4"
r=$(dig_c +tcp +short real.test A)
[ "$r" = 10.77.2.77 ] || ts_fail "real.test A over TCP: '$r', want dnsmasq's"
ts_log "app.test -> $a4, $a6 (TTL 1); other.test -> $o4; real.test and TXT forwarded"

# 2. TCP by fake address, both families; the server gets the name.
out=$TS_TMP/apps.log
for dst in "$a4" "$a6"; do
	ts_app send --host "$dst" --port 9000 --bytes 4m --seed 3 >>"$out" 2>&1 ||
	    ts_fail "send to $dst: $(tail -n 3 "$out")"
	ts_app recv --host "$dst" --port 9000 --bytes 4m --seed 4 >>"$out" 2>&1 ||
	    ts_fail "recv from $dst: $(tail -n 3 "$out")"
done
grep -q 'app\.test' "$TS_TMP/server.log" ||
    ts_fail "the server's log never names app.test: $(grep -i flow "$TS_TMP/server.log" | tail -n 3)"
grep -q "198\.19\.\|fdfe:dcba:9876:1:" "$TS_TMP/server.log" &&
    ts_fail "a fake address reached the server: $(grep '198\.19\.\|fdfe:dcba:9876:1:' "$TS_TMP/server.log" | head -n 2)"
ts_log "TCP over $a4 and $a6: 4 MiB each way intact, the server dialled app.test"

# 3. UDP echo to the fake address: replies from it.
udp=$TS_TMP/udp.log
ts_udptool "$udp" echo --host "$a4" --sizes 1,1400,8000 ||
    ts_fail "UDP echo via $a4: $(tail -n 3 "$udp")"
ts_log "UDP echo via $a4: replies from the fake address, intact"
# ping: the server pings the name; the replies come from the fake address.
if command -v ping >/dev/null 2>&1; then
	p=$(ip netns exec "$NS_C" timeout 20 ping -n -c 3 -i 0.2 -W 3 "$a4" 2>&1)
	printf '%s\n' "$p" | grep -q "^64 bytes from $a4: icmp_seq=" ||
	    ts_fail "ping $a4: $p"
	printf '%s\n' "$p" | grep -q ' 0% packet loss' || ts_fail "ping $a4: $p"
	ts_log "ping $a4: 3 replies from the fake address"
fi

# 4. Never issued: refused at once, counted.
# TCP: an RST, so connect() fails with ECONNREFUSED (or ECONNRESET: lwIP
# may finish the handshake before the flow is refused), never a timeout.
terr=$(ip netns exec "$NS_C" timeout 20 "$TS_PY" -c '
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.settimeout(10)
t0 = time.monotonic()
try:
    s.connect(("198.19.250.1", 9000))
    print("connected")
except socket.timeout:
    print("timeout")
except OSError as e:
    print("refused", e.errno, "%d ms" % ((time.monotonic() - t0) * 1000))
' 2>&1)
case $terr in "refused 111 "* | "refused 104 "*) ;;
*) ts_fail "TCP to a never-issued fake address: $terr" ;; esac
ms=${terr#refused * }
# UDP: an ICMP error, which a connected socket reports.
uerr=$(ip netns exec "$NS_C" timeout 10 "$TS_PY" -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.connect(("198.19.250.2", 7))
s.settimeout(3)
s.send(b"x")
try:
    s.recv(16)
    print("answered")
except socket.timeout:
    print("timeout")
except OSError as e:
    print("refused", e.errno)
' 2>&1)
case $uerr in "refused "*) ;; *) ts_fail "UDP to a never-issued fake address: $uerr" ;; esac
st=$("$TUNSPLIT" status -s "$TS_TMP/client.sock" 2>&1) || ts_fail "status: $st"
line=$(printf '%s\n' "$st" | grep '^fake-ip:') || ts_fail "no fake-ip line in status: $st"
printf '%s\n' "$line" | grep -q ' 2 refused (no name)' ||
    ts_fail "the miss was not counted: $line"
"$TUNSPLIT" status -j -s "$TS_TMP/client.sock" 2>/dev/null |
    grep -q '"fakeip":{"names":[0-9]*,"capacity":65534,"answers":[1-9]' ||
    ts_fail "no fake-IP answers in status -j"
ts_log "never-issued 198.19.250.1 reset in $ms, UDP to .2 $uerr; $line"

# 4b. A reload: a new fake_ip_exclude applies at once (other.test is
# forwarded now; dnsmasq does not know it), a new range is kept (said in
# the log), and every issued name keeps its address and its flows.
sed -i 's/fake_ip_exclude: \[real.test\]/fake_ip_exclude: [real.test, other.test]/' \
    "$TS_TMP/client.yaml"
printf '    fake_ip_range: 198.19.128.0/17\n' >"$TS_TMP/range.yaml"
sed -i "/^    fake_ip_file: /r $TS_TMP/range.yaml" "$TS_TMP/client.yaml"
ts_reload "$TS_CLIENT_PID" "$TS_TMP/client.log"
grep -q "keeps.*fake_ip_range\|fake_ip_range.*restart" "$TS_TMP/client.log" ||
    ts_fail "the reload did not say it keeps the fake range: $(grep -i 'reload\|keep' "$TS_TMP/client.log" | tail -n 3)"
st=$(dig_c other.test A | awk '/status:/ { print $6 }')
[ "$st" != "NOERROR," ] && grep -q 'query\[A\] other\.test' "$TS_TMP/dnsmasq.log" ||
    ts_fail "other.test after the reload excluded it: status '$st', not forwarded to dnsmasq"
[ "$(answer app.test A)" = "1 $a4" ] ||
    ts_fail "app.test after a reload: '$(answer app.test A)', was $a4"
ts_app recv --host "$o4" --port 9000 --bytes 64k --seed 8 >>"$out" 2>&1 ||
    ts_fail "recv from other.test's $o4 after the reload: $(tail -n 3 "$out")"
sed -i '/^    fake_ip_range: /d' "$TS_TMP/client.yaml"
ts_log "reload: other.test forwarded now (dnsmasq: $st), the range kept, $a4 still app.test"

# 5. A restart keeps the mapping.
kill -TERM "$TS_CLIENT_PID"
wait "$TS_CLIENT_PID" 2>/dev/null
[ -s "$TABLE" ] || ts_fail "no table file $TABLE after a clean stop"
ts_start_client
ts_app recv --host "$o4" --port 9000 --bytes 1m --seed 5 >>"$out" 2>&1 ||
    ts_fail "recv from other.test's $o4 after the restart: $(tail -n 3 "$out")"
[ "$(answer app.test A)" = "1 $a4" ] ||
    ts_fail "app.test after a restart: '$(answer app.test A)', was $a4"
[ "$(answer app.test AAAA)" = "1 $a6" ] ||
    ts_fail "app.test AAAA after a restart: '$(answer app.test AAAA)', was $a6"
ts_log "after a restart: app.test still $a4 and $a6; other.test's $o4 still works"

# 6. route: auto: port 53 to a connected network's address is captured.
kill -TERM "$TS_CLIENT_PID"
wait "$TS_CLIENT_PID" 2>/dev/null
# No dns.server now: the fake-IP answers alone must capture port 53.
sed -i '/^    server: /d' "$TS_TMP/client.yaml"
printf '  mark: 0x7353\n  route: auto\n' >>"$TS_TMP/client.yaml"
: >"$TS_TMP/client.log"
ts_start_client_routed
got=$(ip netns exec "$NS_C" timeout 20 dig +time=2 +tries=2 +noall +answer \
    "@$TS_S_ADDR4" app.test A | awk '$4 == "A" { print $2, $5; exit }')
[ "$got" = "1 $a4" ] ||
    ts_fail "dig @$TS_S_ADDR4 (a connected network) with route: auto: '$got', want the client's 1 $a4"
ts_app recv --host "$a4" --port 9000 --bytes 1m --seed 6 >>"$out" 2>&1 ||
    ts_fail "recv from $a4 with route: auto: $(tail -n 3 "$out")"
ts_app recv --host "$a6" --port 9000 --bytes 1m --seed 7 >>"$out" 2>&1 ||
    ts_fail "recv from $a6 with route: auto: $(tail -n 3 "$out")"
ts_log "route: auto: dig @$TS_S_ADDR4 answered by the client ($a4); $a4 and $a6 reached"

ts_pass "fake-IP answers, TCP and UDP by name, refusals, kept across a restart"
