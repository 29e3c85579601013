#!/bin/bash
# The benchmark: builds the testbed (bench/testbed.sh), runs the scenarios,
# prints tables and writes bench/results/<time>.json (all results) and
# <time>.<scenario>.json (one per scenario).  Root only.
#
# usage: run.sh [--quick | --full] [--scenarios LIST] [--paths LIST]
#               [--loss LIST] [--cc LIST] [--flows LIST] [--time S]
#               [--omit S] [--samples N] [--seed N] [--seeds LIST]
#               [--lfl-seeds LIST] [--lfl-seeds-hi LIST] [--idle LIST]
#               [--tun-mtu LIST] [--kinds LIST] [--rounds N]
#               [--out FILE] [--no-rtprio]
#
#   scenarios  accuracy ceiling lfl hiloss ttfb rrlat scale short
#              (default: all of these), cworkers (not in the default:
#              the client's worker processes, tunsplit against
#              tunsplit-cw2 cell by cell, see bench/README.md), hev (not
#              in the default: issue 19's table, direct, tunsplit and
#              tunsplit-socks5 cell by cell, see bench/README.md)
#   paths      direct openvpn v2ray kcptun tunsplit   (default: all; tunsplit
#              needs TUNSPLIT=binary; ttfb and scale add tunsplit-nopool,
#              short adds tunsplit-w1 (server.workers: 1) and
#              tunsplit-noreuse (client.reuse: 1), see bench/README.md).
#              tunsplit-nooffload (not in the default) is tunsplit with
#              tun.offload: off; in scale its iperf3 cells run right after
#              tunsplit's, cell by cell, for the on/off ratio;
#              tunsplit-cw1 and -cw2 are tunsplit with client.workers: 1
#              and 2 (cworkers); tunsplit-socks5 is the tunsplit client
#              with protocol: socks5 to danted in the server namespace,
#              no TLS (hev; needs dante-server)
#   loss       percent list for lfl            (default: 0 0.3 1 5)
#   cc         direct path's CCs in lfl        (default: cubic bbr; tunnels
#                                               always run bbr)
#   flows      iperf3 -P list for lfl/ceiling  (default: 1 4; in lfl the 4
#              flows run for direct BBR, OpenVPN and tunsplit at 1 %,
#              with --full for every path and loss) and for cworkers
#              (default: 4 1); hev runs 1 flow up and down at each
#              TUN MTU and 4 flows down at the first
#   time/omit  iperf3 -t / -O seconds in lfl (default: 3 / 2; hiloss 3 / 1,
#              --full 10 / 2 for both); kcptun runs in lfl at 5 % (and in
#              hiloss; --full: every loss); in hiloss OpenVPN, v2ray and
#              kcptun run the first seed only (OpenVPN: about 0.5 Mbit/s;
#              kcptun: steady at every seed; --full: every seed), direct
#              BBR and tunsplit every seed
#   samples    new connections for ttfb        (default: 20)
#   seed       loss pattern seed of lfl, rrlat (default: 1)
#   seeds      hiloss (15 %) seeds             (default: 1 2 3)
#   lfl-seeds  lfl seeds (default: SEED .. SEED+4): every lfl cell runs
#              with the first; single-flow cells at 1 % loss of direct BBR,
#              OpenVPN and tunsplit also with the others (--full: every
#              path and loss >= 1 %), and the tables show the median
#              (min-max).  One short run at 1-5 % is one draw of whether
#              BBR meets an early loss burst in Startup; see bench/README.md
#   lfl-seeds-hi  seeds of direct BBR and tunsplit at 5 % loss (default:
#              as lfl-seeds); OpenVPN, far below either there, runs the
#              first seed only
#   idle       idle-flow counts for scale      (default: 1000 10000 through
#              tunsplit, 1000 through the others; --full: both for all)
#   tun-mtu    tunsplit's TUN MTUs (default: TSB_MTU, else 9000, then 1500).
#              The first is the MTU of every tunsplit cell; the others add
#              tunsplit cells at that MTU next to it: single-flow iperf3 up
#              and down over the plain veth (scale) and over the lossy link
#              (lfl, every loss with the first seed, at 1 % with every
#              --lfl-seeds; --full: as the first).  At TUN MTU 1500 the app
#              announces MSS 1460, what a LAN client behind a router does
#   kinds      only these kinds of measurement (iperf udp ping ttfb rrlat
#              connrate burst idle; default: all), e.g. --kinds iperf for the
#              throughput cells of scale without its connection rate and
#              idle flows
#   rounds     run the whole plan N times over, one round after another,
#              so the repeats of each cell are interleaved with the other
#              cells' (default 1); round k adds k-1 to every loss seed, so
#              that each round draws other loss patterns.  Tables show the
#              median (min-max) of the repeats
#   --quick    a 5-minute smoke run; --full    longer runs, more seeds,
#              every path with 4 flows, the CUBIC column at 15 %, more
#              accuracy checks, request latency without loss as well
#              (about 65 minutes by its plan, not timed; the default took
#              18 minutes and --quick 9 on the 2-core VM, before the TUN
#              MTU 1500 cells were added)
#   --dry-run  print the plan (one line per measurement) and exit
#   --no-rtprio  run linkem at normal priority (default: SCHED_FIFO 10 on
#              impaired links, so that other load on the machine does not
#              make it late; the unimpaired ceiling always runs normally)
#
# Conditions of the long fat lossy path (lfl, hiloss, ttfb): 100 Mbit/s
# bottleneck each way, 70 ms one-way delay (RTT 140 ms), 100 ms drop-tail
# queue, random loss applied after the queue, both directions.  rrlat uses
# the same link with RTT 20 ms.  Override with BENCH_RATE, BENCH_DELAY,
# BENCH_QUEUE, BENCH_RR_DELAY.  BENCH_SERVER_WORKERS sets the tunsplit
# server's workers (default 0: one per online CPU), BENCH_CLIENT_WORKERS
# the client's of every tunsplit path but tunsplit-cw1 and -cw2 (default:
# the key left out, so the binary's default, 1).
#
# Environment: LINKEM, RRLAT (built by make; else testbed.sh and run.sh
# build them), TUNSPLIT (tunsplit binary), TSB_TUNSPLIT_REV (the revision
# it was built from, for the results; default: git describe of this tree),
# TSB_POOL (tunsplit's pool, default 6), TSB_MTU (its first TUN MTU, 9000),
# TSB_REUSE (client.reuse of the tunsplit paths but tunsplit-noreuse;
# unset: left out), CONNS (bench/conns.c's binary),
# TSB_KEEP (a directory: every iperf3 JSON output is copied there),
# BENCH_PERF (a directory: a system-wide `perf record -a` of every iperf3
# cell goes there, with a .pids file naming the client's, the server's and
# the target's processes).  Only
# one run at a time: the namespaces have fixed names, so a run holds
# /run/tsb.lock (flock) from start to end; another run stops at once, or
# waits for it up to TSB_LOCK_WAIT seconds.

set -u

# The command line for the results, an argument with spaces in quotes.
ARGS=
for a in "$@"; do
	case $a in *[[:space:]]*|"") a="\"$a\"" ;; esac
	ARGS="${ARGS:+$ARGS }$a"
done
HERE=$(cd "$(dirname "$0")" && pwd)
TESTBED=$HERE/testbed.sh
REPORT=$HERE/report.py
FLOWS_PY=$HERE/flows.py
export TSB_RUN=${TSB_RUN:-/run/tsb}
NS_C=tsb-client
NS_S=tsb-server
NS_T=tsb-target
TARGET=10.201.2.2
SERVER=10.201.1.2
RR_PORT=7001
IDLE_PORT=7000

SCENARIOS="accuracy ceiling lfl hiloss ttfb rrlat scale short"
PATHS="direct openvpn v2ray kcptun tunsplit"
PATHS_SET=0		# --paths given: short, cworkers run only the paths named
LOSSES="0 0.3 1 5"
CCS="cubic bbr"
TUNNEL_CC=bbr
CEILING_CC=cubic
FLOWS="1 4"
MULTI_PATHS="direct openvpn tunsplit"	# paths and losses run with > 1 flow
MULTI_CCS="bbr"
MULTI_LOSSES="1"		# 4 flows: at 0 % they only confirm the ceiling
LFL_SEEDS=		# default: $SEED .. $((SEED + 4))
LFL_SEED_MIN=1		# extra lfl seeds at loss >= this (percent) ...
LFL_SEED_PATHS="direct openvpn tunsplit"	# ... for these paths
LFL_SEED_CCS="bbr"	# ... and the direct path with these CCs
LFL_SEEDS_HI=		# default: $SEED .. $((SEED + 4))
LFL_SEED_HI_MIN=5	# and still more at loss >= this ...
LFL_SEED_HI_PATHS="direct tunsplit"	# ... for these (the others: 1 seed)
RESEED_RESTART="openvpn kcptun"	# set up anew when the loss pattern changes
HILOSS=15
HILOSS_CCS="bbr"
HL_ONCE="openvpn v2ray kcptun"	# hiloss paths run with the first seed only
SEEDS="1 2 3"
T=3			# lfl iperf3 seconds measured, after OMIT
OMIT=2
T_SHORT=3		# ceiling and scale iperf3 runs
HL_T=3			# hiloss iperf3 runs: at 15 % no path reaches a
HL_OMIT=1		# steady state; the spread over seeds is the result
KCP_LOSSES="5"		# kcptun in lfl (--full: all); it also runs at 15 %
OMIT_SHORT=1
RR_T=3			# rrlat seconds, each loop
RR_RATE=500		# rrlat open-loop requests per second
RR_LOSSES="1"		# --full: 0 1
CONN_N=5000		# connection rate: sequential GETs per cell
BURST_N=500		# short: connections of a burst, opened at once ...
BURST_BYTES=65536	# ... each echoing this many bytes each way
SHORT_IDLE=10000	# short: idle flows through tunsplit, reuse on and off
SHORT_PATHS="direct tunsplit tunsplit-w1 tunsplit-noreuse"
CW_PATHS="tunsplit-cw1 tunsplit-cw2"	# cworkers: 1 and 2 client workers ...
CW_FLOWS="4 1"		# ... with these iperf3 -P
HEV_PATHS="direct tunsplit tunsplit-socks5"	# hev: issue 19's columns
IDLE="1000 10000"	# idle flows through tunsplit
IDLE_OTHER="1000"	# through the others (--full: as $IDLE)
TS_MTU=${TSB_MTU:-9000}	# tunsplit's TUN MTU: every tunsplit cell ...
TUN_MTUS="$TS_MTU 1500"	# ... and these add cells next to it (--tun-mtu)
MTU_SEEDS_ALL=0		# other MTUs: the seeds of the first (--full)
KINDS=			# measurement kinds run (empty: all)
ROUNDS=1		# the whole plan this many times over
PLAN_ROUND=1		# the round plan() is writing
SAMPLES=20
SEED=1
ACC_FULL=0
DRY=0
OUT=
RTPRIO="--rtprio 10"
RATE=${BENCH_RATE:-100}
DELAY=${BENCH_DELAY:-70}
QUEUE=${BENCH_QUEUE:-100}
RR_DELAY=${BENCH_RR_DELAY:-10}

