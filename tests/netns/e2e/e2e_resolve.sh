#!/bin/bash
# Domain-name targets on the server: the egress policy judges every address
# a name resolves to, per user.  Requests with names come from
# resolvetool.py (native header and trojan, TCP and UDP) straight to the
# server; the tunsplit client, which only forwards addresses, is not used.
#
#   tsc: resolvetool.py ══TLS══ tss: server ──eth1── tst: target
#                               /etc/hosts (bind-mounted by ip netns exec
#                               from /etc/netns/tss$$/hosts): *.test names
#                               └─lo 127.0.0.1:9000 (secret, never reached)
#
# Users: alice (egress_allow: the target's networks), bob (no list of his
# own); trojan passwords "t-allowed" (the same allow list) and "t-plain".
# There is no server-wide allow entry, so the target network (10.77.2.0/24,
# fd77:2::/64: private ranges) is denied by default to everyone else.
#
# Every default-denied range gets a name here.  Denied addresses are
# refused before any connect; none of them is routable from the server
# namespace either, so even a broken policy could send nothing outside the
# namespaces.  nsswitch.conf in the namespace says "hosts: files", so an
# unknown name is "host not found" without any DNS query.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_resolve

RT=$TS_LIB_DIR/resolvetool.py
ETC=/etc/netns/$NS_S
trap 'rc=$?; rm -rf "$ETC"; (exit $rc); ts_cleanup' EXIT

ts_topology_up
ts_make_pki
ts_write_configs		# for the key; server.yaml is written below
KEY_A=$TS_KEY
KEY_B=$("$TUNSPLIT" genkey) || ts_fail "genkey"

mkdir -p "$ETC" || ts_fail "mkdir $ETC"
cat >"$ETC/hosts" <<EOF
127.0.0.1	localhost
$TS_T_ADDR4	target4.test both.test mixed.test
$TS_T_ADDR6	target6.test both.test
127.0.0.1	loop4.test mixed.test
::1		loop6.test
10.77.3.1	private10.test
172.16.0.1	private172.test
192.168.1.1	private192.test
100.64.0.1	cgnat.test
169.254.169.254	metadata.test
0.0.0.1		zero.test
224.0.0.1	mcast4.test
240.0.0.1	reserved4.test
255.255.255.255	bcast4.test
fd99::1		ula6.test
fe80::1		linklocal6.test
ff02::1		mcast6.test
::		unspec6.test
::ffff:127.0.0.1	mapped6.test
EOF
printf 'hosts: files\n' >"$ETC/nsswitch.conf"

umask 077
cat >"$TS_TMP/server.yaml" <<EOF
log: {level: debug, flows: true}
control: $TS_TMP/server.sock
server:
  listen: ["$TS_S_ADDR4:$TS_SERVER_PORT", "[$TS_S_ADDR6]:$TS_SERVER_PORT"]
  cert: $TS_TMP/server.pem
  cert_key: $TS_TMP/server.key
  users:
    - name: alice
      key: "$KEY_A"
      egress_allow: [$TS_T_NET4, "$TS_T_NET6"]
    - name: bob
      key: "$KEY_B"
  trojan_passwords:
    - password: t-allowed
      egress_allow: [$TS_T_NET4, "$TS_T_NET6"]
    - t-plain
  resolver: {workers: 2, queue: 64, timeout: 3s, cache_ttl: 30s, negative_ttl: 5s}
EOF
umask 022
"$TUNSPLIT" check -c "$TS_TMP/server.yaml" >"$TS_TMP/check-server.log" 2>&1 ||
    ts_fail "check rejects server.yaml: $(cat "$TS_TMP/check-server.log")"

ts_start_target
ts_bg "$NS_T" udpecho "$TS_PY" -u "$TS_LIB_DIR/udptool.py" serve \
    --bind "$TS_T_ADDR4" --bind "$TS_T_ADDR6" --port 7
ts_bg "$NS_S" secret "$TS_PY" -u "$TS_TOOLS" serve --bind 127.0.0.1 --port 9000
ts_wait_port "$NS_S" 9000 10 "$TS_LAST_PID" || ts_fail "secret service did not start"
ts_start_server
# The names resolve in the server's namespace as intended.
ip netns exec "$NS_S" getent hosts target6.test | grep -q "$TS_T_ADDR6" ||
    ts_fail "hosts file not seen in $NS_S: $(ip netns exec "$NS_S" getent hosts target6.test)"

out=$TS_TMP/apps.log
rt() {
	ip netns exec "$NS_C" timeout 60 "$TS_PY" -u "$RT" "$1" \
	    --server "$TS_S_ADDR4" --port "$TS_SERVER_PORT" --ca "$TS_TMP/ca.pem" \
	    "${@:2}" >>"$out" 2>&1
}
# expect_tcp KEY NAME STATUS [PORT]
expect_tcp() {
	rt tcp --key "$1" --host "$2" --tport "${4:-9000}" --bytes 262144 \
	    --seed 7 --expect "$3" ||
	    ts_fail "$2: $(grep -E '^(tcp|result|expected)' "$out" | tail -n 3 | tr '\n' ' ')"
	ts_log "$2 -> $3"
}
denials() { grep -c 'egress denied' "$TS_TMP/server.log"; }

