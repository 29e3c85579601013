#!/bin/bash
# Rules (issue 16): each new flow takes the outbound of the first rule
# that matches, else final.
#
#   tsc$$ (client)             tss$$ (server)                  tst$$ (target)
#   app -> ts0 -> tunsplit =TLS=> tunsplit server ----------->  tools.py serve :9000
#                  |             (10.77.2.1, fd77:2::1)         10.77.2.2, fd77:2::2
#                  +- home: direct, marked 0x7353, forwarded by tss (this test)
#
#   tsc routing: 10.77.2.0/24, fd77:2::/64 dev ts0 (the apps);
#                fwmark 0x7353 -> table 7353: the same nets via tss
#
# outbounds: tunnel (the server), home (direct), deny (block); final: deny
#   rule 0  port 9999                            -> deny
#   rule 1  rule_set homenets (file: fd77:2::/64) -> home
#   rule 2  dst 10.77.2.2/32, port 9000, network tcp -> tunnel
#
#  1. IPv4 to :9000 takes rule 2, the tunnel: 4 MiB each way, SHA-256
#     checked, and the target sees the server's address (10.77.2.1).
#  2. IPv6 to :9000 takes rule 1 (the rule-set file), home: the same
#     transfers, and the target sees the client's own address.
#  3. Port 9999 takes rule 0 and :8000 takes final: both refused at once,
#     and the server never sees either; UDP takes final too, and the app
#     gets EHOSTUNREACH at once.
#  4. status --flows names the rule of a live flow; status --json counts
#     each rule's hits (once per flow: a SYN's own look-up is not
#     counted again); route-test, over the control socket and with -c,
#     names the outbound and the rule, and says a name is not an address.
#  5. SIGHUP with a broken line in the rule-set file: the reload is
#     refused, the old rules keep serving (IPv6 still home, route-test
#     unchanged).  Fixed, with 10.77.2.0/24 added: IPv4 goes home too.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_rules

MARK=0x7353
N=$((4 << 20))
TS_APP_TIMEOUT=120
CSOCK=$TS_TMP/client.sock

app() {
	ts_app "$@" >>"$TS_TMP/apps.log" 2>&1 ||
	    ts_fail "$*: $(tail -n 1 "$TS_TMP/apps.log")"
	ts_log "  $(tail -n 1 "$TS_TMP/apps.log")"
}

rt() {	# rt ARGS...: route-test asked of the running client
	ip netns exec "$NS_C" "$TUNSPLIT" route-test -s "$CSOCK" "$@" 2>&1
}

expect_rt() {	# expect_rt OUTBOUND RULE ARGS...
	local want_ob=$1 want_rule=$2 out
	shift 2
	out=$(rt "$@") || ts_fail "route-test $*: $out"
	grep -q "^outbound: $want_ob (" <<<"$out" ||
	    ts_fail "route-test $*: want outbound $want_ob: $out"
	grep -q "^rule: $want_rule" <<<"$out" ||
	    ts_fail "route-test $*: want rule $want_rule: $out"
}

# seen_from ADDR SEED: the target logged a SEND of stream SEED to ADDR.
seen_from() {
	grep -q "\[$1\]:[0-9]* SEND $N bytes sha256 $(ts_app hash --seed "$2" --bytes "$N")" \
	    "$TS_TMP/target.log"
}

ts_topology_up
ts_make_pki
ts_write_configs
ts_start_target
ts_prove_no_forward "$TS_TARGET_PORT"
ts_start_server
# The direct way exists only for marked sockets: tss forwards (from here
# on), and tsc routes the target's nets via tss in a table only marked
# traffic looks up.
ts_sysctl "$NS_S" net/ipv4/ip_forward 1
ts_sysctl "$NS_S" net/ipv6/conf/all/forwarding 1
ts_sysctl "$NS_C" net/ipv4/conf/all/rp_filter 0
ts_sysctl "$NS_C" net/ipv4/conf/default/rp_filter 0
ip -n "$NS_C" rule add fwmark "$MARK" lookup 7353 pref 100 || ts_fail "ip rule"
ip -n "$NS_C" -6 rule add fwmark "$MARK" lookup 7353 pref 100 || ts_fail "ip -6 rule"
ip -n "$NS_C" route add "$TS_T_NET4" via "$TS_S_ADDR4" table 7353
ip -n "$NS_C" -6 route add "$TS_T_NET6" via "$TS_S_ADDR6" table 7353