die() { echo "run.sh: $*" >&2; exit 1; }
say() { echo "$*" >&2; }
nsx() { local ns=$1; shift; ip netns exec "$ns" "$@"; }

usage() { sed -n '4,/^$/s/^# \{0,1\}//p' "$0" >&2; exit 2; }

while [ $# -gt 0 ]; do
	case $1 in
	--quick)	T=3; OMIT=1; LOSSES="0 1"; SAMPLES=10; SEEDS=1
			LFL_SEEDS=1; LFL_SEEDS_HI=1
			FLOWS=1; IDLE=1000; RR_T=2; RR_LOSSES=1
			CONN_N=2000; SHORT_IDLE=1000 ;;
	--full)		T=10; OMIT=2; SEEDS="1 2 3 4 5"; T_SHORT=5
			MULTI_PATHS="direct openvpn v2ray kcptun tunsplit"
			MULTI_LOSSES=ALL; KCP_LOSSES=ALL; HL_T=10; HL_OMIT=2
			HL_ONCE=
			MULTI_CCS="cubic bbr"; HILOSS_CCS="cubic bbr"
			RR_T=5; ACC_FULL=1; RR_LOSSES="0 1"
			LFL_SEEDS="1 2 3 4 5"; LFL_SEED_CCS="cubic bbr"
			LFL_SEEDS_HI=$LFL_SEEDS
			LFL_SEED_PATHS="direct openvpn v2ray kcptun tunsplit"
			LFL_SEED_HI_PATHS=$LFL_SEED_PATHS
			MTU_SEEDS_ALL=1
			IDLE_OTHER=FULL ;;
	--scenarios)	SCENARIOS=$2; shift ;;
	--paths)	PATHS=$2; PATHS_SET=1; shift ;;
	--loss)		LOSSES=$2; shift ;;
	--cc)		CCS=$2; shift ;;
	--flows)	FLOWS=$2; CW_FLOWS=$2; shift ;;
	--time)		T=$2; shift ;;
	--omit)		OMIT=$2; shift ;;
	--samples)	SAMPLES=$2; shift ;;
	--seed)		SEED=$2; shift ;;
	--seeds)	SEEDS=$2; shift ;;
	--lfl-seeds)	LFL_SEEDS=$2; shift ;;
	--lfl-seeds-hi)	LFL_SEEDS_HI=$2; shift ;;
	--idle)		IDLE=$2; IDLE_OTHER=$2; shift ;;
	--tun-mtu)	TUN_MTUS=$2; shift ;;
	--kinds)	KINDS=$2; shift ;;
	--rounds)	ROUNDS=$2; shift ;;
	--out)		OUT=$2; shift ;;
	--no-rtprio)	RTPRIO= ;;
	--dry-run)	DRY=1 ;;
	*)		usage ;;
	esac
	shift
done

[ "$IDLE_OTHER" = FULL ] && IDLE_OTHER=$IDLE
TUN_MTUS=$(echo $TUN_MTUS | tr ' ' '\n' | awk '!seen[$0]++' | tr '\n' ' ')
TUN_MTUS=${TUN_MTUS% }
TS_MTU=${TUN_MTUS%% *}
for m in $TUN_MTUS; do
	case $m in
	*[!0-9]*|"") die "--tun-mtu: \"$m\" is not a number" ;;
	esac
	[ "$m" -ge 576 ] && [ "$m" -le 65535 ] ||
	    die "--tun-mtu: $m is outside 576-65535 (tun.mtu's range)"
done
case $ROUNDS in
*[!0-9]*|""|0) die "--rounds: \"$ROUNDS\" is not a positive number" ;;
esac
[ -n "$LFL_SEEDS" ] || LFL_SEEDS=$(seq -s ' ' "$SEED" $((SEED + 4)))
[ -n "$LFL_SEEDS_HI" ] ||
    LFL_SEEDS_HI=$(seq -s ' ' "$SEED" $((SEED + 4)))
[ "$MULTI_LOSSES" = ALL ] && MULTI_LOSSES=$LOSSES
[ "$KCP_LOSSES" = ALL ] && KCP_LOSSES=$LOSSES
[ "$(id -u)" = 0 ] || die "must run as root (namespaces, TUN)"
for tool in ip iperf3 curl socat nginx ping python3 sysctl flock; do
	command -v $tool >/dev/null || die "$tool is missing"
done
if [ -n "${BENCH_PERF:-}" ]; then
	command -v perf >/dev/null ||
	    die "BENCH_PERF: perf is missing (apt-get install linux-perf)"
	mkdir -p "$BENCH_PERF" || die "BENCH_PERF: cannot make $BENCH_PERF"
fi

# One run at a time: the namespaces, /run/tsb and the daemons' ports are
# fixed.  The lock is held on fd 9 until we exit; testbed.sh, run from here,
# is told it is held, and every daemon we start gets fd 9 closed so a
# leftover process can never keep a later run out.
LOCK=${TSB_LOCK:-/run/tsb.lock}
exec 9>>"$LOCK" || die "cannot open $LOCK"
if ! flock -w "${TSB_LOCK_WAIT:-0}" 9; then
	die "another bench run holds the lock ($LOCK: $(
	    cat "$LOCK" 2>/dev/null)); wait for it to end (or set TSB_LOCK_WAIT=SECONDS)"
fi
echo "run.sh pid $$" >"$LOCK"
export TSB_LOCK_HELD=1

# Ten thousand idle flows need more descriptors than the default hard limit
# in the app, the proxies and the target; root may raise it.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

need_tool() {	# path tool...: warn once, the path then reads n/a
	local p=$1 t; shift
	for t in "$@"; do
		command -v "$t" >/dev/null && continue
		say "run.sh: $t is missing: the $p column will read n/a" \
		    "(apt-get install ${PKG_OF[$t]:-$t})"
		return 1
	done
}
declare -A PKG_OF=([openvpn]=openvpn [v2ray]=v2ray [kcptun-client]=kcptun
    [kcptun-server]=kcptun [nft]=nftables [openssl]=openssl)

STAMP=$(date -u +%Y%m%d-%H%M%S)
mkdir -p "$HERE/results"
OUT=${OUT:-$HERE/results/$STAMP.json}
WORK=$(mktemp -d /tmp/tsb-bench.XXXXXX)
chmod 755 "$WORK"
RESULTS=$WORK/results.jsonl
: >"$RESULTS"
CLK_TCK=$(getconf CLK_TCK)

# ---- congestion control ----------------------------------------------------
# A non-initial namespace may only pick algorithms the host allows; widen the
# host's list for the run and put it back afterwards.
CC_SAVED=$(sysctl -n net.ipv4.tcp_allowed_congestion_control)

cc_prepare() {
	local want="$CC_SAVED" c
	for c in $CCS $TUNNEL_CC $CEILING_CC $MULTI_CCS $HILOSS_CCS; do
		case " $want " in *" $c "*) ;; *) want="$want $c" ;; esac
	done
	sysctl -qw net.ipv4.tcp_allowed_congestion_control="$want" ||
	    die "cannot allow \"$want\""
}

cc_set() {
	local ns
	for ns in $NS_C $NS_S $NS_T; do
		nsx $ns sysctl -qw net.ipv4.tcp_congestion_control="$1" ||
		    die "cannot select $1 in $ns"
	done
}

# ---- linkem counters ----------------------------------------------------------
# SIGUSR1 makes linkem write its counters and start a new period: once before
# a measurement (discarded), once after (kept with the result).
linkem_period() {
	local pid i=0
	rm -f "$1"
	pid=$(cat "$TSB_RUN/linkem.pid" 2>/dev/null) || return 1
	rm -f "$TSB_RUN/linkem.json"
	kill -USR1 "$pid" 2>/dev/null || return 1
	while [ ! -s "$TSB_RUN/linkem.json" ] && [ $i -lt 50 ]; do
		sleep 0.02; i=$((i + 1))
	done
	[ -s "$TSB_RUN/linkem.json" ] && cp "$TSB_RUN/linkem.json" "$1"
}

# ---- daemons ------------------------------------------------------------------
# bg_start NS PIDFILE LOG CMD...: CMD in NS, in the background.  Not through
# nsx (a function run with & is a subshell, and $! would not be the daemon);
# ip netns exec execs, so $! is the daemon itself.
bg_start() {
	local ns=$1 pidf=$2 log=$3; shift 3
	ip netns exec "$ns" "$@" >>"$log" 2>&1 </dev/null 9>&- &
	echo $! >"$pidf"
}

pid_stop() {	# PIDFILE: stop the process we started and recorded there
	local pid i=0
	pid=$(cat "$1" 2>/dev/null) || return 0
	kill -TERM "$pid" 2>/dev/null
	while kill -0 "$pid" 2>/dev/null && [ $i -lt 50 ]; do
		sleep 0.1; i=$((i + 1))
	done
	kill -KILL "$pid" 2>/dev/null
	rm -f "$1"
	return 0
}