# 1. Names of the target, v4 and v6, for alice: data intact.
expect_tcp "$KEY_A" target4.test ok
expect_tcp "$KEY_A" target6.test ok
expect_tcp "$KEY_A" both.test ok
rt tcp --key "$KEY_A" --host TARGET4.Test. --bytes 4194304 --seed 9 \
    --expect ok || ts_fail "TARGET4.Test. (case, trailing dot, 4 MiB): $(tail -n 2 "$out")"
ts_log "TARGET4.Test. -> ok, 4 MiB intact (from the cache)"

# 2. The same names for bob: the private target network is not his.
d0=$(denials)
expect_tcp "$KEY_B" target4.test denied
expect_tcp "$KEY_B" target6.test denied
[ "$(denials)" -ge $((d0 + 2)) ] || ts_fail "bob's denials were not logged"

# 3. A name with a denied and an allowed address: only the allowed one is
#    dialed (the secret service on 127.0.0.1:9000 sees nothing).
expect_tcp "$KEY_A" mixed.test ok

# 4. Every default-denied range, by name, v4 and v6; alice's own allow
#    list does not cover them.
for n in loop4 loop6 private10 private172 private192 cgnat metadata zero \
    mcast4 reserved4 bcast4 ula6 linklocal6 mcast6 unspec6 mapped6; do
	expect_tcp "$KEY_A" "$n.test" denied
done
# The server's own port on loopback, by name: never, allow list or not.
expect_tcp "$KEY_A" loop4.test denied "$TS_SERVER_PORT"

# 5. Names that do not resolve, and ones that cannot be names.
expect_tcp "$KEY_A" nosuchhost.test resolve
expect_tcp "$KEY_A" nosuchhost.test resolve	# negative cache
expect_tcp "$KEY_A" "bad..name.test" resolve
# A name is logged: a line break or escape in one is not passed on.
expect_tcp "$KEY_A" $'forged\nsess 0: FORGED\e[2J.test' resolve
grep -q '^sess 0: FORGED' "$TS_TMP/server.log" &&
    ts_fail "a name's line break reached the server log"
grep -qF 'forged?sess 0: FORGED?[2J.test: bad host name' \
    "$TS_TMP/server.log" || ts_fail "the name with a line break is not logged"
grep -q 'nosuchhost.test: host not found' "$TS_TMP/server.log" ||
    ts_fail "no 'host not found' in the server log"

# 6. trojan: the password with its own allow list reaches the target by
#    name; the plain one is closed (trojan has no status byte).
rt trojan --password t-allowed --host target4.test --bytes 262144 --seed 3 \
    --expect ok || ts_fail "trojan t-allowed target4.test: $(tail -n 2 "$out")"
rt trojan --password t-allowed --host target6.test --bytes 262144 --seed 4 \
    --expect ok || ts_fail "trojan t-allowed target6.test: $(tail -n 2 "$out")"
rt trojan --password t-plain --host target4.test --expect closed ||
    ts_fail "trojan t-plain target4.test: $(tail -n 2 "$out")"
rt trojan --password t-allowed --host loop4.test --expect closed ||
    ts_fail "trojan t-allowed loop4.test: $(tail -n 2 "$out")"
rt trojan --password t-allowed --host nosuchhost.test --expect closed ||
    ts_fail "trojan t-allowed nosuchhost.test: $(tail -n 2 "$out")"
ts_log "trojan: names reached with t-allowed; t-plain, loop4.test, nosuchhost.test closed"

# 7. UDP frames to names (native association): the target's names are
#    echoed for alice; denied and unknown names are dropped.
rt udp --key "$KEY_A" --tport 7 --host target4.test --host target6.test \
    --host loop4.test --host nosuchhost.test --host mixed.test \
    --expect echo,echo,none,none,echo ||
    ts_fail "udp to names (alice): $(grep -E '^(udp|result|expected)' "$out" | tail -n 7 | tr '\n' ' ')"
rt udp --key "$KEY_B" --tport 7 --host target4.test --expect none ||
    ts_fail "udp to names (bob): $(tail -n 2 "$out")"
ts_log "udp: target4/target6/mixed echoed for alice; loop4, nosuchhost dropped; bob denied"
if grep -q 'trojan UDP unsupported' "$TUNSPLIT" 2>/dev/null; then
	ts_log "trojan UDP not in this build: skipped"
else
	rt trojan-udp --password t-allowed --tport 7 --host target4.test \
	    --host loop4.test --expect echo,none ||
	    ts_fail "trojan udp to names: $(tail -n 3 "$out")"
	ts_log "trojan udp: target4.test echoed, loop4.test dropped"
fi

# Nothing reached the secret service; the server counted and survived.
grep -q '^target: \[' "$TS_TMP/secret.log" &&
    ts_fail "the secret service on 127.0.0.1 was reached: $(tail -n 2 "$TS_TMP/secret.log")"
