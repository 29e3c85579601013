#!/bin/bash
# Real DNS with per-domain upstreams (client.dns.upstreams, issue 16 item
# 5) and the answer cache, end to end (topology in lib.sh):
#
#   tsc: dig @198.18.0.53 ──► ts0 ──► client
#     names under corp.test: upstream "corp" 10.77.1.2:53, which a rule
#       sends out the direct outbound "home" (dnsmasq in tss, the home
#       network, sees the query from the client's own 10.77.1.1)
#     any other name: dns.server 10.77.2.2:53 through the tunnel (dnsmasq
#       in tst sees it from the server's egress 10.77.2.1)
#
#  1. each resolver answers its own names (distinct addresses), and its
#     log shows the query from where that outbound leaves;
#  2. a name under corp.test never reaches the tunnel's resolver, and no
#     other name reaches the home one;
#  3. the same query again is answered by the client's cache: the
#     resolver logs it once, and status counts the hits, misses and the
#     queries per upstream; a name that does not exist (NXDOMAIN) is
#     cached too (negative); over TCP, each name from its resolver too;
#  4. tunsplit check prints the upstreams back in a form that loads;
#  5. answers feed the domain rules: the target's address, first reached
#     through the tunnel (final), goes direct (rule domain_suffix
#     corp.test -> home) once the home resolver has answered
#     app.corp.test with it -- the target sees the client's own address;
#  6. a reload that gives the home upstream other.test instead applies at
#     once and empties the cache: www.other.test, cached before, is now
#     asked of the home resolver and gets its answer.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_dns_upstreams

for t in dig dnsmasq; do
	command -v $t >/dev/null 2>&1 || [ -x /usr/sbin/$t ] ||
	    ts_skip "missing tool: $t (apt-get install dnsmasq-base dnsutils)"
done
DNSMASQ=$(command -v dnsmasq || echo /usr/sbin/dnsmasq)
RESOLVER=198.18.0.53		# inside the TUN's 198.18.0.1/15
MARK=0x7353

ts_topology_up
ts_make_pki
ts_write_configs
# The list form of the client: two outbounds, a rule for the home
# resolver, the DNS section with one upstream.
{
	ts_client_outbounds 10s
	cat <<EOF
  rules:
    - dst: $TS_S_ADDR4/32
      outbound: home
    - domain_suffix: corp.test
      outbound: home
  final: tunnel
  dns:
    mode: redirect
    server: $TS_T_ADDR4
    cache_size: 64
    upstreams:
      - name: corp
        address: $TS_S_ADDR4:53
        protocol: udp
        domains: [corp.test]
EOF
} >"$TS_TMP/client.yaml"
chmod 600 "$TS_TMP/client.yaml"
"$TUNSPLIT" check -c "$TS_TMP/client.yaml" >"$TS_TMP/check.log" 2>&1 ||
    ts_fail "tunsplit check: $(cat "$TS_TMP/check.log")"

# 4. The dump names the upstream and loads back.
"$TUNSPLIT" check --secrets -c "$TS_TMP/client.yaml" >"$TS_TMP/dump.yaml" \
    2>"$TS_TMP/dump.log" || ts_fail "check --secrets: $(cat "$TS_TMP/dump.log")"
grep -q '^      - name: "corp"$' "$TS_TMP/dump.yaml" &&
    grep -q '^          - "corp.test"$' "$TS_TMP/dump.yaml" &&
    grep -q "^    cache_size: 64$" "$TS_TMP/dump.yaml" ||
    ts_fail "the dump lacks the upstream: $(sed -n '/dns:/,$p' "$TS_TMP/dump.yaml")"
chmod 600 "$TS_TMP/dump.yaml"
"$TUNSPLIT" check -c "$TS_TMP/dump.yaml" >"$TS_TMP/dump2.log" 2>&1 ||
    ts_fail "the dump does not load: $(cat "$TS_TMP/dump2.log")"