wait_listen() {	# NS PORT [tcp|udp]: until something listens there (5 s)
	local i=0 opt=-Hltn
	[ "${3:-tcp}" = udp ] && opt=-Hlun
	until [ -n "$(nsx "$1" ss $opt "sport = :$2" 2>/dev/null)" ]; do
		[ $i -lt 50 ] || return 1
		sleep 0.1; i=$((i + 1))
	done
}

# cpu_ticks, cpu_tree_stat: the CPU of a daemon and its workers.
. "$HERE/cpu.sh"

# ---- paths ----------------------------------------------------------------
# path_up PATH makes the target subnet reach the target through PATH;
# path_down undoes it; path_pids PATH PORT names the client-side and
# server-side daemon carrying connections to PORT (for CPU and memory).
# The direct path is the testbed's own routing.

PKI=$WORK/pki

bench_pki() {	# a throwaway CA and a certificate for "tunsplit.bench"
	[ -f "$PKI/server.pem" ] && return 0
	need_tool tls openssl || return 1
	mkdir -p "$PKI" || return 1
	(cd "$PKI" &&
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -keyout ca.key -out ca.pem -days 2 -subj /CN=tsb-ca &&
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -keyout server.key -out server.csr -subj /CN=tunsplit.bench &&
	printf 'subjectAltName=DNS:tunsplit.bench\n' >ext &&
	openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key \
	    -CAcreateserial -days 2 -extfile ext -out server.pem) \
	    >"$PKI/pki.log" 2>&1
}

# Transparent redirect in the client namespace for the L4 proxies: the
# target's TCP ports go to the local proxy (RULES are nft statements), and
# anything else bound for the target subnet is dropped, so a broken
# redirect fails loudly instead of silently measuring the direct path.
redirect_up() {
	need_tool "$1" nft || return 1
	nsx $NS_C nft -f - <<EOF
table ip tsb_redir {
	chain out_nat {
		type nat hook output priority -100; policy accept;
		$2
	}
	chain out_filter {
		type filter hook output priority 0; policy accept;
		ip daddr 10.201.2.0/24 counter drop
	}
}
EOF
}

redirect_down() {
	nsx $NS_C nft delete table ip tsb_redir 2>/dev/null
	return 0
}