printf '# the home networks\n%s\n' "$TS_T_NET6" >"$TS_TMP/homenets.txt"
umask 077
cat >"$TS_TMP/client.yaml" <<EOF
log: {level: info, flows: true}
control: $CSOCK
tun: {name: $TS_TUN, mtu: 9000, address: [198.18.0.1/15, "fdfe:dcba:9876::1/64"]}
client:
  mark: $MARK
  connect_timeout: 10s
  outbounds:
    - name: tunnel
      protocol: tunsplit
      server: "$TS_S_ADDR4:$TS_SERVER_PORT"
      sni: $TS_SNI
      ca: $TS_TMP/ca.pem
      key: "$TS_KEY"
    - {name: home, protocol: direct}
    - {name: deny, protocol: block}
  final: deny
  rule_sets:
    - {name: homenets, path: homenets.txt, type: cidr}
  rules:
    - port: 9999
      outbound: deny
    - rule_set: homenets
      outbound: home
    - dst: $TS_T_ADDR4/32
      port: $TS_TARGET_PORT
      network: tcp
      outbound: tunnel
EOF
umask 022
"$TUNSPLIT" check -c "$TS_TMP/client.yaml" >"$TS_TMP/check.log" 2>&1 ||
    ts_fail "tunsplit check: $(cat "$TS_TMP/check.log")"
grep -q "path: \"$TS_TMP/homenets.txt\"" "$TS_TMP/check.log" ||
    ts_fail "check does not print the rule set's absolute path"

# Offline, before the daemon: route-test -c decides the same way.
out=$("$TUNSPLIT" route-test -c "$TS_TMP/client.yaml" -p "$TS_TARGET_PORT" "$TS_T_ADDR6" 2>&1) ||
    ts_fail "route-test -c: $out"
grep -qx "outbound: home (direct)" <<<"$out" &&
    grep -qx "rule: 1 (rule_set homenets)" <<<"$out" ||
    ts_fail "route-test -c, IPv6: $out"

ts_start_client

# ---- 1, 2: two outbounds, by address and by rule-set file ------------------------
app recv --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --bytes "$N" --seed 11
app send --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --bytes "$N" --seed 12
ts_expect_sink 12 "$N" "IPv4 upload"
seen_from "$TS_S2_ADDR4" 11 ||
    ts_fail "IPv4 (rule 2, tunnel): the target did not send to the server's address"
app recv --host "$TS_T_ADDR6" --port "$TS_TARGET_PORT" --bytes "$N" --seed 21
app send --host "$TS_T_ADDR6" --port "$TS_TARGET_PORT" --bytes "$N" --seed 22
ts_expect_sink 22 "$N" "IPv6 upload"
seen_from "$TS_C_ADDR6" 21 ||
    ts_fail "IPv6 (rule 1, home): the target did not send to the client's own address"
grep -q -- "-> \[$TS_T_ADDR6\]" "$TS_TMP/server.log" &&
    ts_fail "the server saw a flow that should have gone home"
grep -q -- "-> $TS_T_ADDR4:$TS_TARGET_PORT " "$TS_TMP/server.log" ||
    ts_fail "the server did not log the tunnelled flows"
grep -q "rule 2 (dst $TS_T_ADDR4/32, port $TS_TARGET_PORT, network tcp)" "$TS_TMP/client.log" ||
    ts_fail "no flow log line names rule 2"
grep -q "rule 1 (rule_set homenets)" "$TS_TMP/client.log" ||
    ts_fail "no flow log line names rule 1"
ts_log "rule 2 took IPv4 through the tunnel, rule 1 IPv6 home; data intact"

# ---- 3: block by port, and final ---------------------------------------------------
app refused --host "$TS_T_ADDR4" --port 9999 --within 2
app refused --host "$TS_T_ADDR4" --port 8000 --within 2
# UDP takes no rule here (rule 2 is tcp only): final, deny -- the app
# is told at once by an ICMP "administratively prohibited".
ts_udptool "$TS_TMP/udp.log" refused --to "$TS_T_ADDR4:$TS_TARGET_PORT" \
    --errno EHOSTUNREACH || ts_fail "UDP to final (deny): $(tail -n 1 "$TS_TMP/udp.log")"
