#!/bin/bash
# Young flows under loss: whole transfers timed from connect to last byte.
#
# usage: TUNSPLIT=build/tunsplit bench/young.sh [SEEDS]
#
# One download and one upload of YOUNG_SIZE bytes (default 64 MiB) at once,
# each on its own new connection, over linkem at 100 Mbit/s, RTT 100 ms,
# +-5 ms jitter, 2 % loss each way (issue 18, item 4); for every seed
# (default "1 2 3 4 5") the direct path and tunsplit run one after the
# other (alternating which goes first), so load on a shared machine falls
# on both.  Prints one line per run and the medians, and the ratio
# tunsplit/direct of the medians; the JSON lines go to
# bench/results/<UTC time>-young.json.
#
# Environment: TUNSPLIT (binary), YOUNG_SIZE, YOUNG_CC (the namespaces'
# congestion control, i.e. the direct path's and the target's; bbr),
# YOUNG_SERVER (extra lines for the server: section, indented two spaces,
# e.g. "  congestion: cubic"), YOUNG_CLIENT (the same for client:),
# YOUNG_LINK (linkem options, default below), YOUNG_MTU (the TUN MTU,
# 9000 as in a default configuration), YOUNG_PATHS ("direct tunsplit"),
# YOUNG_SYSCTL (sysctl settings for every namespace, e.g.
# "net.ipv4.tcp_slow_start_after_idle=0"; a comma in a value stands for a
# space: "net.ipv4.tcp_rmem=4096,131072,6291456"), YOUNG_NSTAT (nstat
# counter names, printed per namespace after each run), YOUNG_OUT (the
# results file).  Holds /run/tsb.lock like run.sh; leaves the testbed
# down.

set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TESTBED=$HERE/testbed.sh
export TSB_RUN=${TSB_RUN:-/run/tsb}
NS_C=tsb-client
NS_S=tsb-server
NS_T=tsb-target
TARGET=10.201.2.2
SERVER=10.201.1.2
PORT=9100
SEEDS=${1:-1 2 3 4 5}
SIZE=${YOUNG_SIZE:-67108864}
CC=${YOUNG_CC:-bbr}
LINK=${YOUNG_LINK:---rate 100 --delay 50 --jitter 5 --queue 100 --loss 2}
PATHS=${YOUNG_PATHS:-direct tunsplit}
STAMP=$(date -u +%Y%m%d-%H%M%S)
OUT=${YOUNG_OUT:-$HERE/results/$STAMP-young.json}
WORK=$(mktemp -d /tmp/tsb-young.XXXXXX)
TS_DIR=$WORK/ts
PKI=$WORK/pki

die() { echo "young.sh: $*" >&2; exit 1; }
say() { echo "$*" >&2; }
nsx() { local ns=$1; shift; ip netns exec "$ns" "$@"; }

[ "$(id -u)" = 0 ] || die "must run as root"
[ -x "${TUNSPLIT:-}" ] || die "set TUNSPLIT to the tunsplit binary"

exec 9>>/run/tsb.lock || die "cannot open /run/tsb.lock"
flock -w "${TSB_LOCK_WAIT:-0}" 9 ||
    die "another bench run holds the lock ($(cat /run/tsb.lock))"
echo "young.sh pid $$" >/run/tsb.lock
export TSB_LOCK_HELD=1