# A path's first request: proves that it carries HTTP to the target and
# warms it (a proxy's session, a tunnel's pool) before anything is measured.
path_check() {
	local n
	n=$(nsx $NS_C curl -s -o /dev/null -m 10 -w '%{size_download}' \
	    http://$TARGET/1k) && [ "$n" = 1024 ] ||
	    { say "$1: HTTP through it failed"; return 1; }
}

OVPN=$WORK/ovpn

ovpn_up() {
	local common i=0
	need_tool openvpn openvpn || return 1
	mkdir -p "$OVPN"
	[ -f "$OVPN/key" ] || openvpn --genkey secret "$OVPN/key" 2>/dev/null ||
	    return 1
	# p2p static-key mode over TCP; TCP_NODELAY on the outer socket, or
	# Nagle adds most of an RTT to small exchanges.
	common="--dev tun-ovpn --dev-type tun --cipher AES-256-CBC --auth SHA256
	    --socket-flags TCP_NODELAY --verb 3 --ping 10 --ping-restart 60"
	nsx $NS_S openvpn $common --proto tcp-server --local $SERVER \
	    --lport 1194 --ifconfig 10.201.9.2 10.201.9.1 \
	    --secret "$OVPN/key" 0 --daemon tsb-ovpn-s \
	    --writepid "$OVPN/s.pid" --log "$OVPN/s.log" >>"$OVPN/s.log" \
	    2>&1 9>&- || return 1
	nsx $NS_C openvpn $common --proto tcp-client --remote $SERVER 1194 \
	    --nobind --ifconfig 10.201.9.1 10.201.9.2 \
	    --secret "$OVPN/key" 1 --daemon tsb-ovpn-c \
	    --writepid "$OVPN/c.pid" --log "$OVPN/c.log" >>"$OVPN/c.log" \
	    2>&1 9>&- || return 1
	while ! grep -q "Initialization Sequence Completed" "$OVPN/c.log" \
	    2>/dev/null; do
		[ $i -lt 100 ] || { tail -5 "$OVPN/c.log" >&2; return 1; }
		sleep 0.1; i=$((i + 1))
	done
	nsx $NS_C ip route replace 10.201.2.0/24 via 10.201.9.2 dev tun-ovpn
	# Fail loudly rather than measure the direct path by mistake.
	nsx $NS_C ip route get $TARGET | grep -q "dev tun-ovpn" ||
	    { say "openvpn: route not through the tunnel"; return 1; }
	path_check openvpn
}

ovpn_down() {
	pid_stop "$OVPN/c.pid"
	pid_stop "$OVPN/s.pid"
	nsx $NS_C ip route replace 10.201.2.0/24 via $SERVER dev lkc \
	    2>/dev/null
	return 0
}

# v2ray 4.x as a per-connection TLS proxy: VLESS over TLS 1.3 (one outer
# TCP+TLS connection per app connection, as trojan or VLESS are used), the
# client side a transparent dokodemo-door fed by the nft redirect.
V2=$WORK/v2ray
V2_PORT=10800

v2ray_up() {
	local uuid
	need_tool v2ray v2ray || return 1
	bench_pki || { say "v2ray: certificates failed"; return 1; }
	mkdir -p "$V2"
	uuid=$(cat /proc/sys/kernel/random/uuid)
	cat >"$V2/server.json" <<EOF
{"log": {"loglevel": "warning"},
 "inbounds": [{"listen": "$SERVER", "port": 8444, "protocol": "vless",
   "settings": {"clients": [{"id": "$uuid"}], "decryption": "none"},
   "streamSettings": {"network": "tcp", "security": "tls",
     "tlsSettings": {"certificates": [{"certificateFile": "$PKI/server.pem",
                                       "keyFile": "$PKI/server.key"}]}}}],
 "outbounds": [{"protocol": "freedom"}]}
EOF
	cat >"$V2/client.json" <<EOF
{"log": {"loglevel": "warning"},
 "inbounds": [{"listen": "127.0.0.1", "port": $V2_PORT,
   "protocol": "dokodemo-door",
   "settings": {"network": "tcp", "followRedirect": true}}],
 "outbounds": [{"protocol": "vless",
   "settings": {"vnext": [{"address": "$SERVER", "port": 8444,
                           "users": [{"id": "$uuid", "encryption": "none"}]}]},
   "streamSettings": {"network": "tcp", "security": "tls",
     "tlsSettings": {"serverName": "tunsplit.bench",
       "certificates": [{"usage": "verify",
                         "certificateFile": "$PKI/ca.pem"}]}}}]}
EOF
	bg_start $NS_S "$V2/s.pid" "$V2/s.log" v2ray -config "$V2/server.json"
	bg_start $NS_C "$V2/c.pid" "$V2/c.log" v2ray -config "$V2/client.json"
	wait_listen $NS_S 8444 && wait_listen $NS_C $V2_PORT ||
	    { tail -5 "$V2/s.log" "$V2/c.log" >&2; return 1; }
	redirect_up v2ray "ip daddr 10.201.2.0/24 tcp dport { 80, 5201, \
$IDLE_PORT, $RR_PORT } redirect to :$V2_PORT" || return 1
	path_check v2ray
}

v2ray_down() {
	redirect_down
	pid_stop "$V2/c.pid"
	pid_stop "$V2/s.pid"
}

# kcptun forwards one local port to one remote address, so each target
# port gets its own client/server pair (and KCP session).  "fast3", FEC
# 10/3 (its default), windows 1024 packets: the classic settings.
KCP=$WORK/kcptun
KCP_PORTS="5201 80 $IDLE_PORT $RR_PORT"
KCP_OPTS="--mode fast3 --key tsb-bench --crypt aes --nocomp --mtu 1350
    --sndwnd 1024 --rcvwnd 1024 --quiet"

kcptun_up() {
	local i=0 p rules=
	need_tool kcptun kcptun-client kcptun-server || return 1
	mkdir -p "$KCP"
	for p in $KCP_PORTS; do
		# shellcheck disable=SC2086
		bg_start $NS_S "$KCP/s$p.pid" "$KCP/s$p.log" kcptun-server \
		    -l $SERVER:$((29900 + i)) -t $TARGET:$p $KCP_OPTS
		# shellcheck disable=SC2086
		bg_start $NS_C "$KCP/c$p.pid" "$KCP/c$p.log" kcptun-client \
		    -l 127.0.0.1:$((15000 + i)) -r $SERVER:$((29900 + i)) \
		    $KCP_OPTS
		rules="$rules
		ip daddr 10.201.2.0/24 tcp dport $p redirect to :$((15000 + i))"
		i=$((i + 1))
	done
	i=0
	for p in $KCP_PORTS; do
		wait_listen $NS_S $((29900 + i)) udp &&
		    wait_listen $NS_C $((15000 + i)) ||
		    { tail -3 "$KCP/s$p.log" "$KCP/c$p.log" >&2; return 1; }
		i=$((i + 1))
	done
	redirect_up kcptun "$rules" || return 1
	path_check kcptun
}

kcptun_down() {
	local p
	redirect_down
	for p in $KCP_PORTS; do
		pid_stop "$KCP/c$p.pid"
		pid_stop "$KCP/s$p.pid"
	done
}

# The tunsplit columns: a server in $NS_S listening on 10.201.1.2 (egress
# allowed to the target subnet), a client in $NS_C whose TUN carries
# 10.201.2.0/24 and fd00:201:2::/64 while 10.201.1.2 stays on lkc.
# "tunsplit" keeps a warm pool (TSB_POOL, default 6: pool: 6 is a ceiling,
# {min: 1, max: 6}, the size following the flow arrival rate; sequential
# new connections 1 RTT apart drain a smaller pool faster than a
# replacement handshake refills it); "tunsplit-nopool" has none.  The TUN's MTU is the
# cell's (TUN_MTUS), and the app's TCP announces that less 40 as its MSS.
# "tunsplit-nooffload" is "tunsplit" with the TUN's offloads off;
# "tunsplit-w1" has one server worker, "tunsplit-noreuse" a client that
# does not reuse outer connections (issue 18; WORKERS empty:
# BENCH_SERVER_WORKERS, else 0; REUSE empty: the key is left out, so the
# binary's default, also for a binary that predates the key);
# "tunsplit-cw2" a client of two worker processes (issue 19; CWORKERS
# empty: BENCH_CLIENT_WORKERS, else the key left out).  "tunsplit-socks5"
# (PROTOCOL socks5) is the same client with protocol: socks5 to danted
# (dante-server) in the server namespace instead of the tunsplit server:
# plain TCP, no TLS, no pool -- the job of hev-socks5-tunnel, which is not
# packaged (issue 19); danted's pid stands in the server's pid file, so
# its CPU (all its processes) is the server's.
TS_DIR=$WORK/tunsplit
DANTE_PORT=1080

dante_up() {	# danted on $SERVER:$DANTE_PORT, pid in $TS_DIR/server.pid
	local danted
	danted=$(command -v danted || echo /usr/sbin/danted)
	[ -x "$danted" ] || {
		say "tunsplit-socks5: danted is missing (apt-get install dante-server)"
		return 1; }
	sed -e "s/@INTERNAL@/$SERVER/" -e "s/@PORT@/$DANTE_PORT/" \
	    -e "s/@EXTERNAL@/ts-s2t/" "$HERE/danted.conf" \
	    >"$TS_DIR/danted.conf" || return 1
	bg_start $NS_S "$TS_DIR/server.pid" "$TS_DIR/server.log" \
	    "$danted" -f "$TS_DIR/danted.conf" -p "$TS_DIR/danted.pid" -N 1
	wait_listen $NS_S $DANTE_PORT ||
	    { tail -5 "$TS_DIR/server.log" >&2; return 1; }
}

tunsplit_up() {	# POOL MTU [OFFLOAD [WORKERS [REUSE [CWORKERS [PROTOCOL]]]]]
	local pool=$1 mtu=$2 offload=${3:-on} workers=${4:-} reuse=${5:-}
	local cworkers=${6:-${BENCH_CLIENT_WORKERS:-}} proto=${7:-tunsplit}
	local key
	if [ -z "${TUNSPLIT:-}" ] || [ ! -x "${TUNSPLIT:-}" ]; then
		say "tunsplit: no binary (set TUNSPLIT=path)"
		return 1
	fi
	mkdir -p "$TS_DIR"
	if [ "$proto" = socks5 ]; then
		tunsplit_socks5_up "$mtu" "$offload" "$cworkers"
		return
	fi
	bench_pki || { say "tunsplit: certificates failed"; return 1; }
	key=$("$TUNSPLIT" genkey) || return 1
	cat >"$TS_DIR/server.yaml" <<EOF
log: {level: warn}
control: $TS_DIR/server.sock
server:
  listen: ["$SERVER:8443"]
  cert: $PKI/server.pem
  cert_key: $PKI/server.key
  users: [{name: bench, key: "$key"}]
  congestion: $TUNNEL_CC
  max_conns: 30000
  max_conns_per_source: 0
  max_conns_per_user: 0
  workers: ${workers:-${BENCH_SERVER_WORKERS:-0}}
  egress: {allow: [10.201.2.0/24, "fd00:201:2::/64"]}
EOF
	cat >"$TS_DIR/client.yaml" <<EOF
log: {level: warn}
control: $TS_DIR/client.sock
tun: {name: tsb-ts, mtu: $mtu, offload: $offload, address: [198.18.0.1/15, "fdfe:dcba:9876::1/64"]}
client:
  server: "$SERVER:8443"
  sni: tunsplit.bench
  ca: $PKI/ca.pem
  key: "$key"
  congestion: $TUNNEL_CC
  max_flows: 30000
  pool: $pool
${reuse:+  reuse: $reuse}
${cworkers:+  workers: $cworkers}
EOF
	chmod 600 "$TS_DIR"/*.yaml
	bg_start $NS_S "$TS_DIR/server.pid" "$TS_DIR/server.log" \
	    "$TUNSPLIT" run -c "$TS_DIR/server.yaml"
	tunsplit_client_up "$pool" "$cworkers"
}

# The client of $TS_DIR/client.yaml: start it, route the target through
# its TUN, warm it.
tunsplit_client_up() {	# POOL CWORKERS
	local pool=$1 cworkers=$2 i n
	bg_start $NS_C "$TS_DIR/client.pid" "$TS_DIR/client.log" \
	    "$TUNSPLIT" run -c "$TS_DIR/client.yaml"
	i=0
	until nsx $NS_C ip link show tsb-ts 2>/dev/null | grep -q UP; do
		[ $i -lt 50 ] || { tail -5 "$TS_DIR/client.log" >&2; return 1; }
		sleep 0.1; i=$((i + 1))
	done
	nsx $NS_C ip route replace 10.201.2.0/24 dev tsb-ts
	nsx $NS_C ip -6 route replace fd00:201:2::/64 dev tsb-ts 2>/dev/null
	nsx $NS_C ip route get $TARGET | grep -q "dev tsb-ts" ||
	    { say "tunsplit: route not through the tunnel"; return 1; }
	# The pool holds nothing before a flow: the first request warms it.
	# Let it fill before anything is measured (1 RTT of TCP and 1 of
	# TLS 1.3 at least; 3 s at most, then measure anyway).
	path_check tunsplit || return 1
	# Client workers asked: are they all running?  (A kernel that
	# refuses the steering program or multiple queues gets one.)
	if [ -n "$cworkers" ] && [ "$cworkers" != 1 ]; then
		n=$(ts_worker_flows | wc -w)
		[ "$n" = "$cworkers" ] || [ "$cworkers" = 0 ] || say \
		    "tunsplit: $cworkers client workers asked, $n running"
	fi
	i=0
	while [ "$pool" -gt 0 ] && [ $i -lt 30 ] &&
	    ! "$TUNSPLIT" status -s "$TS_DIR/client.sock" 2>/dev/null |
	    grep -q "^pool: [1-9][0-9]* ready"; do
		sleep 0.1; i=$((i + 1))
	done
	return 0
}

tunsplit_socks5_up() {	# MTU OFFLOAD CWORKERS
	dante_up || return 1
	cat >"$TS_DIR/client.yaml" <<EOF
log: {level: warn}
control: $TS_DIR/client.sock
tun: {name: tsb-ts, mtu: $1, offload: $2, address: [198.18.0.1/15, "fdfe:dcba:9876::1/64"]}
client:
  protocol: socks5
  server: "$SERVER:$DANTE_PORT"
  congestion: $TUNNEL_CC
  max_flows: 30000
${3:+  workers: $3}
EOF
	chmod 600 "$TS_DIR/client.yaml"
	tunsplit_client_up 0 "$3"
}

# The flows each client worker has taken so far ("N N ..."; nothing with
# one worker, whose status lists none), from `tunsplit status -j`.
ts_worker_flows() {
	"$TUNSPLIT" status -j -s "$TS_DIR/client.sock" 2>/dev/null |
	    python3 -c 'import json, sys
try:
    print(" ".join(str(w.get("flows", 0))
                   for w in json.load(sys.stdin).get("workers", [])))
except ValueError:
    pass'
}

tunsplit_down() {
	local i=0
	pid_stop "$TS_DIR/client.pid"
	pid_stop "$TS_DIR/server.pid"
	# The TUN (and its routes) go with the client; wait until it has.
	while nsx $NS_C ip link show tsb-ts >/dev/null 2>&1 && [ $i -lt 50 ]; do
		sleep 0.1; i=$((i + 1))
	done
	nsx $NS_C ip route replace 10.201.2.0/24 via $SERVER dev lkc \
	    2>/dev/null
	return 0
}

path_up() {	# PATH [TUN-MTU]
	case $1 in
	direct)		return 0 ;;
	openvpn)	ovpn_up ;;
	v2ray)		v2ray_up ;;
	kcptun)		kcptun_up ;;
	tunsplit)	tunsplit_up "${TSB_POOL:-6}" "${2:-$TS_MTU}" on \
			    "" "${TSB_REUSE:-}" ;;
	tunsplit-nopool) tunsplit_up 0 "${2:-$TS_MTU}" on \
			    "" "${TSB_REUSE:-}" ;;
	tunsplit-nooffload) tunsplit_up "${TSB_POOL:-6}" "${2:-$TS_MTU}" off \
			    "" "${TSB_REUSE:-}" ;;
	tunsplit-w1)	tunsplit_up "${TSB_POOL:-6}" "${2:-$TS_MTU}" on 1 \
			    "${TSB_REUSE:-}" ;;
	tunsplit-noreuse) tunsplit_up "${TSB_POOL:-6}" "${2:-$TS_MTU}" on \
			    "" 1 ;;
	tunsplit-cw1)	tunsplit_up "${TSB_POOL:-6}" "${2:-$TS_MTU}" on \
			    "" "${TSB_REUSE:-}" 1 ;;
	tunsplit-cw2)	tunsplit_up "${TSB_POOL:-6}" "${2:-$TS_MTU}" on \
			    "" "${TSB_REUSE:-}" 2 ;;
	tunsplit-socks5) tunsplit_up 0 "${2:-$TS_MTU}" on "" "" "" socks5 ;;
	*)		die "unknown path $1" ;;
	esac
}

path_down() {
	case $1 in
	openvpn)	ovpn_down ;;
	v2ray)		v2ray_down ;;
	kcptun)		kcptun_down ;;
	tunsplit*)	tunsplit_down ;;
	esac
}

path_pids() {	# PATH PORT -> "client-pid server-pid" (0 for none)
	local c="" s=""
	case $1 in
	openvpn)	c=$OVPN/c.pid; s=$OVPN/s.pid ;;
	v2ray)		c=$V2/c.pid; s=$V2/s.pid ;;
	kcptun)		c=$KCP/c$2.pid; s=$KCP/s$2.pid ;;
	tunsplit*)	c=$TS_DIR/client.pid; s=$TS_DIR/server.pid ;;
	esac
	echo "$(cat "$c" 2>/dev/null || echo 0) $(cat "$s" 2>/dev/null ||
	    echo 0)"
}

# ---- measurements -----------------------------------------------------------
# Each gets its metadata as an unterminated JSON object ("{... "), adds its
# own fields, appends one JSON line to $RESULTS and echoes its summary.

record() {
	local kind=$1 meta=$2; shift 2
	python3 "$REPORT" "$kind" "$meta" "$@" >>"$RESULTS" ||
	    { echo "report.py failed"; return; }
	tail -n1 "$RESULTS" | python3 -c \
	    'import json,sys; print(json.load(sys.stdin)["value"])'
}

iperf_client() {	# FLOWS SECONDS OMIT [-R] -> $WORK/iperf.json, iperf.err
	# --foreground keeps iperf3 in our process group, so ^C reaches it.
	timeout --foreground $(($2 + $3 + 40)) ip netns exec $NS_C iperf3 \
	    -c $TARGET -J -t "$2" -O "$3" -P "$1" ${4:-} \
	    --connect-timeout 10000 >"$WORK/iperf.json" 2>"$WORK/iperf.err" \
	    </dev/null 9>&-
}

# The machine's CPU ticks so far: "busy total" over every CPU (busy: all
# but idle and iowait), from /proc/stat.
machine_ticks() {
	awk '$1 == "cpu" { t = 0; for (i = 2; i <= NF; i++) t += $i
		print t - $5 - $6, t; exit }' /proc/stat
}

tree_pids() {	# PID: it and its descendants, comma-separated
	cpu_tree_stat "$1" | awk '{ printf "%s%s", (NR > 1 ? "," : ""), $1 }'
}

m_iperf() {	# META FLOWS DIR SECONDS OMIT
	local meta=$1 flows=$2 dir=$3 t=$4 omit=$5 rev="" cp sp c0 s0 w0="" w1
	local mb0 mt0 mb1 mt1 perf="" perf_out
	[ "$dir" = down ] && rev=-R
	read -r cp sp <<<"$(path_pids "$CUR_PATH" 5201)"
	case $CUR_PATH in tunsplit*) w0=$(ts_worker_flows) ;; esac
	linkem_period "$WORK/le0.json"
	rm -f "$WORK/le.json"
	c0=$(cpu_ticks "$cp"); s0=$(cpu_ticks "$sp")
	read -r mb0 mt0 <<<"$(machine_ticks)"
	# BENCH_PERF=DIR: a system-wide profile of the cell (perf record -a,
	# no call graphs) into DIR/<time>-<path>-<mtu>-<flows>-<dir>.data.
	if [ -n "${BENCH_PERF:-}" ]; then
		perf_out="$BENCH_PERF/$(date +%H%M%S)-$CUR_PATH${CUR_MTU:+-$CUR_MTU}-$flows-$dir.data"
		perf record -a -F 499 -o "$perf_out" -- sleep $((t + omit)) \
		    >/dev/null 2>&1 9>&- &
		perf=$!
	fi
	iperf_client "$flows" "$t" "$omit" $rev
	if [ -n "$perf" ]; then
		wait "$perf"
		# Whose samples are whose: the client's processes, the
		# server's, the target's iperf3 (perf report --pid).
		echo "client $(tree_pids "$cp")
server $(tree_pids "$sp")
target $(cat "$TSB_RUN/iperf3.pid" 2>/dev/null)" \
		    >"$BENCH_PERF/$(basename "$perf_out" .data).pids"
	fi
	# At high loss the previous test's end can reach the iperf3 server
	# late (or never), which then refuses the next one at once: restart
	# it and measure again, once.
	if grep -q 'server is busy' "$WORK/iperf.json" 2>/dev/null; then
		"$TESTBED" services >/dev/null 2>&1
		linkem_period "$WORK/le0.json"
		c0=$(cpu_ticks "$cp"); s0=$(cpu_ticks "$sp")
		read -r mb0 mt0 <<<"$(machine_ticks)"
		iperf_client "$flows" "$t" "$omit" $rev
	fi
	read -r mb1 mt1 <<<"$(machine_ticks)"
	meta="$meta, \"seconds\": $t, \"omit\": $omit"
	# How busy the whole machine was meanwhile (every process, ours and
	# others', and the kernel's softirqs), in percent of all its CPUs.
	meta="$meta, \"machine_busy_pct\": $(awk "BEGIN { d = $mt1 - $mt0
	    printf \"%.1f\", (d > 0 ? 100 * ($mb1 - $mb0) / d : 0) }")"
	# CPU of the path's daemons over the whole run (omitted seconds too:
	# report.py divides by all bytes moved, from the per-second intervals)
	[ "$cp" != 0 ] && meta="$meta, \"cpu_client_s\": $(awk "BEGIN {
	    print ($(cpu_ticks "$cp") - $c0) / $CLK_TCK }")"
	[ "$sp" != 0 ] && meta="$meta, \"cpu_server_s\": $(awk "BEGIN {
	    print ($(cpu_ticks "$sp") - $s0) / $CLK_TCK }")"
	# The client's worker processes: how many flows each took in this
	# cell (iperf3's control connection is one of them).
	if [ -n "$w0" ]; then
		w1=$(ts_worker_flows)
		[ "$(echo $w0 | wc -w)" = "$(echo $w1 | wc -w)" ] &&
		    meta="$meta, \"client_worker_flows\": [$(echo "$w0" "$w1" |
		    awk '{
			n = NF / 2
			for (i = 1; i <= n; i++)
				printf "%s%d", (i > 1 ? ", " : ""), $(n + i) - $i
		    }')]"
	fi
	linkem_period "$WORK/le.json"
	record iperf "$meta}" "$WORK/iperf.json" "$WORK/le.json"
	# TSB_KEEP=DIR keeps every iperf3 output (per-second intervals).
	[ -n "${TSB_KEEP:-}" ] && cp "$WORK/iperf.json" \
	    "$TSB_KEEP/$(date +%H%M%S)-$CUR_PATH${CUR_MTU:+-$CUR_MTU}-$flows-$dir.json"
	# A killed client can leave the server waiting for a test that never
	# ends; restart the target's services when a run failed.
	if ! grep -q '"end"' "$WORK/iperf.json" 2>/dev/null ||
	    grep -q '"error"' "$WORK/iperf.json"; then
		"$TESTBED" services >/dev/null 2>&1
	fi
}

m_ttfb() {
	local meta=$1 i
	linkem_period "$WORK/le0.json"
	rm -f "$WORK/le.json"
	: >"$WORK/ttfb.txt"
	for i in $(seq "$SAMPLES"); do
		nsx $NS_C curl -s -o /dev/null -m 10 \
		    -w '%{time_connect} %{time_starttransfer} %{http_code}\n' \
		    http://$TARGET/1k >>"$WORK/ttfb.txt" </dev/null ||
		    echo "0 0 fail" >>"$WORK/ttfb.txt"
	done
	linkem_period "$WORK/le.json"
	record ttfb "$meta, \"samples\": $SAMPLES}" "$WORK/ttfb.txt" \
	    "$WORK/le.json"
}

m_rrlat() {	# META RATE (0: closed loop)
	local meta=$1 rate=$2
	linkem_period "$WORK/le0.json"
	rm -f "$WORK/le.json"
	timeout --foreground $((RR_T + 30)) ip netns exec $NS_C "$RRLAT" \
	    -c $TARGET -p $RR_PORT -b 64 -d "$RR_T" -r "$rate" \
	    >"$WORK/rrlat.json" 2>"$WORK/rrlat.err" </dev/null 9>&-
	linkem_period "$WORK/le.json"
	record rrlat "$meta}" "$WORK/rrlat.json" "$WORK/rrlat.err" \
	    "$WORK/le.json"
}

# CPU seconds of the path's daemons (utime + stime of every thread) over
# a command: cpu_meta_start before it, cpu_meta after it adds them to the
# metadata in $META_CPU.
cpu_meta_start() {
	read -r CPU_CP CPU_SP <<<"$(path_pids "$CUR_PATH" "$1")"
	CPU_C0=$(cpu_ticks "$CPU_CP"); CPU_S0=$(cpu_ticks "$CPU_SP")
}
cpu_meta() {
	META_CPU=
	[ "$CPU_CP" != 0 ] && META_CPU="$META_CPU, \"cpu_client_s\": $(awk \
	    "BEGIN { print ($(cpu_ticks "$CPU_CP") - $CPU_C0) / $CLK_TCK }")"
	[ "$CPU_SP" != 0 ] && META_CPU="$META_CPU, \"cpu_server_s\": $(awk \
	    "BEGIN { print ($(cpu_ticks "$CPU_SP") - $CPU_S0) / $CLK_TCK }")"
	# tunsplit: what its status says about the pool and reused outer
	# connections since the path started (a binary without reuse says
	# less): the client's "pool:" line, the server's "reuse:" line.
	case $CUR_PATH in tunsplit*)
		local side line
		for side in client:pool server:reuse; do
			line=$("$TUNSPLIT" status -s "$TS_DIR/${side%:*}.sock" \
			    2>/dev/null | grep -m1 "^${side#*:}:")
			[ -n "$line" ] && META_CPU="$META_CPU, \"status_${side%:*}\": $(json_str "$line")"
		done
	esac
	return 0
}

# Sequential new connections: $CONN_N HTTP/1.0 GETs of /1k, one
# connection each, read to the Content-Length (bench/conns.c), and the
# daemons' CPU for them.
m_connrate() {
	local meta=$1
	cpu_meta_start 80
	timeout --foreground 150 ip netns exec $NS_C "$CONNS" seq $TARGET 80 \
	    "$CONN_N" 120 >"$WORK/conn.json" 2>"$WORK/conn.err" </dev/null 9>&-
	cpu_meta
	record connrate "$meta$META_CPU}" "$WORK/conn.json" "$WORK/conn.err"
}

# A burst: $BURST_N connections opened at once to the target's echo server
# (rrlat -s), $BURST_BYTES each way on each, every byte checked; the time
# from the first connect to the last byte.
m_burst() {
	local meta=$1
	cpu_meta_start $RR_PORT
	linkem_period "$WORK/le0.json"
	rm -f "$WORK/le.json"
	timeout --foreground 150 ip netns exec $NS_C "$CONNS" burst $TARGET \
	    $RR_PORT "$BURST_N" "$BURST_BYTES" 120 >"$WORK/burst.json" \
	    2>"$WORK/burst.err" </dev/null 9>&-
	cpu_meta
	linkem_period "$WORK/le.json"
	record burst "$meta$META_CPU}" "$WORK/burst.json" "$WORK/burst.err" \
	    "$WORK/le.json"
	# Let the daemons close the flows before the next measurement.
	sleep 1
}

# Idle flows: the target accepts and holds; the app opens the counts in
# COUNTS one after another, one byte on each, and reads the daemons' RSS at
# each count, 11 s after the last connection opened for tunsplit (it
# trims its heap every 10 s) and 3 s for the others.  Then it reads their
# peak RSS, closes every flow and reads the RSS 3 s and AFTER s later:
# 25 s for tunsplit (its trims follow a burst's end at 0.5, 1, 2, 4, 8 s,
# then every 10 s), 5 s for the others.
m_idle() {	# META COUNTS
	local meta=$1 counts=$2 cp sp n wait=3 after=5
	case $CUR_PATH in tunsplit*) wait=11 after=25 ;; esac
	read -r cp sp <<<"$(path_pids "$CUR_PATH" $IDLE_PORT)"
	bg_start $NS_T "$WORK/hold.pid" "$WORK/hold.log" python3 "$FLOWS_PY" \
	    hold $TARGET $IDLE_PORT
	wait_listen $NS_T $IDLE_PORT || { echo "FAILED: holder"; return; }
	n=$(echo $counts | wc -w)
	timeout --foreground $((n * wait + after + 300)) ip netns exec $NS_C \
	    python3 "$FLOWS_PY" open $TARGET $IDLE_PORT \
	    "$(echo $counts | tr ' ' ,)" $wait "client=$cp,server=$sp" $after \
	    >"$WORK/idle.json" 2>"$WORK/idle.err" </dev/null 9>&-
	pid_stop "$WORK/hold.pid"
	record idle "$meta, \"wait_s\": $wait}" "$WORK/idle.json" \
	    "$WORK/idle.err"
	# Let the daemons close the flows before the next measurement.
	sleep 2
}

m_ping() {
	local meta=$1
	linkem_period "$WORK/le0.json"
	rm -f "$WORK/le.json"
	nsx $NS_C ping -q -c 200 -i 0.01 -W 5 $TARGET >"$WORK/ping.txt" 2>&1
	linkem_period "$WORK/le.json"
	record ping "$meta}" "$WORK/ping.txt" "$WORK/le.json"
}

m_udp() {	# META BW
	local meta=$1 bw=$2
	linkem_period "$WORK/le0.json"
	rm -f "$WORK/le.json"
	timeout --foreground 60 ip netns exec $NS_C iperf3 -c $TARGET -J -u \
	    -b "$bw" -l 1000 -t 4 --get-server-output >"$WORK/udp.json" 2>&1 \
	    </dev/null 9>&-
	linkem_period "$WORK/le.json"
	record udp "$meta}" "$WORK/udp.json" "$WORK/le.json"
}

# ---- the plan ---------------------------------------------------------------
# One line per measurement:
#   kind|scenario|link|path|cc|flows|dir|loss|extra[|mtu[|round]]
# mtu is tunsplit's TUN MTU (empty: the first of TUN_MTUS; other paths
# have none); plan_all adds the round.  The runner changes the link and
# the path only when a line asks for a different one, so the plan's order
# is also its cost.

LFL_BASE="--delay $DELAY --rate $RATE --queue $QUEUE"
LFL_LINK="$LFL_BASE --seed $SEED"
LFL_RTT=$(awk "BEGIN { print 2 * $DELAY }")
RR_LINK="--delay $RR_DELAY --rate $RATE --queue $QUEUE --seed $SEED"
RR_RTT=$(awk "BEGIN { print 2 * $RR_DELAY }")

has_path() { case " $PATHS " in *" $1 "*) return 0 ;; esac; return 1; }
# short's paths: the tunsplit variants with tunsplit unless --paths names
# the paths one by one.
has_short_path() {
	if [ $PATHS_SET = 1 ]; then has_path "$1"; else has_path "${1%%-*}"; fi
}

# Paths of a throughput table: direct runs each CC, tunnels $TUNNEL_CC.
path_ccs() {	# PATH CC-LIST-FOR-DIRECT
	if [ "$1" = direct ]; then echo "$2"; else echo $TUNNEL_CC; fi
}

plan_iperf() {	# scenario link loss paths ccs flows t omit [tun-mtu]
	local path c f d
	for path in $4; do
		has_path "$path" || continue
		for c in $(path_ccs "$path" "$5"); do
			for f in $6; do
				for d in up down; do
					echo "iperf|$1|$2|$path|$c|$f|$d|$3|$7:$8|${9:-}"
				done
			done
		done
	done
}

# The TUN MTUs a path's single-flow throughput cells run at: tunsplit's
# list, "-" (none) for the others.
path_mtus() {
	case $1 in tunsplit|tunsplit-nooffload) echo $TUN_MTUS ;; *) echo - ;; esac
}

# The seeds of one lfl cell: more where one short run is a poor sample (see
# bench/README.md, "Seeds in lfl"): $LFL_SEEDS_HI for $LFL_SEED_HI_PATHS at
# loss >= $LFL_SEED_HI_MIN, $LFL_SEEDS for $LFL_SEED_PATHS at loss >=
# $LFL_SEED_MIN (below the higher threshold), the first seed otherwise.
# tunsplit at a TUN MTU other than the first gets $LFL_SEEDS from
# $LFL_SEED_MIN up to $LFL_SEED_HI_MIN and the first seed otherwise
# (--full: the seeds of the first MTU).
lfl_seeds() {	# PATH LOSS CC [TUN-MTU]
	case " $LFL_SEED_CCS " in *" $3 "*) ;; *) echo ${LFL_SEEDS%% *}; return ;; esac
	if [ -n "${4:-}" ] && [ "$4" != "$TS_MTU" ] && [ $MTU_SEEDS_ALL = 0 ]
	then
		if awk "BEGIN { exit !($2 >= $LFL_SEED_MIN &&
		    $2 < $LFL_SEED_HI_MIN) }"; then
			echo $LFL_SEEDS
		else
			echo ${LFL_SEEDS%% *}
		fi
		return
	fi
	if awk "BEGIN { exit !($2 >= $LFL_SEED_HI_MIN) }"; then
		case " $LFL_SEED_HI_PATHS " in
		*" $1 "*) echo $LFL_SEEDS_HI; return ;;
		esac
	elif awk "BEGIN { exit !($2 >= $LFL_SEED_MIN) }"; then
		case " $LFL_SEED_PATHS " in
		*" $1 "*) echo $LFL_SEEDS; return ;;
		esac
	fi
	echo ${LFL_SEEDS%% *}
}

plan() {
	local s loss path c f d link seed m first mtu
	for s in $SCENARIOS; do
		case $s in
		accuracy)
			echo "ping|accuracy|$LFL_LINK|direct|$CEILING_CC|1|up||rtt=$LFL_RTT"
			echo "udp|accuracy|--rate 50|direct|$CEILING_CC|1|up||rate:80M:50 Mbit/s less headers"
			echo "udp|accuracy|--delay 5 --loss 5 --seed $SEED|direct|$CEILING_CC|1|up||loss:40M:5 %"
			[ $ACC_FULL = 1 ] || continue
			for d in 0 10 $DELAY; do
				echo "ping|accuracy|--delay $d|direct|$CEILING_CC|1|up||rtt=$((2 * d))"
			done
			echo "udp|accuracy|--delay 5 --ge 1,10,0,50 --seed $SEED|direct|$CEILING_CC|1|up||Gilbert-Elliott loss:40M:4.545 % (bursts of 10 at 50 %)"
			echo "udp|accuracy|--delay 20 --jitter 5|direct|$CEILING_CC|1|up||jitter, no reorder:40M:0 out of order"
			echo "udp|accuracy|--delay 20 --jitter 5 --reorder|direct|$CEILING_CC|1|up||jitter with --reorder:40M:some out of order"
			;;
		ceiling)
			for link in veth none; do
				for f in $FLOWS; do
					for d in up down; do
						echo "iperf|ceiling|$link|direct|$CEILING_CC|$f|$d||$T_SHORT:$OMIT_SHORT"
					done
				done
			done
			;;
		lfl)
			# Path by path and, within a path, seed by seed: each
			# path is set up once per loss and the link changes
			# its loss pattern live between seeds (run_plan).  The
			# first seed runs every cell, the others only the
			# single-flow ones that lfl_seeds gives more.
			# tunsplit at its other TUN MTUs: single flow only.
			for loss in $LOSSES; do
			for path in direct openvpn v2ray kcptun tunsplit; do
				[ $path = kcptun ] && case " $KCP_LOSSES " in
				    *" $loss "*) ;; *) continue ;; esac
				for c in $(path_ccs $path "$CCS"); do
				for mtu in $(path_mtus $path); do
				mtu=${mtu#-}
				first=1
				for seed in $(lfl_seeds $path $loss $c $mtu); do
					link="$LFL_BASE --seed $seed --loss $loss"
					plan_iperf lfl "$link" "$loss" $path $c 1 \
					    $T $OMIT $mtu
					[ $first = 1 ] || continue
					[ "${mtu:-$TS_MTU}" = "$TS_MTU" ] || continue
					first=0
					for f in $FLOWS; do
						[ "$f" = 1 ] && continue
						case " $MULTI_PATHS " in *" $path "*) ;; *) continue ;; esac
						case " $MULTI_LOSSES " in *" $loss "*) ;; *) continue ;; esac
						case " $MULTI_CCS " in *" $c "*) ;; *) continue ;; esac
						plan_iperf lfl "$link" "$loss" \
						    $path $c "$f" $T $OMIT
					done
				done
				done
				done
			done
			done
			;;
		hiloss)
			for path in direct openvpn v2ray kcptun tunsplit; do
				m=$SEEDS
				case " $HL_ONCE " in *" $path "*) m=${SEEDS%% *} ;; esac
				for seed in $m; do
					plan_iperf hiloss "$LFL_BASE --seed $seed --loss $HILOSS" \
					    $HILOSS $path "$HILOSS_CCS" 1 $HL_T $HL_OMIT
				done
			done
			;;
		ttfb)
			for path in direct openvpn v2ray kcptun tunsplit \
			    tunsplit-nopool; do
				has_path "${path%-nopool}" || continue
				echo "ttfb|ttfb|$LFL_LINK|$path|$TUNNEL_CC|1|up||"
			done
			;;
		rrlat)
			for loss in $RR_LOSSES; do
				for path in direct openvpn v2ray kcptun tunsplit; do
					has_path "$path" || continue
					for m in 0 $RR_RATE; do
						echo "rrlat|rrlat|$RR_LINK --loss $loss|$path|$TUNNEL_CC|1|up|$loss|$m"
					done
				done
			done
			;;
		scale)
			for path in direct openvpn v2ray kcptun tunsplit \
			    tunsplit-nopool; do
				has_path "${path%-nopool}" || continue
				if [ $path != tunsplit-nopool ]; then
					for mtu in $(path_mtus $path); do
					for d in up down; do
						echo "iperf|scale|veth|$path|$TUNNEL_CC|1|$d||$T_SHORT:$OMIT_SHORT|${mtu#-}"
						[ $path = tunsplit ] &&
						    has_path tunsplit-nooffload &&
						    echo "iperf|scale|veth|tunsplit-nooffload|$TUNNEL_CC|1|$d||$T_SHORT:$OMIT_SHORT|${mtu#-}"
					done
					done
				fi
				echo "connrate|scale|veth|$path|$TUNNEL_CC|1|up||"
				case $path in
				tunsplit)
				    echo "idle|scale|veth|$path|$TUNNEL_CC|1|up||$IDLE" ;;
				openvpn|v2ray|kcptun)
				    echo "idle|scale|veth|$path|$TUNNEL_CC|1|up||$IDLE_OTHER" ;;
				esac
			done
			;;
		short)
			# Issue 18: new connections and a burst on the plain
			# veth and through linkem without impairment, a new
			# connection's first byte at the lfl
			# RTT, idle flows with and without reuse.  Path by
			# path within a link, so each is set up once.
			for path in $SHORT_PATHS; do
				has_short_path "$path" || continue
				# The idle flows before the burst: the burst's
				# 500 connections go back to a reusing pool
				# and would carry the first idle flows.
				echo "connrate|short|veth|$path|$TUNNEL_CC|1|up||"
				case $path in tunsplit|tunsplit-noreuse)
				    echo "idle|short|veth|$path|$TUNNEL_CC|1|up||$SHORT_IDLE" ;;
				esac
				echo "burst|short|veth|$path|$TUNNEL_CC|1|up||"
			done
			for path in $SHORT_PATHS; do
				has_short_path "$path" || continue
				echo "connrate|short|none|$path|$TUNNEL_CC|1|up||"
				echo "burst|short|none|$path|$TUNNEL_CC|1|up||"
			done
			for path in $SHORT_PATHS; do
				has_short_path "$path" || continue
				echo "ttfb|short|$LFL_LINK|$path|$TUNNEL_CC|1|up||"
			done
			;;
		cworkers)
			# Issue 19: the client's worker processes, 1 against
			# 2, over the plain veth, each 1-worker cell next to
			# its 2-worker cell, which goes first in even rounds
			# (the path restarts between them; both run the
			# same binary and server).
			m=$CW_PATHS
			[ $((PLAN_ROUND % 2)) = 0 ] &&
			    m=$(echo $CW_PATHS | tr ' ' '\n' | tac | tr '\n' ' ')
			for mtu in $TUN_MTUS; do
			for f in $CW_FLOWS; do
			for d in down up; do
			for path in $m; do
				has_short_path "$path" || continue
				echo "iperf|cworkers|veth|$path|$TUNNEL_CC|$f|$d||$T_SHORT:$OMIT_SHORT|$mtu"
			done
			done
			done
			done
			;;
		hev)
			# Issue 19's table: the plain veth, tunsplit native
			# (TLS) against its SOCKS5 outbound to danted (hev's
			# job without encryption) and the veth itself, cell
			# by cell, the paths' order turning each round.  Both
			# tunsplit paths run the client's default workers.
			m=$HEV_PATHS
			for c in $(seq $(( (PLAN_ROUND - 1) % 3 ))); do
				m="${m#* } ${m%% *}"
			done
			for mtu in $TUN_MTUS; do
			for c in 1:up 1:down 4:down; do
				f=${c%:*} d=${c#*:}
				[ "$f" = 4 ] && [ "$mtu" != "$TS_MTU" ] &&
				    continue
				for path in $m; do
					has_short_path "$path" || continue
					echo "iperf|hev|veth|$path|$TUNNEL_CC|$f|$d||$T_SHORT:$OMIT_SHORT|$mtu"
				done
			done
			done
			;;
		*)	die "unknown scenario $s" ;;
		esac
	done
}

# The plan ROUNDS times over, only the lines of KINDS; round k moves every
# loss seed on by k-1 and is the line's 11th field (PLAN_ROUND while plan
# runs).
plan_all() {
	local k
	for k in $(seq "$ROUNDS"); do
		PLAN_ROUND=$k
		plan | awk -F'|' -v OFS='|' -v k="$k" -v kinds=" $KINDS " '
		kinds != "  " && index(kinds, " " $1 " ") == 0 { next }
		{
			n = split($3, a, " ")
			for (i = 1; i < n; i++)
				if (a[i] == "--seed")
					a[i + 1] += k - 1
			if (n > 0) {
				l = a[1]
				for (i = 2; i <= n; i++)
					l = l " " a[i]
				$3 = l
			}
			for (i = NF + 1; i <= 10; i++)
				$i = ""
			print $0, k
		}'
	done
}

# ---- runner -----------------------------------------------------------------

CUR_LINK=
CUR_PATH=
CUR_MTU=
CUR_CC=
FAILED_PATHS=

cleanup() {
	trap - EXIT INT TERM
	[ -n "$CUR_PATH" ] && path_down "$CUR_PATH"
	pid_stop "$WORK/hold.pid"
	"$TESTBED" down
	sysctl -qw net.ipv4.tcp_allowed_congestion_control="$CC_SAVED"
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'say "interrupted"; exit 130' INT TERM

link_up() {
	if [ "$1" = veth ]; then
		"$TESTBED" up --veth
	elif [ "$1" = none ]; then
		"$TESTBED" up
	else
		# shellcheck disable=SC2086
		"$TESTBED" up -- $1 $RTPRIO
	fi
}

# Link lines (plan) that differ only in --loss, --seed and --ge: linkem
# can go from one to the other live (testbed.sh reload).
link_sans_loss() {
	echo " $1 " | sed -e 's/ --seed [^ ]*//; s/ --loss [^ ]*//; s/ --ge [^ ]*//'
}
link_live() {	# OLD NEW
	case "$1" in ""|veth|none) return 1 ;; esac
	case "$2" in veth|none) return 1 ;; esac
	[ "$(link_sans_loss "$1")" = "$(link_sans_loss "$2")" ]
}
link_loss() {	# LINK -> its loss options, defaults spelled out
	local loss=0 seed=1 ge=off
	set -- $1
	while [ $# -gt 1 ]; do
		case $1 in
		--loss)	loss=$2 ;;
		--seed)	seed=$2 ;;
		--ge)	ge=$2 ;;
		esac
		shift
	done
	echo "--loss $loss --seed $seed --ge $ge"
}