ts_log "  $(tail -n 1 "$TS_TMP/udp.log")"
sleep 0.5
grep -qE -- "-> $TS_T_ADDR4:(9999|8000) " "$TS_TMP/server.log" &&
    ts_fail "the server saw flows that rule 0 and final refused"
ts_log "rule 0 (port 9999) and final (deny) refused at once, TCP and UDP"

# ---- 4: status, route-test ---------------------------------------------------------------
app recv --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --bytes 1m --seed 31 --rate 256k &
slow=$!
for i in $(seq 50); do
	st=$(ip netns exec "$NS_C" "$TUNSPLIT" status --flows -s "$CSOCK" 2>&1)
	grep -q "relay.*rule 2 (dst" <<<"$st" && break
	sleep 0.1
done
grep -q "rule 2 (dst $TS_T_ADDR4/32" <<<"$st" ||
    ts_fail "status --flows does not name rule 2 on the live flow: $st"
wait "$slow" || ts_fail "the slow download failed"
js=$(ip netns exec "$NS_C" "$TUNSPLIT" status --json -s "$CSOCK") ||
    ts_fail "status --json"
for want in '{"rule":0,"outbound":"deny","hits":1,' \
    '{"rule":1,"outbound":"home","hits":2,' \
    '{"rule":2,"outbound":"tunnel","hits":3,' '{"rule":-1,"outbound":"deny","hits":2}'; do
	grep -qF "$want" <<<"$js" || ts_fail "status --json lacks $want: $js"
done
expect_rt tunnel "2 (dst $TS_T_ADDR4/32" -p "$TS_TARGET_PORT" "$TS_T_ADDR4"
expect_rt home "1 (rule_set homenets)" -p "$TS_TARGET_PORT" "$TS_T_ADDR6"
expect_rt deny "0 (port 9999)" -p 9999 "$TS_T_ADDR6"
expect_rt deny final --udp -p "$TS_TARGET_PORT" "$TS_T_ADDR4"
out=$(rt www.example.test) || ts_fail "route-test by name: $out"
grep -q "^note: no rule matches domain names" <<<"$out" ||
    ts_fail "route-test by name: no note that the rules are by address: $out"
# route-test did not count.
js2=$(ip netns exec "$NS_C" "$TUNSPLIT" status --json -s "$CSOCK")
grep -qF '{"rule":-1,"outbound":"deny","hits":2}' <<<"$js2" ||
    ts_fail "route-test counted a hit: $js2"
ts_log "status --flows, status --json and route-test show the decisions"

# ---- 5: reload with a broken rule set, then a good one -------------------------------------
printf '%s\n10.77.2.0/24 oops\n' "$TS_T_NET6" >"$TS_TMP/homenets.txt"
ts_hup "$TS_CLIENT_PID" "$TS_TMP/client.log" "keeping the running configuration" \
    "broken rule set"
grep -q "reload: $TS_TMP/homenets.txt:2:13: one entry per line (rule set homenets, .*client.yaml:" \
    "$TS_TMP/client.log" || ts_fail "the reload error does not name the set's line and column: $(grep 'reload:' "$TS_TMP/client.log" | tail -n 1)"
app recv --host "$TS_T_ADDR6" --port "$TS_TARGET_PORT" --bytes "$N" --seed 41
seen_from "$TS_C_ADDR6" 41 || ts_fail "after the broken reload, IPv6 no longer goes home"
expect_rt home "1 (rule_set homenets)" -p "$TS_TARGET_PORT" "$TS_T_ADDR6"
printf '%s\n%s\n' "$TS_T_NET6" "$TS_T_NET4" >"$TS_TMP/homenets.txt"
ts_reload "$TS_CLIENT_PID" "$TS_TMP/client.log" "fixed rule set"
app recv --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --bytes "$N" --seed 51
seen_from "$TS_C_ADDR4" 51 || ts_fail "after the reload, IPv4 did not go home"
expect_rt home "1 (rule_set homenets)" -p "$TS_TARGET_PORT" "$TS_T_ADDR4"
ts_log "a broken rule set kept the old rules; the fixed one took"

ts_check_alive
ts_pass "rules: tunnel and home by address and rule-set file, deny by port and final; status, route-test; reload"