# The resolvers: each knows its own answers, and logs every query.
dnsmasq_at() {	# NS LOG ADDR RECORDS...
	local ns=$1 log=$2 addr=$3
	shift 3
	ts_bg "$ns" "$log" "$DNSMASQ" -k --conf-file=/dev/null --no-resolv \
	    --no-hosts --bind-interfaces --listen-address="$addr" --port=53 \
	    --user=root --pid-file= --log-queries --log-facility=- \
	    --local-ttl=300 "$@"
	for i in $(seq 50); do
		ip netns exec "$ns" ss -Hlun "sport = :53" | grep -q "$addr" &&
		    return 0
		sleep 0.1
	done
	ts_fail "dnsmasq on $addr did not start: $(cat "$TS_TMP/$log.log")"
}
dnsmasq_at "$NS_S" home "$TS_S_ADDR4" \
    --host-record=www.corp.test,10.66.0.1 --host-record=www.other.test,10.66.0.9 \
    --address=/nx.corp.test/ --host-record=app.corp.test,$TS_T_ADDR4 \
    --host-record=tcp.corp.test,10.66.0.3
dnsmasq_at "$NS_T" far "$TS_T_ADDR4" \
    --host-record=www.other.test,10.55.0.1 --host-record=www.corp.test,10.55.0.9 \
    --host-record=tcp.other.test,10.55.0.3

ts_start_target
# The direct way to the target: tss forwards, only marked sockets use it.
ts_sysctl "$NS_S" net/ipv4/ip_forward 1
ts_sysctl "$NS_C" net/ipv4/conf/all/rp_filter 0
ts_sysctl "$NS_C" net/ipv4/conf/default/rp_filter 0
ip -n "$NS_C" rule add fwmark "$MARK" lookup 7353 pref 100 || ts_fail "ip rule"
ip -n "$NS_C" route add "$TS_T_NET4" via "$TS_S_ADDR4" table 7353 ||
    ts_fail "route table 7353"
ts_start_server
ts_start_client

dig_c() { ip netns exec "$NS_C" timeout 20 dig +time=2 +tries=2 "@$RESOLVER" "$@"; }
seen() { grep -c "query\[A\] $1 from $2" "$TS_TMP/$3.log"; }

# 1. Each name from its resolver, each resolver reached its own way.
a=$(dig_c +short www.corp.test A)
[ "$a" = 10.66.0.1 ] || ts_fail "www.corp.test: '$a', want the home resolver's 10.66.0.1"
a=$(dig_c +short www.other.test A)
[ "$a" = 10.55.0.1 ] || ts_fail "www.other.test: '$a', want the tunnel resolver's 10.55.0.1"
[ "$(seen www.corp.test "$TS_C_ADDR4" home)" = 1 ] ||
    ts_fail "home resolver: no query for www.corp.test from $TS_C_ADDR4 (direct): $(grep query "$TS_TMP/home.log")"
[ "$(seen www.other.test "$TS_S2_ADDR4" far)" = 1 ] ||
    ts_fail "tunnel resolver: no query for www.other.test from $TS_S2_ADDR4 (the server): $(grep query "$TS_TMP/far.log")"
ts_log "www.corp.test from the home resolver (direct, from $TS_C_ADDR4); www.other.test through the tunnel (from $TS_S2_ADDR4)"

# 2. Neither resolver saw the other's names.
grep -q "query\[.*\] www.corp.test" "$TS_TMP/far.log" &&
    ts_fail "a corp.test query reached the tunnel's resolver: $(grep query "$TS_TMP/far.log")"
grep -q "query\[.*\] www.other.test" "$TS_TMP/home.log" &&
    ts_fail "another name reached the home resolver: $(grep query "$TS_TMP/home.log")"

# 3. Again: from the cache, the resolvers see nothing new.  And NXDOMAIN.
for i in 1 2 3; do
	a=$(dig_c +short www.corp.test A)
	[ "$a" = 10.66.0.1 ] || ts_fail "www.corp.test again ($i): '$a'"
	a=$(dig_c +short WWW.Other.Test A)
	[ "$a" = 10.55.0.1 ] || ts_fail "WWW.Other.Test ($i): '$a'"
	r=$(dig_c nx.corp.test A | grep -o 'status: [A-Z]*')
	[ "$r" = "status: NXDOMAIN" ] || ts_fail "nx.corp.test ($i): '$r'"
done
[ "$(seen www.corp.test "$TS_C_ADDR4" home)" = 1 ] ||
    ts_fail "the home resolver saw www.corp.test $(seen www.corp.test "$TS_C_ADDR4" home) times, want 1 (the cache)"
[ "$(grep -ci "query\[A\] www.other.test" "$TS_TMP/far.log")" = 1 ] ||
    ts_fail "the tunnel resolver saw www.other.test more than once: $(grep query "$TS_TMP/far.log")"
