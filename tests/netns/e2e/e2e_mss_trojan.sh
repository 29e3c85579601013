#!/bin/bash
# Issue 14's transfer matrix through the trojan outbound: the tunsplit
# client speaks trojan (protocol: trojan) to the tunsplit server, which
# accepts it (server.trojan_passwords).  TUN MTU 1500 and 9000 x app MSS
# 536 / 1220 / 1460 (TCP_MAXSEG; at 9000 also the route's 8960 and
# `advmss 1460` on the route) x IPv4 and IPv6 x download and upload,
# 64 MiB each, SHA-256 checked, no reset (tests/netns/msslib.sh).
#
#   tsc$$: app (TCP_MAXSEG) -> ts0 (MTU 1500 | 9000) -> tunsplit client
#       ==TLS, trojan==> tss$$: tunsplit server -> tst$$: target
. "$(dirname "$0")/../lib.sh"
. "$TS_LIB_DIR/msslib.sh"
ts_init e2e_mss_trojan

PW=mss-$$-secret
TS_MTU=1500 ts_standard_setup "  protocol: trojan
  password: \"$PW\"" "  trojan_passwords: [\"$PW\"]"
mss_matrix trojan
# Every flow was a trojan session on the server, not the native protocol.
n=$(grep -c "user trojan#" "$TS_TMP/server.log")
[ "$n" -ge "$MSS_CASES" ] ||
    ts_fail "the server logged $n trojan sessions for $MSS_CASES flows"
ts_check_alive
ts_pass "$MSS_CASES cases of $MSS_BYTES, all sha256 match"
