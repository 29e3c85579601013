#!/bin/bash
# Leak-proof by test (issue 16): rules, fake-IP DNS and route: auto, with
# a capture of everything the client sends on its physical interfaces.
#
#  tsh$$ (home)                 tsc$$ (client)        tss$$ (server)   tst$$ (target)
#  eth0 192.168.99.53 ----- lan0 192.168.99.1
#  dnsmasq: home.test,           resolv.conf: 192.168.99.53 (the home router's)
#    www.example (a local        route: auto, fake-IP DNS
#    answer: 192.168.99.66)      default via 10.77.1.2
#  tools.py serve :9000          eth0 10.77.1.1 ----- 10.77.1.2 tunsplit run
#                                                     (no forwarding)  tools.py :9000
#                                                      10.77.2.1 ----- 10.77.2.2
#
#  outbounds: tunnel (the server), home (direct), block (block)
#    rule 0  domain_suffix example     -> tunnel
#    rule 1  domain home.test          -> home
#    rule 2  dst 192.168.99.0/24       -> home
#    rule 3  domain ads.test           -> block
#    final tunnel
#
# leaksniff.py logs every packet tsc sends on eth0 and lan0.  The only
# packets allowed on eth0 are the outer connections to 10.77.1.2:8443
# (and IPv6 neighbour discovery); on lan0 only packets to the home
# network, and its DNS only for home.test; nothing ever to the target
# network.  Checked after each phase:
#  0. before the client: a query for www.example and a SYN to the target
#     do show up (the capture sees leaks, and they are real paths);
#  1. at start: www.example and api.example (by name: fake-IP, the server
#     resolves them), the target's real address (final) and unknown.net
#     (final) through the tunnel, SHA-256 checked, the target sees the
#     server's address; home.test direct (its query and its flow on
#     lan0, the home server sees the client's own address); ads.test
#     refused at once; queries of other types (TXT, HTTPS), and queries
#     over TCP, for tunnelled names never go to the home resolver (a
#     direct name's do);
#  2. during SIGHUP reloads: the same flows at once, four reloads among
#     them;
#  3. with the server killed: tunnelled flows are refused, never sent
#     direct; www.example still gets its fake address from the client,
#     and its other queries (UDP, TCP) stay off the LAN; home.test still
#     works direct.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_leak_rules

for t in dig dnsmasq; do
	command -v $t >/dev/null 2>&1 || [ -x /usr/sbin/$t ] ||
	    ts_skip "missing tool: $t (apt-get install dnsmasq-base dnsutils)"
done
DNSMASQ=$(command -v dnsmasq || echo /usr/sbin/dnsmasq)
export PATH="$TS_SRCDIR/src/route:$PATH"
command -v tunsplit-route >/dev/null || ts_fail "tunsplit-route not found"

NS_H=tsh$$
H_ADDR=192.168.99.53 C_LAN=192.168.99.1 HOME_NET=192.168.99.0/24
TS_TUN=tsk$$			# route: auto keeps its state by this name
STATE=/run/tunsplit/$TS_TUN.state
ETC_S=/etc/netns/$NS_S ETC_C=/etc/netns/$NS_C
trap 'rc=$?; rm -rf "$ETC_S" "$ETC_C" "$STATE"; (exit $rc); ts_cleanup' EXIT
MARK=0x7353
N=$((1 << 20))
TS_APP_TIMEOUT=30
CAP=$TS_TMP/capture.txt

# ---- topology: lib.sh's, a home network, and a default route ----------------
ts_topology_up
ts_ns_add "$NS_H"
ip -n "$NS_H" link add eth0 type veth peer name lan0 netns "$NS_C" ||
    ts_fail "veth home-client"
ip -n "$NS_H" addr add "$H_ADDR/24" dev eth0
ip -n "$NS_C" addr add "$C_LAN/24" dev lan0
ip -n "$NS_H" link set eth0 up
ip -n "$NS_C" link set lan0 up
ts_make_pki
ts_write_configs
ts_start_target
# The uplink: what leaks would take (tss drops it, the capture sees it).
ip -n "$NS_C" route add default via "$TS_S_ADDR4" || ts_fail "default route"
ip -n "$NS_C" -6 route add default via "$TS_S_ADDR6" || ts_fail "default route6"

# The server resolves the tunnelled names from its own files.
mkdir -p "$ETC_S" "$ETC_C" || ts_fail "mkdir /etc/netns"
printf '127.0.0.1\tlocalhost\n%s\twww.example api.example unknown.net\n' \
    "$TS_T_ADDR4" >"$ETC_S/hosts"
printf 'hosts: files\n' >"$ETC_S/nsswitch.conf"
# The client's apps ask the home router's resolver, as DHCP would say.
printf 'nameserver %s\noptions timeout:2 attempts:2\n' "$H_ADDR" >"$ETC_C/resolv.conf"
printf 'hosts: dns\n' >"$ETC_C/nsswitch.conf"