json_str() { printf '"%s"' "$(printf '%s' "$1" | sed 's/["\\]/\\&/g')"; }

# The MTU of the interface the client namespace routes the target through:
# the link's (lkc) for the direct path and the L4 proxies, the tunnel's
# device for OpenVPN and tunsplit.  The app's TCP announces it less 40.
app_mtu() {
	local dev m
	dev=$(nsx $NS_C ip -o route get $TARGET 2>/dev/null |
	    sed -n 's/.* dev \([^ ]*\).*/\1/p')
	m=$(nsx $NS_C ip -o link show dev "${dev:-none}" 2>/dev/null |
	    sed -n 's/.* mtu \([0-9]*\).*/\1/p')
	echo "${m:-null}"
}

run_plan() {
	local total i=0 start now eta kind scen link path cc flows dir loss
	local extra meta check bw expect seed sd cur_scen="" lname mtu round
	local md cmtu
	plan_all >"$WORK/plan.txt"
	total=$(wc -l <"$WORK/plan.txt")
	start=$(date +%s)
	say "bench: $total measurements; results go to $OUT"
	while IFS='|' read -r kind scen link path cc flows dir loss extra mtu \
	    round <&3; do
		i=$((i + 1))
		now=$(date +%s)
		if [ "$scen" != "$cur_scen" ]; then
			say "== $scen ($(grep -c "^[^|]*|$scen|" "$WORK/plan.txt") measurements, $((now - start)) s into the run)"
			cur_scen=$scen
		fi
		if [ "$link" != "$CUR_LINK" ] && link_live "$CUR_LINK" "$link"
		then
			# Only the loss pattern changes: linkem takes it live.
			# Tunnels with long-lived outer connections start
			# anew, so every cell starts its outer congestion
			# control cold, as after a restart of linkem.
			"$TESTBED" reload -- $(link_loss "$link") 2>/dev/null ||
			    die "testbed reload failed"
			CUR_LINK=$link
			case " $RESEED_RESTART " in *" $CUR_PATH "*)
				path_down "$CUR_PATH"; CUR_PATH= ;;
			esac
		elif [ "$link" != "$CUR_LINK" ]; then
			[ -n "$CUR_PATH" ] && path_down "$CUR_PATH"
			CUR_PATH=
			link_up "$link" 2>/dev/null || die "testbed up failed"
			CUR_LINK=$link
			CUR_CC=		# namespaces may be new: set it again
		fi
		# tunsplit's TUN MTU is part of the path: another one
		# restarts it.  Another path keeps the plan's as the cell's
		# (hev: the direct cell next to the tunsplit cells at it).
		cmtu=${mtu:-null}
		case $path in
		tunsplit*) mtu=${mtu:-$TS_MTU} ;;
		*)	mtu= ;;
		esac
		if [ "$path" != "$CUR_PATH" ] || [ "$mtu" != "$CUR_MTU" ]; then
			[ -n "$CUR_PATH" ] && path_down "$CUR_PATH"
			CUR_PATH=
			case " $FAILED_PATHS " in *" $path${mtu:+@$mtu} "*)
				continue ;;
			esac
			if ! path_up "$path" "$mtu"; then
				say "[$i/$total] $path${mtu:+ (TUN MTU $mtu)}: could not be set up; its results read n/a"
				path_down "$path"
				FAILED_PATHS="$FAILED_PATHS $path${mtu:+@$mtu}"
				continue
			fi
			CUR_PATH=$path
			CUR_MTU=$mtu
		fi
		if [ "$cc" != "$CUR_CC" ]; then
			cc_set "$cc"
			CUR_CC=$cc
		fi
		now=$(date +%s)
		if [ $i -gt 1 ]; then
			eta=$(( (now - start) * (total - i + 1) / (i - 1) ))
		else
			eta="?"
		fi
		case $link in
		veth)	lname=veth ;;
		*)	lname=linkem ;;
		esac
		case $link in
		*--seed*) seed=$(echo "$link" | sed 's/.*--seed \([0-9]*\).*/\1/') ;;
		*)	seed=null ;;
		esac
		sd=; [ "$seed" = null ] || sd="seed=$seed "
		md=; [ -z "$mtu" ] || md="mtu=$mtu "
		meta="{\"kind\": \"$kind\", \"scenario\": \"$scen\", \"link\": \"$lname\","
		meta="$meta \"link_args\": $(json_str "${link/none/}"),"
		meta="$meta \"path\": \"$path\", \"cc\": \"$cc\", \"flows\": $flows,"
		meta="$meta \"dir\": \"$dir\", \"loss\": ${loss:-null}, \"seed\": $seed,"
		meta="$meta \"mtu\": $(app_mtu), \"round\": ${round:-1},"
		[ "$scen" = hev ] && meta="$meta \"cell_mtu\": $cmtu,"
		meta="$meta \"load1\": $(cut -d' ' -f1 /proc/loadavg),"
		meta="$meta \"t_run_s\": $((now - start))"
		printf '[%d/%d, %ds, eta %ss] %s %s %s %s%s%sflows=%s %s: ' \
		    $i $total $((now - start)) "$eta" "$scen" "$path" "$cc" \
		    "${loss:+loss=$loss% }" "$sd" "$md" \
		    "$flows" "$dir" >&2
		case $kind in
		iperf)	m_iperf "$meta" "$flows" "$dir" "${extra%:*}" \
			    "${extra#*:}" >&2 ;;
		ttfb)	m_ttfb "$meta" >&2 ;;
		rrlat)	m_rrlat "$meta, \"rr_rate\": $extra, \"rtt_ms\": $RR_RTT" \
			    "$extra" >&2 ;;
		connrate) m_connrate "$meta" >&2 ;;
		burst)	m_burst "$meta" >&2 ;;
		idle)	m_idle "$meta" "$extra" >&2 ;;
		ping)	m_ping "$meta, \"rtt_configured_ms\": ${extra#rtt=}" >&2 ;;
		udp)	check=${extra%%:*}; bw=${extra#*:}; expect=${bw#*:}
			bw=${bw%%:*}
			meta="$meta, \"check\": $(json_str "$check"),"
			meta="$meta \"expect\": $(json_str "$expect")"
			m_udp "$meta" "$bw" >&2 ;;
		esac
	done 3<"$WORK/plan.txt"
}