ts_alive "$TS_SERVER_PID" || ts_fail "the server died"
st=$(ip netns exec "$NS_S" "$TUNSPLIT" status -c "$TS_TMP/server.yaml" 2>&1)
printf '%s\n' "$st" >>"$out"
printf '%s\n' "$st" | grep -q 'egress denied' ||
    ts_fail "status shows no egress denials: $st"
printf '%s\n' "$st" | grep -q 'host not found' ||
    ts_fail "status shows no 'host not found': $st"
printf '%s\n' "$st" | grep -Eq '^resolver: [0-9]+ lookups, [1-9][0-9]* from the cache; [1-9][0-9]* ok, [1-9][0-9]* not found, 0 failed, 0 timed out, 0 busy, 2 bad names' ||
    ts_fail "resolver counters: $(printf '%s\n' "$st" | grep resolver)"

# 8. A name service that never answers: a DNS "server" on the server
#    namespace's own loopback that reads every query and drops it.  The
#    resolver's timeout, its queue bound, and a client gone during a lookup
#    (its query cancelled: no callback for a freed session; ASan builds
#    would catch one).  A second server with one worker and a queue of one.
ts_stop_server
printf 'hosts: files dns\n' >"$ETC/nsswitch.conf"
printf 'nameserver 127.0.0.1\noptions timeout:4 attempts:1\n' >"$ETC/resolv.conf"
ts_bg "$NS_S" blackhole "$TS_PY" -u -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 53))
print("blackhole: listening", flush=True)
while True:
    d, a = s.recvfrom(4096)
    print("blackhole: query of %d bytes dropped" % len(d), flush=True)
'
# One server worker too: each worker has its own resolver and queue.
sed -i 's/^  resolver: {.*}$/  resolver: {workers: 1, queue: 1, timeout: 1s, negative_ttl: 0}\n  workers: 1/' \
    "$TS_TMP/server.yaml"
grep -q 'workers: 1, queue: 1' "$TS_TMP/server.yaml" || ts_fail "resolver line not replaced"
ts_start_server
expect_tcp "$KEY_A" target4.test ok	# the hosts file still answers first
t0=$(date +%s%N)
expect_tcp "$KEY_A" slow1.test resolve
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
grep -q 'slow1.test: name resolution timeout' "$TS_TMP/server.log" ||
    ts_fail "no resolver timeout for slow1.test: $(grep slow1 "$TS_TMP/server.log" | tail -n 2)"
grep -q 'blackhole: query' "$TS_TMP/blackhole.log" ||
    ts_fail "the lookup never reached the name service"
# The one worker is still stuck in slow1's lookup: slow2 waits in the
# queue (and times out there), slow3 finds the queue full.
rt tcp --key "$KEY_A" --host slow2.test --expect resolve &
w=$!
sleep 0.3
t1=$(date +%s%N)
rt tcp --key "$KEY_A" --host slow3.test --expect resolve ||
    ts_fail "slow3.test: $(tail -n 2 "$out")"
busy_ms=$(( ($(date +%s%N) - t1) / 1000000 ))
wait "$w" || ts_fail "slow2.test: $(grep slow2 "$out" | tail -n 2)"
grep -q 'slow3.test: resolver busy' "$TS_TMP/server.log" ||
    ts_fail "slow3.test was not refused as busy: $(grep slow3 "$TS_TMP/server.log" | tail -n 2)"
grep -q 'slow2.test: name resolution timeout' "$TS_TMP/server.log" ||
    ts_fail "slow2.test did not time out in the queue"
# Gone during the lookup: the session ends, its query is cancelled.
rt tcp --key "$KEY_A" --host slow4.test --hangup || ts_fail "hangup client"
sleep 1
grep -q 'client gone during resolve' "$TS_TMP/server.log" ||
    ts_fail "no 'client gone during resolve': $(grep 'sess' "$TS_TMP/server.log" | tail -n 3)"
sleep 4	# the stuck lookup finishes; its late answer finds no session
expect_tcp "$KEY_A" target6.test ok
ts_alive "$TS_SERVER_PID" || ts_fail "the server died"
st=$(ip netns exec "$NS_S" "$TUNSPLIT" status -c "$TS_TMP/server.yaml" 2>&1)
printf '%s\n' "$st" >>"$out"
printf '%s\n' "$st" | grep -Eq '^resolver: .* 2 timed out, 1 busy, 0 bad names; 1 cancelled; 0 waiting, [01] running, 1 threads' ||
    ts_fail "resolver counters after the slow lookups: $(printf '%s\n' "$st" | grep resolver)"
ts_log "slow name service: timeout after $ms ms (1 s configured), queue full refused in $busy_ms ms, a client gone during its lookup cancelled it"

ts_pass "names: target v4/v6 intact for alice and t-allowed, denied for bob and t-plain; $(denials) egress denials (every default range, v4 and v6, by name); unknown names: host not found; UDP to names echoed or dropped by the same rules; a silent name service: timeout, queue full, cancellation"