ts_bg "$NS_H" dnsmasq "$DNSMASQ" -k --conf-file=/dev/null --no-resolv \
    --no-hosts --bind-interfaces --listen-address="$H_ADDR" --port=53 \
    --user=root --pid-file= --log-queries --log-facility=- \
    --host-record=home.test,"$H_ADDR" --host-record=www.example,192.168.99.66 \
    --txt-record=www.example,home-txt --txt-record=home.test,home-txt
ts_bg "$NS_H" home "$TS_PY" -u "$TS_TOOLS" serve --bind "$H_ADDR" --port 9000
ts_wait_port "$NS_H" 9000 10 "$TS_LAST_PID" || ts_fail "home server did not listen"
for i in $(seq 50); do
	ip netns exec "$NS_H" ss -Hlun 'sport = :53' | grep -q . && break
	sleep 0.1
done

ts_bg "$NS_C" sniff "$TS_PY" -u "$(dirname "$0")/leaksniff.py" --out "$CAP" \
    --iface eth0 --iface lan0 --seconds 120
ts_wait_log "$TS_TMP/sniff.log" ready || ts_fail "leaksniff did not start"

app() {
	ts_app "$@" >>"$TS_TMP/apps.log" 2>&1 ||
	    ts_fail "$*: $(tail -n 1 "$TS_TMP/apps.log")"
}
dig_c() { ip netns exec "$NS_C" timeout 10 dig +time=1 +tries=1 "@$H_ADDR" "$@" 2>&1; }
mark() { sleep 0.3; wc -l <"$CAP"; }	# the capture's length now

# leaks FROM: the captured lines after line FROM that are not allowed.
leaks() {
	sleep 0.3
	tail -n +$(($1 + 1)) "$CAP" | awk -v srv="$TS_S_ADDR4" \
	    -v port="$TS_SERVER_PORT" -v home="${HOME_NET%.0/24}." '
	$4 ~ /^10\.77\.2\./ || $4 ~ /^fd77:2:/ { print "target:", $0; next }
	$7 == "dns" && $8 != "home.test" { print "dns:", $0; next }
	$1 == "eth0" && $2 == "tcp" && $4 == srv && $6 == port { next }
	$2 == "icmp6" && $6 >= 133 && $6 <= 143 { next }
	$1 == "lan0" && index($4, home) == 1 { next }
	{ print "other:", $0 }'
}
no_leaks() {	# no_leaks FROM WHAT
	local l
	l=$(leaks "$1")
	[ -z "$l" ] || ts_fail "$2: leaked on the physical interfaces: $(head -n 8 <<<"$l")"
}

# fetch HOST PORT SEED: download stream SEED (tools.py checks it byte for
# byte); its SHA-256 into got_sha.
fetch() {
	local out
	out=$(ts_app recv --host "$1" --port "$2" --bytes "$N" --seed "$3" 2>&1) ||
	    ts_fail "recv $1:$2 (seed $3): $out"
	got_sha=$(sed -n 's/.*byte for byte, sha256 \([0-9a-f]*\),.*/\1/p' <<<"$out")
	[ -n "$got_sha" ] || ts_fail "recv $1:$2: $out"
}
# via_tunnel HOST SEED [FROM]: a download from HOST:9000 that the target
# served to the tunnel server (its address FROM, IPv4 unless given).
via_tunnel() {
	fetch "$1" "$TS_TARGET_PORT" "$2"
	grep -q "\[${3:-$TS_S2_ADDR4}\]:[0-9]* SEND $N bytes sha256 $got_sha" \
	    "$TS_TMP/target.log" ||
	    ts_fail "$1 (seed $2): the target did not serve the tunnel server"
}
via_home() {	# via_home SEED: home.test, from the client's own address
	fetch home.test 9000 "$1"
	grep -q "\[$C_LAN\]:[0-9]* SEND $N bytes sha256 $got_sha" "$TS_TMP/home.log" ||
	    ts_fail "home.test (seed $1): the home server did not serve $C_LAN"
}

# ---- 0. the capture sees leaks ------------------------------------------------
got=$(dig_c +short www.example A)
[ "$got" = 192.168.99.66 ] || ts_fail "without the client, the home resolver: '$got'"
# Also lib.sh's ts_prove_no_forward: the uplink's gateway (the server
# namespace) does not forward, so the tunnel is the only way.
ts_app probe --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --timeout 1 \
    >>"$TS_TMP/apps.log" 2>&1 && ts_fail "the target is reachable without the tunnel"
l=$(leaks 0)
grep -q "^dns: lan0 udp $C_LAN $H_ADDR [0-9]* 53 dns www.example 1$" <<<"$l" &&
    grep -q "^target: eth0 tcp 10.77.1.1 $TS_T_ADDR4 [0-9]* $TS_TARGET_PORT" <<<"$l" ||
    ts_fail "the capture did not see the query and SYN sent without the client: $l"
ts_log "without the client: the query and the SYN are captured as leaks ($(wc -l <<<"$l") lines)"