CC_SAVED=$(sysctl -n net.ipv4.tcp_allowed_congestion_control)
cleanup() {
	[ -f "$TS_DIR/client.pid" ] && kill "$(cat "$TS_DIR/client.pid")" 2>/dev/null
	[ -f "$TS_DIR/server.pid" ] && kill "$(cat "$TS_DIR/server.pid")" 2>/dev/null
	[ -f "$WORK/serve.pid" ] && kill "$(cat "$WORK/serve.pid")" 2>/dev/null
	sleep 0.3
	"$TESTBED" down >/dev/null 2>&1
	sysctl -qw net.ipv4.tcp_allowed_congestion_control="$CC_SAVED"
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

sysctl -qw net.ipv4.tcp_allowed_congestion_control="$CC_SAVED cubic reno bbr" ||
    die "cannot allow cubic"
# shellcheck disable=SC2086
"$TESTBED" up -- $LINK --rtprio 10 --seed 1 || die "testbed up failed"
for ns in $NS_C $NS_S $NS_T; do
	nsx $ns sysctl -qw net.ipv4.tcp_congestion_control="$CC" ||
	    die "cannot select $CC"
	for kv in ${YOUNG_SYSCTL:-}; do
		kv=$(echo "$kv" | tr , " ")
		nsx $ns sysctl -qw "$kv" || die "cannot set $kv"
	done
done
ip netns exec $NS_T python3 "$HERE/young.py" serve $TARGET $PORT \
    </dev/null >"$WORK/serve.log" 2>&1 9>&- &
echo $! >"$WORK/serve.pid"
sleep 0.5

mkdir -p "$PKI" "$TS_DIR"
(cd "$PKI" &&
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout ca.key -out ca.pem -days 2 -subj /CN=tsb-ca &&
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout server.key -out server.csr -subj /CN=tunsplit.bench &&
printf 'subjectAltName=DNS:tunsplit.bench\n' >ext &&
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key \
    -CAcreateserial -days 2 -extfile ext -out server.pem) \
    >"$PKI/pki.log" 2>&1 || die "certificates failed"
KEY=$("$TUNSPLIT" genkey) || die "genkey"
cat >"$TS_DIR/server.yaml" <<EOT
log: {level: warn}
control: $TS_DIR/server.sock
server:
  listen: ["$SERVER:8443"]
  cert: $PKI/server.pem
  cert_key: $PKI/server.key
  users: [{name: bench, key: "$KEY"}]
  egress: {allow: [10.201.2.0/24]}
${YOUNG_SERVER:-}
EOT
cat >"$TS_DIR/client.yaml" <<EOT
log: {level: warn}
control: $TS_DIR/client.sock
tun: {name: tsb-ts, mtu: ${YOUNG_MTU:-9000}, address: [198.18.0.1/15]}
client:
  server: "$SERVER:8443"
  sni: tunsplit.bench
  ca: $PKI/ca.pem
  key: "$KEY"
${YOUNG_CLIENT:-}
EOT
chmod 600 "$TS_DIR"/*.yaml
ip netns exec $NS_S "$TUNSPLIT" run -c "$TS_DIR/server.yaml" \
    >>"$TS_DIR/server.log" 2>&1 </dev/null 9>&- &
echo $! >"$TS_DIR/server.pid"
sleep 0.3
ip netns exec $NS_C "$TUNSPLIT" run -c "$TS_DIR/client.yaml" \
    >>"$TS_DIR/client.log" 2>&1 </dev/null 9>&- &
echo $! >"$TS_DIR/client.pid"
i=0
until nsx $NS_C ip link show tsb-ts 2>/dev/null | grep -q UP; do
	[ $i -lt 50 ] || { cat "$TS_DIR"/*.log >&2; die "tunsplit did not start"; }
	sleep 0.1; i=$((i + 1))
done
sleep 2	# the client's pool fills

# The direct path is the link's routing; tunsplit's is a route through its
# TUN for the target only (a /32, so the direct path stays as it was).
route_path() {
	if [ "$1" = tunsplit ]; then
		nsx $NS_C ip route replace $TARGET/32 dev tsb-ts
	else
		nsx $NS_C ip route del $TARGET/32 2>/dev/null
	fi
	nsx $NS_C ip route get $TARGET | grep -q "dev $([ "$1" = tunsplit ] &&
	    echo tsb-ts || echo lkc)" || die "route for $1 is wrong"
}

say "young: $LINK, $SIZE bytes up + down at once, cc $CC, seeds $SEEDS," \
    "${YOUNG_SERVER:+server: $YOUNG_SERVER, }${YOUNG_SYSCTL:+$YOUNG_SYSCTL, }" \
    "load $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$WORK/res.jsonl"
k=0
for seed in $SEEDS; do
	"$TESTBED" reload -- --seed "$seed" >/dev/null 2>&1 ||
	    die "reload failed"
	order=$PATHS
	[ $((k % 2)) = 1 ] && order=$(echo $PATHS |
	    awk '{for (i = NF; i; i--) printf "%s ", $i}')
	k=$((k + 1))
	for path in $order; do
		route_path "$path"
		sleep 1
		[ -n "${YOUNG_NSTAT:-}" ] && for ns in $NS_C $NS_S $NS_T; do
			nsx $ns env NSTAT_HISTORY=$WORK/nstat.$ns nstat -n; done
		r=$(timeout 300 ip netns exec $NS_C python3 "$HERE/young.py" \
		    run $TARGET $PORT "$SIZE") || say "run failed: $r"
		load=$(cut -d' ' -f1 /proc/loadavg)
		line="{\"path\": \"$path\", \"seed\": $seed, \"load1\": $load, ${r#\{}"
		echo "$line" >>"$WORK/res.jsonl"
		say "$line"
		[ -n "${YOUNG_NSTAT:-}" ] && for ns in $NS_C $NS_S $NS_T; do
			say "  $ns: $(nsx $ns env NSTAT_HISTORY=$WORK/nstat.$ns \
			    nstat -z $YOUNG_NSTAT |
			    awk '$2 > 0 {printf "%s=%s ", $1, $2}')"
		done
	done
done
route_path direct
cp "$WORK/res.jsonl" "$OUT"
python3 - "$WORK/res.jsonl" <<'EOP'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
med = {}
for p in sorted({r["path"] for r in rows}):
    for d in ("down", "up"):
        v = [r[d + "_mbit"] for r in rows if r["path"] == p]
        med[p, d] = statistics.median(v)
        print(f"{p:9} {d:4} median {med[p, d]:6.1f} Mbit/s  "
              f"({', '.join(f'{x:.1f}' for x in v)})")
for d in ("down", "up"):
    if ("direct", d) in med and ("tunsplit", d) in med:
        print(f"ratio {d}: {med['tunsplit', d] / med['direct', d]:.2f}")
EOP
say "results: $OUT, load $(cut -d' ' -f1-3 /proc/loadavg)"
