#!/bin/bash
# Remakes fuzz_status's seeds (tests/fuzz/corpus/status/seed_*): real
# snapshots, as a client's workers send them to worker 0.  A developer
# script (root, gdb, a built tree), not part of make check:
#
#   TUNSPLIT=build/tunsplit TS_SRCDIR=. tests/fuzz/status_seeds.sh
#
# It runs a client with three workers, rules, outbounds (a group among
# them), a DNS upstream and a warm pool in lib.sh's namespaces, starts
# slow downloads so that flows are live, attaches gdb to worker 0 and
# writes the buffer of each status_unpack call while `tunsplit status`
# asks without, then with, the flow list.  The bytes are host order and
# carry sizeof(struct status): remake the seeds when that struct changes
# (test_status_pack's seed check says so).
. "$(dirname "$0")/../netns/lib.sh"
ts_init status_seeds
command -v gdb >/dev/null 2>&1 || ts_skip "missing tool: gdb"
out=$TS_SRCDIR/tests/fuzz/corpus/status
MARK=0x7353

ts_topology_up
ts_make_pki
ts_write_configs
{
	ts_client_outbounds 10s "      pool: 2"
	cat <<EOF
    - name: ads
      protocol: block
    - name: both
      type: failover
      members: [tunnel]
  workers: 3
  rules:
    - dst: $TS_S_ADDR4/32
      outbound: home
    - domain_suffix: ads.test
      outbound: ads
    - port: 9
      outbound: both
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
ts_start_target
ts_start_server
ts_start_client

# Live flows: slow downloads, spread over the workers by their ports.
for i in 1 2 3 4 5 6; do
	ts_bg "$NS_C" "app$i" timeout 30 "$TS_PY" -u "$TS_TOOLS" recv \
	    --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --seed "$i" \
	    --bytes 1m --rate 64k
done
sleep 2

mkdir -p "$TS_TMP/seeds"
cat >"$TS_TMP/gdb.cmd" <<EOF
set pagination off
set \$n = 0
break status_unpack
commands
silent
eval "dump binary memory $TS_TMP/seeds/%d \$rdi \$rdi+\$rsi", \$n
set \$n = \$n + 1
continue
end
continue
EOF
gdb -q -batch -p "$TS_CLIENT_PID" -x "$TS_TMP/gdb.cmd" \
    >"$TS_TMP/gdb.log" 2>&1 &
gpid=$!
sleep 3		# attached, the breakpoint set
ip netns exec "$NS_C" "$TUNSPLIT" status -s "$TS_TMP/client.sock" \
    >"$TS_TMP/st.txt" || ts_fail "status"
ip netns exec "$NS_C" "$TUNSPLIT" status -s "$TS_TMP/client.sock" \
    --flows --json >"$TS_TMP/st.json" || ts_fail "status --flows"
# Failures too: targets that refuse, then no server at all.
for i in 1 2 3 4; do
	ip netns exec "$NS_C" timeout 10 "$TS_PY" -u "$TS_TOOLS" refused \
	    --host "$TS_T_ADDR4" --port "$i" >/dev/null 2>&1
done
kill -KILL "$TS_SERVER_PID"
for i in 1 2 3 4; do
	ip netns exec "$NS_C" timeout 10 "$TS_PY" -u "$TS_TOOLS" refused \
	    --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" >/dev/null 2>&1
done
ip netns exec "$NS_C" "$TUNSPLIT" status -s "$TS_TMP/client.sock" \
    --flows >"$TS_TMP/st2.txt" || ts_fail "status --flows, no server"
kill -INT "$gpid" 2>/dev/null
wait "$gpid"
n=$(find "$TS_TMP/seeds" -type f | wc -l)
[ "$n" -ge 6 ] || ts_fail "gdb caught $n snapshots: $(tail "$TS_TMP/gdb.log")"
# fuzz_status's input: a settings byte (the flow list cap), then
# [u32 length, host order][snapshot] records (see fuzz_status.c).  One
# seed per snapshot; all of them together in the order caught and
# backwards (the last ones have flows and failures to merge into),
# uncapped and with room for one more flow.
mkdir -p "$out"
"$TS_PY" - "$out" $(ls -v "$TS_TMP"/seeds/*) <<'EOF' ||
import hashlib, os, struct, sys
out, snaps = sys.argv[1], [open(f, "rb").read() for f in sys.argv[2:]]
def seed(cap, recs):
    b = bytes([cap]) + b"".join(struct.pack("=I", len(r)) + r for r in recs)
    name = "seed_" + hashlib.sha256(b).hexdigest()[:16]
    open(os.path.join(out, name), "wb").write(b)
for s in snaps:
    seed(0, [s])
seed(0, snaps)
seed(0, snaps[::-1])
seed(4, snaps[::-1])
EOF
    ts_fail "writing the seeds"
ts_pass "status seeds: $n snapshots into $out"
