#!/bin/bash
# README command 1: on a fresh Debian 12, as root, build tunsplit and watch a
# web page and a 100 MiB file travel
#
#   curl -> kernel -> ts0 (TUN) -> lwIP in the tunsplit client -> TLS 1.3
#   -> tunsplit server -> fresh TCP -> nginx
#
# across three network namespaces (client, server, target) that this script
# creates and removes again.  The topology is drawn in tests/netns/lib.sh.
#
# The TUN's MTU is 1500 unless DEMO_MTU says otherwise: curl then
# announces an MSS of 1460, like every host on an Ethernet LAN behind a
# router running tunsplit.
#
# usage: sudo scripts/demo.sh
# env:   BUILD_DIR (default: build in the source tree), TS_NO_APT=1,
#        DEMO_MIB (file size, default 100), DEMO_MTU (TUN MTU, default
#        1500), TUNSPLIT=path (use that binary, build nothing; how
#        tests/netns/e2e_demo.sh runs it), TS_KEEP=1 keeps the temp dir
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$top/build}
case $build in /*) ;; *) build=$PWD/$build ;; esac
mib=${DEMO_MIB:-100}
mtu=${DEMO_MTU:-1500}

[ "$(id -u)" -eq 0 ] || { echo "demo.sh: run as root (sudo scripts/demo.sh)" >&2; exit 1; }

if [ -t 1 ]; then
	step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
else
	step() { printf '\n==> %s\n' "$*"; }
fi

if [ -n "${TUNSPLIT:-}" ]; then
	step "using $TUNSPLIT (TUNSPLIT set: no build)"
else
	step "build (dependencies, lwIP, configure, make)"
	"$top/scripts/build.sh" "$build" ||
	    { echo "demo.sh: build failed" >&2; exit 1; }
	TUNSPLIT=$build/tunsplit
fi

export TUNSPLIT TS_SRCDIR=$top TS_MTU=$mtu
# shellcheck source=tests/netns/lib.sh
. "$top/tests/netns/lib.sh"
ts_init demo

step "network namespaces: client $NS_C, server $NS_S, target $NS_T"
ts_topology_up

step "throwaway CA, server certificate, shared key, configs (TUN MTU $mtu)"
ts_make_pki
ts_write_configs
sed 's/\(key: \).*/\1<redacted>/' "$TS_TMP/client.yaml"

step "target web server (nginx) with a page and a $mib MiB file"
www=$TS_TMP/www
mkdir -p "$www"
printf '<!doctype html>\n<title>tunsplit demo</title>\n<p>Hello from %s, served to you through tunsplit.</p>\n' \
    "$TS_T_ADDR4" >"$www/index.html"
head -c $((mib << 20)) /dev/urandom >"$www/big.bin"
chmod 644 "$www"/*
want=$(sha256sum <"$www/big.bin" | cut -d' ' -f1)
ts_start_http "$www" 80
ts_prove_no_forward 80

step "tunsplit server and client"
ts_start_server
ts_start_client
for ns in "$NS_C" "$NS_S" "$NS_T"; do
	printf '%s:\n' "$ns"
	ip -n "$ns" -br addr show | grep -v '^lo ' | sed 's/^/  /'
done
printf 'routes via %s in %s:\n' "$TS_TUN" "$NS_C"
ip -n "$NS_C" route show dev "$TS_TUN" | sed 's/^/  /'
ip -n "$NS_C" -6 route show dev "$TS_TUN" | grep -v '^fe80' | sed 's/^/  /'

curl_ns() {
	ip netns exec "$NS_C" timeout 300 curl --noproxy '*' -sS --max-time 280 "$@"
}

step "GET http://$TS_T_ADDR4/ through the tunnel"
curl_ns "http://$TS_T_ADDR4/" || ts_fail "page fetch failed"

step "GET http://$TS_T_ADDR4/big.bin ($mib MiB) through the tunnel"
out=$TS_TMP/big.out
stats=$(curl_ns -o "$out" -w '%{http_code} %{size_download} %{time_total}' \
    "http://$TS_T_ADDR4/big.bin") || ts_fail "file fetch failed"
read -r code bytes secs <<<"$stats"
got=$(sha256sum <"$out" | cut -d' ' -f1)
mbit=$(awk -v b="$bytes" -v s="$secs" 'BEGIN { printf "%.1f", (s > 0 ? b * 8 / s / 1e6 : 0) }')
printf '  HTTP status : %s\n' "$code"
printf '  bytes       : %s\n' "$bytes"
printf '  time        : %s s\n' "$secs"
printf '  throughput  : %s Mbit/s\n' "$mbit"
printf '  sha256 sent : %s\n' "$want"
printf '  sha256 got  : %s\n' "$got"
[ "$code" = 200 ] || ts_fail "HTTP status $code"
[ "$got" = "$want" ] || ts_fail "checksum MISMATCH"
printf '  checksum    : match\n'

step "what the daemons logged"
printf -- '--- server ---\n'; tail -n 8 "$TS_TMP/server.log"
printf -- '--- client ---\n'; tail -n 8 "$TS_TMP/client.log"
printf -- '--- nginx saw these peers (the tunsplit server, not the client) ---\n'
tail -n 2 "$TS_TMP/nginx-access.log"

ts_check_alive
step "tearing down"
ts_pass "a page and $mib MiB went app -> TUN (MTU $mtu) -> lwIP -> TLS -> server -> nginx intact ($mbit Mbit/s)"
