#!/bin/bash
# Issue 14's transfer matrix through the SOCKS5 outbound (protocol: socks5,
# to dante-server; no tunsplit server anywhere).  TUN MTU 1500 and 9000 x
# app MSS 536 / 1220 / 1460 (TCP_MAXSEG; at 9000 also the route's 8960 and
# `advmss 1460` on the route) x IPv4 and IPv6 x download and upload,
# 64 MiB each, SHA-256 checked, no reset (tests/netns/msslib.sh).
#
#   tsc$$: app (TCP_MAXSEG) -> ts0 (MTU 1500 | 9000) -> tunsplit client
#       --SOCKS5--> tss$$: danted :1080 -> tst$$: target
#
# tss does not forward, so the only way to the target is through danted.
. "$(dirname "$0")/../lib.sh"
. "$TS_LIB_DIR/msslib.sh"
ts_init e2e_mss_socks5

DANTE_PORT=1080
ts_topology_up
ts_start_target
ts_prove_no_forward "$TS_TARGET_PORT"
ts_start_danted "$DANTE_PORT"
cat >"$TS_TMP/client.yaml" <<EOF
log: {level: ${TS_LOG_LEVEL:-info}, flows: true}
control: $TS_TMP/client.sock
tun: {name: $TS_TUN, mtu: 1500, address: [198.18.0.1/15, "fdfe:dcba:9876::1/64"]}
client:
  protocol: socks5
  server: "$TS_S_ADDR4:$DANTE_PORT"
  connect_timeout: 10s
EOF
"$TUNSPLIT" check -c "$TS_TMP/client.yaml" >"$TS_TMP/check.log" 2>&1 ||
    ts_fail "tunsplit check: $(cat "$TS_TMP/check.log")"
ts_start_client
mss_matrix socks5
# Every flow went through danted.
n=$(grep -c "$TS_T_ADDR4\|$TS_T_ADDR6" "$TS_TMP/danted.log")
[ "$n" -ge "$MSS_CASES" ] ||
    ts_fail "danted logged $n lines naming the target for $MSS_CASES flows"
ts_alive "$TS_CLIENT_PID" || ts_fail "the client died"
ts_alive "$DANTE_PID" || ts_fail "danted died"
ts_pass "$MSS_CASES cases of $MSS_BYTES, all sha256 match"