version_of() { "$@" 2>/dev/null | head -n1 | cut -c1-60; }

meta_write() {
	cat <<EOF
{"date": "$(date -u +%Y-%m-%dT%H:%M:%SZ)", "kernel": "$(uname -r)",
 "cpu": $(json_str "$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n1)"),
 "cpus": $(nproc), "iperf3": $(json_str "$(version_of iperf3 --version)"),
 "openvpn": $(json_str "$(version_of openvpn --version | cut -d' ' -f1-2)"),
 "v2ray": $(json_str "$(version_of v2ray -version | cut -d' ' -f1-2)"),
 "kcptun": $(json_str "$(dpkg-query -W -f '${Version}' kcptun 2>/dev/null)"),
 "tunsplit": $(json_str "${TSB_TUNSPLIT_REV:-$(cd "$HERE" &&
    git describe --always --dirty 2>/dev/null)}"),
 "command": $(json_str "bench/run.sh $ARGS"), "linkem": $(json_str "${LINKEM:-testbed default}"),
 "rate_mbit": $RATE, "rtt_ms": $LFL_RTT, "queue_ms": $QUEUE, "seed": $SEED,
 "hiloss_pct": $HILOSS, "hiloss_seeds": "$SEEDS", "lfl_seeds": "$LFL_SEEDS",
 "lfl_seed_min_loss": $LFL_SEED_MIN, "lfl_seed_paths": "$LFL_SEED_PATHS",
 "lfl_seed_ccs": "$LFL_SEED_CCS", "lfl_seeds_hi": "$LFL_SEEDS_HI",
 "lfl_seed_hi_min_loss": $LFL_SEED_HI_MIN,
 "lfl_seed_hi_paths": "$LFL_SEED_HI_PATHS",
 "rr_rtt_ms": $RR_RTT, "rr_seconds": $RR_T, "rr_rate": $RR_RATE,
 "conn_count": $CONN_N, "burst_conns": $BURST_N,
 "burst_bytes": $BURST_BYTES, "short_idle_flows": "$SHORT_IDLE",
 "tunsplit_workers": $(json_str "${BENCH_SERVER_WORKERS:-0}"),
 "tunsplit_client_workers": $(json_str "${BENCH_CLIENT_WORKERS:-default}"),
 "tunsplit_reuse": $(json_str "${TSB_REUSE:-default}"), "nproc": $(nproc),
 "idle_flows": "$IDLE",
 "idle_flows_others": "$IDLE_OTHER",
 "iperf_seconds": $T, "iperf_omit": $OMIT, "short_seconds": $T_SHORT,
 "hiloss_seconds": $HL_T, "hiloss_omit": $HL_OMIT, "kcptun_lfl_losses": "$KCP_LOSSES",
 "hiloss_first_seed_only": "$HL_ONCE",
 "multi_flow_losses": "$MULTI_LOSSES",
 "ceiling_cc": "$CEILING_CC", "tunnel_cc": "$TUNNEL_CC",
 "tunsplit_mtu": $TS_MTU, "tunsplit_mtus": "$TUN_MTUS",
 "tunsplit_mtus_all_seeds": $MTU_SEEDS_ALL,
 "tunsplit_pool": ${TSB_POOL:-6}, "rounds": $ROUNDS, "kinds": "$KINDS",
 "ttfb_samples": $SAMPLES, "linkem_rtprio": $(json_str "$RTPRIO"),
 "duration_s": $(( $(date +%s) - RUN_START )),
 "loadavg_start": $(json_str "$LOAD_START"),
 "loadavg_end": $(json_str "$(cut -d' ' -f1-3 /proc/loadavg)")}