# ---- the client ---------------------------------------------------------------
umask 077
{
	ts_client_outbounds 5s
	cat <<EOF
    - {name: block, protocol: block}
  route: auto
  dns: {mode: fake-ip, fake_ip_file: ""}
  rules:
    - {domain_suffix: example, outbound: tunnel}
    - {domain: home.test, outbound: home}
    - {dst: $HOME_NET, outbound: home}
    - {domain: ads.test, outbound: block}
  final: tunnel
EOF
} >"$TS_TMP/client.yaml"
umask 022
"$TUNSPLIT" check -c "$TS_TMP/client.yaml" >"$TS_TMP/check.log" 2>&1 ||
    ts_fail "tunsplit check: $(cat "$TS_TMP/check.log")"
# The start, before the client is up, is part of what is checked.
from=$(mark)
ts_start_server
ts_start_client_routed

# phase WHAT: the flows every phase makes with the tunnel up.
phase() {
	local s=$1
	via_tunnel www.example $((s + 1))
	via_tunnel api.example $((s + 2))
	via_tunnel "$TS_T_ADDR4" $((s + 3))
	via_tunnel unknown.net $((s + 4))
	via_home $((s + 5))
	app refused --host ads.test --port 9000 --within 3
}

# ---- 1. at start ----------------------------------------------------------------
phase 100
l=$(tail -n +$((from + 1)) "$CAP")
grep -q "^lan0 udp $C_LAN $H_ADDR [0-9]* 53 dns home.test 1$" <<<"$l" &&
    grep -q "^lan0 tcp $C_LAN $H_ADDR [0-9]* 9000$" <<<"$l" ||
    ts_fail "home.test's query and flow are not on lan0: $(grep lan0 <<<"$l" | head -n 5)"
grep -q "^eth0 tcp 10.77.1.1 $TS_S_ADDR4 [0-9]* $TS_SERVER_PORT$" <<<"$l" ||
    ts_fail "no outer connection to the server captured"
via_tunnel "$TS_T_ADDR6" 106 "$TS_S2_ADDR6"
no_leaks "$from" "at start"
# Queries the client does not answer itself go to where they were sent,
# but a name of the tunnel's never to the home resolver: through the
# tunnel (whose server does not reach it: no answer), a blocked name's
# refused at once, a direct name's answered by the home resolver.
for q in "www.example TXT" "www.example TYPE65" "unknown.net TXT" \
    "+tcp www.example A" "+tcp unknown.net TXT"; do
	# shellcheck disable=SC2086 # name and type
	dig_c $q >>"$TS_TMP/dig.log"
done
no_leaks "$from" "queries of other types, and over TCP"
got=$(dig_c +tcp +short home.test A)
[ "$got" = "$H_ADDR" ] || ts_fail "home.test A over TCP: '$got', want the home resolver's"
grep -q "^lan0 tcp $C_LAN $H_ADDR [0-9]* 53 dns home.test 1$" "$CAP" ||
    ts_fail "home.test's query over TCP is not on lan0"
got=$(dig_c ads.test TXT)
grep -q "host unreachable" <<<"$got" || ts_fail "ads.test TXT not refused: $got"
got=$(dig_c +short home.test TXT)
[ "$got" = '"home-txt"' ] || ts_fail "home.test TXT: '$got', want the home resolver's"
no_leaks "$from" "queries of other types"
ts_log "at start: tunnelled by name, address and final; home.test direct; ads.test refused; no leak ($(wc -l <<<"$l") packets)"

# ---- 2. during reloads --------------------------------------------------------------
from=$(mark)
(phase 200; via_tunnel www.example 211; via_home 212) &
flows=$!
for i in 1 2 3 4; do
	sleep 0.2
	ts_reload "$TS_CLIENT_PID" "$TS_TMP/client.log" "reload $i"
done
wait "$flows" || ts_fail "the flows during the reloads failed"
dig_c www.example TXT >>"$TS_TMP/dig.log"
no_leaks "$from" "during reloads"
ts_log "four reloads among seven flows: all intact, no leak"

# ---- 3. the server down ------------------------------------------------------------------
ts_stop_server KILL
from=$(mark)
for h in www.example "$TS_T_ADDR4" unknown.net; do
	app refused --host "$h" --port "$TS_TARGET_PORT" --within 5
done
ts_udptool "$TS_TMP/udp.log" send --to "$TS_T_ADDR4:7" || true
# Names still resolve (the client answers), and nothing asks the LAN.
got=$(dig_c +short www.example A)
case $got in 198.19.*) ;; *) ts_fail "www.example A with the server down: '$got'" ;; esac
dig_c www.example TXT >>"$TS_TMP/dig.log"
dig_c +tcp www.example A >>"$TS_TMP/dig.log"
via_home 305
no_leaks "$from" "with the server down"
ts_log "server down: tunnelled flows refused, home.test direct; no leak"

ts_alive "$TS_CLIENT_PID" || ts_fail "the client died"
ts_pass "no DNS query or packet for a tunnelled name or address on the physical interfaces: at start, during reloads, with the server down; direct goes direct, ads.test refused"