[ "$(seen nx.corp.test "$TS_C_ADDR4" home)" = 1 ] ||
    ts_fail "the home resolver saw nx.corp.test $(seen nx.corp.test "$TS_C_ADDR4" home) times, want 1 (negative cache)"
# The answer from the cache has the question as asked.
q=$(dig_c +noall +question +answer WWW.Other.Test A)
grep -q "^;WWW.Other.Test.*IN.*A" <<<"$q" || ts_fail "the cached answer's question: $q"
st=$(ip netns exec "$NS_C" "$TUNSPLIT" status --json -s "$TS_TMP/client.sock") ||
    ts_fail "status"
grep -q '"dns_cache":{"hits":[1-9]' <<<"$st" ||
    ts_fail "status has no cache hits: $st"
grep -q '"dns_upstreams":\[{"name":"corp","address":"10.77.1.2:53","queries":2,"protocol":"udp","failed":0}' <<<"$st" ||
    ts_fail "status: corp's queries: $(grep -o '"dns_upstreams":[^]]*' <<<"$st")"
ts_log "repeated queries (and NXDOMAIN) answered by the cache; $(grep -o '"dns_cache":{[^}]*}' <<<"$st")"

# Over TCP the client answers too: the udp upstream and dns.server are
# each asked over TCP, each its own way (direct; through the tunnel).
a=$(dig_c +tcp +short tcp.corp.test A)
[ "$a" = 10.66.0.3 ] || ts_fail "tcp.corp.test over TCP: '$a', want the home resolver's 10.66.0.3"
a=$(dig_c +tcp +short tcp.other.test A)
[ "$a" = 10.55.0.3 ] || ts_fail "tcp.other.test over TCP: '$a', want the tunnel resolver's 10.55.0.3"
[ "$(seen tcp.corp.test "$TS_C_ADDR4" home)" = 1 ] &&
    [ "$(seen tcp.other.test "$TS_S2_ADDR4" far)" = 1 ] &&
    ! grep -q "tcp.corp.test" "$TS_TMP/far.log" &&
    ! grep -q "tcp.other.test" "$TS_TMP/home.log" ||
    ts_fail "queries over TCP: home: $(grep 'tcp[.]' "$TS_TMP/home.log"); far: $(grep 'tcp[.]' "$TS_TMP/far.log")"
ts_log "over TCP: tcp.corp.test from the home resolver, tcp.other.test through the tunnel"

# 5. The address before and after its name is learnt.
fetch() {	# SEED: download 64 KiB, hash-checked; which address served it
	ts_app recv --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --bytes 65536 \
	    --seed "$1" >>"$TS_TMP/apps.log" 2>&1 ||
	    ts_fail "recv seed $1: $(tail -n 2 "$TS_TMP/apps.log")"
	grep "SEND 65536 bytes sha256 $(ts_app hash --seed "$1" --bytes 65536)" \
	    "$TS_TMP/target.log" | grep -o '\[[0-9.]*\]' | tail -n 1
}
from=$(fetch 31)
[ "$from" = "[$TS_S2_ADDR4]" ] ||
    ts_fail "before app.corp.test was resolved: served to $from, want the tunnel's [$TS_S2_ADDR4]"
a=$(dig_c +short app.corp.test A)
[ "$a" = "$TS_T_ADDR4" ] || ts_fail "app.corp.test: '$a'"
from=$(fetch 32)
[ "$from" = "[$TS_C_ADDR4]" ] ||
    ts_fail "after app.corp.test was resolved: served to $from, want direct [$TS_C_ADDR4]"
ts_log "$TS_T_ADDR4 went through the tunnel, then direct once real DNS named it app.corp.test"

# 6. Reload: other.test to the home resolver.
sed -i 's/domains: \[corp.test\]/domains: [other.test]/' "$TS_TMP/client.yaml"
ts_reload "$TS_CLIENT_PID" "$TS_TMP/client.log" "client SIGHUP: other.test to home"
a=$(dig_c +short www.other.test A)
[ "$a" = 10.66.0.9 ] || ts_fail "after the reload www.other.test: '$a', want the home resolver's 10.66.0.9"
[ "$(seen www.other.test "$TS_C_ADDR4" home)" = 1 ] ||
    ts_fail "after the reload the home resolver did not see www.other.test: $(grep query "$TS_TMP/home.log")"
ts_log "reload: www.other.test now from the home resolver, the cache emptied"

ts_pass "dns upstreams: per-domain resolver through its outbound, cache, learnt names, reload"