EOF
}

# testbed.sh finds or builds rrlat the same way as linkem; conns too:
# bench/NAME when built there, else built from bench/NAME.c.
bench_tool() {	# NAME -> its binary
	if [ -x "$HERE/$1" ]; then
		echo "$HERE/$1"
	else
		${CC:-cc} -O2 -Wall -o "$TSB_RUN-$1" "$HERE/$1.c" >&2 ||
		    return 1
		echo "$TSB_RUN-$1"
	fi
}
[ -n "${RRLAT:-}" ] || RRLAT=$(bench_tool rrlat) || die "cannot build rrlat"
[ -n "${CONNS:-}" ] || CONNS=$(bench_tool conns) || die "cannot build conns"
export RRLAT LINKEM

if [ $DRY = 1 ]; then
	trap - EXIT INT TERM
	rm -rf "$WORK"
	plan_all
	exit 0
fi
cc_prepare
"$TESTBED" down
# Other work on the machine shows up as emulator lateness and CPU-starved
# endpoints: say so up front, and keep the load in the results.
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
RUN_START=$(date +%s)
case $LOAD_START in
0.[0-4]*) ;;
*) say "bench: warning: load average $LOAD_START before the run" ;;
esac
run_plan
if [ -n "$CUR_PATH" ]; then path_down "$CUR_PATH"; CUR_PATH=; fi
meta_write >"$WORK/meta.json"
echo
python3 "$REPORT" final "$RESULTS" "$WORK/meta.json" "$OUT" ||
    die "report failed"
echo
echo "results: $OUT (and one file per scenario beside it)"
