#!/bin/bash
# The benchmark: builds the testbed (bench/testbed.sh), runs the scenarios,
# prints tables and writes bench/results/<time>.json.  Root only.
#
# usage: run.sh [--quick] [--scenarios LIST] [--paths LIST] [--loss LIST]
#               [--cc LIST] [--flows LIST] [--time S] [--omit S]
#               [--samples N] [--seed N] [--out FILE] [--no-rtprio]
#
#   scenarios  accuracy ceiling lfl ttfb   (default: all)
#   paths      direct openvpn tunsplit     (default: all; tunsplit needs
#                                           TUNSPLIT=binary and is a stub)
#   loss       percent list for lfl        (default: 0 0.3 1 5)
#   cc         direct path's CCs           (default: cubic bbr; tunnels
#                                           always run bbr)
#   flows      iperf3 -P list              (default: 1)
#   time/omit  iperf3 -t / -O seconds      (default: 10 / 2)
#   samples    new connections for ttfb    (default: 20)
#   --no-rtprio  run linkem at normal priority (default: SCHED_FIFO 10 on
#              impaired links, so that other load on the machine does not
#              make it late; the unimpaired ceiling always runs normally)
#
# Conditions of the long fat lossy path (lfl): 100 Mbit/s bottleneck each
# way, 70 ms one-way delay (RTT 140 ms), 100 ms drop-tail queue, random loss
# applied after the queue, both directions.  Override with BENCH_RATE,
# BENCH_DELAY, BENCH_QUEUE.
#
# Environment: LINKEM (linkem binary), TUNSPLIT (tunsplit binary, later).

set -u

ARGS="$*"
HERE=$(cd "$(dirname "$0")" && pwd)
TESTBED=$HERE/testbed.sh
REPORT=$HERE/report.py
export TSB_RUN=${TSB_RUN:-/run/tsb}
NS_C=tsb-client
NS_S=tsb-server
NS_T=tsb-target
TARGET=10.201.2.2

SCENARIOS="accuracy ceiling lfl ttfb"
PATHS="direct openvpn tunsplit"
LOSSES="0 0.3 1 5"
CCS="cubic bbr"
TUNNEL_CC=bbr
CEILING_CC=cubic
FLOWS=1
T=10
OMIT=2
SAMPLES=20
SEED=1
OUT=
RTPRIO="--rtprio 10"
RATE=${BENCH_RATE:-100}
DELAY=${BENCH_DELAY:-70}
QUEUE=${BENCH_QUEUE:-100}

die() { echo "run.sh: $*" >&2; exit 1; }
say() { echo "$*" >&2; }
nsx() { local ns=$1; shift; ip netns exec "$ns" "$@"; }

usage() { sed -n '4,21s/^# \{0,1\}//p' "$0" >&2; exit 2; }

while [ $# -gt 0 ]; do
	case $1 in
	--quick)	T=4; OMIT=1; LOSSES="0 1"; SAMPLES=10 ;;
	--scenarios)	SCENARIOS=$2; shift ;;
	--paths)	PATHS=$2; shift ;;
	--loss)		LOSSES=$2; shift ;;
	--cc)		CCS=$2; shift ;;
	--flows)	FLOWS=$2; shift ;;
	--time)		T=$2; shift ;;
	--omit)		OMIT=$2; shift ;;
	--samples)	SAMPLES=$2; shift ;;
	--seed)		SEED=$2; shift ;;
	--out)		OUT=$2; shift ;;
	--no-rtprio)	RTPRIO= ;;
	*)		usage ;;
	esac
	shift
done

[ "$(id -u)" = 0 ] || die "must run as root (namespaces, TUN)"
for tool in ip iperf3 curl socat nginx ping python3 sysctl; do
	command -v $tool >/dev/null || die "$tool is missing"
done
case " $PATHS " in *" openvpn "*)
	command -v openvpn >/dev/null ||
	    die "openvpn is missing (apt-get install openvpn, or --paths direct)"
esac

STAMP=$(date -u +%Y%m%d-%H%M%S)
mkdir -p "$HERE/results"
OUT=${OUT:-$HERE/results/$STAMP.json}
WORK=$(mktemp -d /tmp/tsb-bench.XXXXXX)
RESULTS=$WORK/results.jsonl
: >"$RESULTS"

# ---- congestion control ----------------------------------------------------
# A non-initial namespace may only pick algorithms the host allows; widen the
# host's list for the run and put it back afterwards.
CC_SAVED=$(sysctl -n net.ipv4.tcp_allowed_congestion_control)

cc_prepare() {
	local want="$CC_SAVED" c
	for c in $CCS $TUNNEL_CC $CEILING_CC; do
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
	pid=$(cat "$TSB_RUN/linkem.pid" 2>/dev/null) || return 1
	rm -f "$TSB_RUN/linkem.json"
	kill -USR1 "$pid" 2>/dev/null || return 1
	while [ ! -s "$TSB_RUN/linkem.json" ] && [ $i -lt 50 ]; do
		sleep 0.02; i=$((i + 1))
	done
	[ -s "$TSB_RUN/linkem.json" ] && cp "$TSB_RUN/linkem.json" "$1"
}

# ---- paths ----------------------------------------------------------------
# path_up PATH makes the target subnet reach the target through PATH;
# path_down undoes it.  The direct path is the testbed's own routing.

OVPN=$WORK/ovpn

ovpn_up() {
	local common i=0
	mkdir -p "$OVPN"
	[ -f "$OVPN/key" ] || openvpn --genkey secret "$OVPN/key" 2>/dev/null ||
	    return 1
	# p2p static-key mode over TCP; TCP_NODELAY on the outer socket, or
	# Nagle adds most of an RTT to small exchanges.
	common="--dev tun-ovpn --dev-type tun --cipher AES-256-CBC --auth SHA256
	    --socket-flags TCP_NODELAY --verb 3 --ping 10 --ping-restart 60"
	nsx $NS_S openvpn $common --proto tcp-server --local 10.201.1.2 \
	    --lport 1194 --ifconfig 10.201.9.2 10.201.9.1 \
	    --secret "$OVPN/key" 0 --daemon tsb-ovpn-s \
	    --writepid "$OVPN/s.pid" --log "$OVPN/s.log" >>"$OVPN/s.log" 2>&1 ||
	    return 1
	nsx $NS_C openvpn $common --proto tcp-client --remote 10.201.1.2 1194 \
	    --nobind --ifconfig 10.201.9.1 10.201.9.2 \
	    --secret "$OVPN/key" 1 --daemon tsb-ovpn-c \
	    --writepid "$OVPN/c.pid" --log "$OVPN/c.log" >>"$OVPN/c.log" 2>&1 ||
	    return 1
	while ! grep -q "Initialization Sequence Completed" "$OVPN/c.log" \
	    2>/dev/null; do
		[ $i -lt 100 ] || { tail -5 "$OVPN/c.log" >&2; return 1; }
		sleep 0.1; i=$((i + 1))
	done
	nsx $NS_C ip route replace 10.201.2.0/24 via 10.201.9.2 dev tun-ovpn
	# Fail loudly rather than measure the direct path by mistake.
	nsx $NS_C ip route get $TARGET | grep -q "dev tun-ovpn" ||
	    { say "openvpn: route not through the tunnel"; return 1; }
	nsx $NS_C ping -q -c 1 -W 5 $TARGET >/dev/null
}

ovpn_down() {
	local f pid i
	for f in c s; do
		pid=$(cat "$OVPN/$f.pid" 2>/dev/null) || continue
		kill -TERM "$pid" 2>/dev/null
		i=0
		while kill -0 "$pid" 2>/dev/null && [ $i -lt 50 ]; do
			sleep 0.1; i=$((i + 1))
		done
		kill -KILL "$pid" 2>/dev/null
		rm -f "$OVPN/$f.pid"
	done
	nsx $NS_C ip route replace 10.201.2.0/24 via 10.201.1.2 dev lkc \
	    2>/dev/null
	return 0
}

# The tunsplit columns: a throwaway CA and server certificate, a server in
# $NS_S listening on 10.201.1.2 (egress allowed to the target subnet), a
# client in $NS_C whose TUN carries 10.201.2.0/24 and fd00:201:2::/64 while
# 10.201.1.2 stays on lkc.  "tunsplit" keeps a warm pool (TSB_POOL, default
# 6: sequential new connections 1 RTT apart drain a smaller pool faster
# than a replacement handshake refills it); "tunsplit-nopool" has none.
TS_DIR=$WORK/tunsplit
TS_MTU=${TSB_MTU:-9000}

ts_pki() {
	[ -f "$TS_DIR/server.pem" ] && return 0
	mkdir -p "$TS_DIR" || return 1
	(cd "$TS_DIR" &&
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -keyout ca.key -out ca.pem -days 2 -subj /CN=tsb-ca &&
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -keyout server.key -out server.csr -subj /CN=tunsplit.bench &&
	printf 'subjectAltName=DNS:tunsplit.bench\n' >ext &&
	openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key \
	    -CAcreateserial -days 2 -extfile ext -out server.pem) \
	    >"$TS_DIR/pki.log" 2>&1
}

tunsplit_up() {
	local pool=$1 key i
	if [ -z "${TUNSPLIT:-}" ] || [ ! -x "${TUNSPLIT:-}" ]; then
		say "tunsplit: no binary (set TUNSPLIT=path)"
		return 1
	fi
	ts_pki || { say "tunsplit: certificates failed"; return 1; }
	key=$("$TUNSPLIT" genkey) || return 1
	cat >"$TS_DIR/server.yaml" <<EOF
log: {level: warn}
control: $TS_DIR/server.sock
server:
  listen: ["10.201.1.2:8443"]
  cert: $TS_DIR/server.pem
  cert_key: $TS_DIR/server.key
  users: [{name: bench, key: "$key"}]
  congestion: $TUNNEL_CC
  egress: {allow: [10.201.2.0/24, "fd00:201:2::/64"]}
EOF
	cat >"$TS_DIR/client.yaml" <<EOF
log: {level: warn}
control: $TS_DIR/client.sock
tun: {name: tsb-ts, mtu: $TS_MTU, address: [198.18.0.1/15, "fdfe:dcba:9876::1/64"]}
client:
  server: "10.201.1.2:8443"
  sni: tunsplit.bench
  ca: $TS_DIR/ca.pem
  key: "$key"
  congestion: $TUNNEL_CC
  pool: $pool
EOF
	chmod 600 "$TS_DIR"/*.yaml
	# Not through nsx (a function: $! would be a subshell, and killing
	# it would leave the daemon running); ip netns exec execs.
	ip netns exec $NS_S "$TUNSPLIT" run -c "$TS_DIR/server.yaml" \
	    >>"$TS_DIR/server.log" 2>&1 </dev/null &
	echo $! >"$TS_DIR/server.pid"
	ip netns exec $NS_C "$TUNSPLIT" run -c "$TS_DIR/client.yaml" \
	    >>"$TS_DIR/client.log" 2>&1 </dev/null &
	echo $! >"$TS_DIR/client.pid"
	i=0
	until nsx $NS_C ip link show tsb-ts 2>/dev/null | grep -q UP; do
		[ $i -lt 50 ] || { tail -5 "$TS_DIR/client.log" >&2; return 1; }
		sleep 0.1; i=$((i + 1))
	done
	nsx $NS_C ip route replace 10.201.2.0/24 dev tsb-ts
	nsx $NS_C ip -6 route replace fd00:201:2::/64 dev tsb-ts 2>/dev/null
	nsx $NS_C ip route get $TARGET | grep -q "dev tsb-ts" ||
	    { say "tunsplit: route not through the tunnel"; return 1; }
	# Let the pool fill before anything is measured.
	sleep 2
	nsx $NS_C curl -s -o /dev/null -m 10 http://$TARGET/1k
}

tunsplit_down() {
	local f pid i
	for f in client server; do
		pid=$(cat "$TS_DIR/$f.pid" 2>/dev/null) || continue
		kill -TERM "$pid" 2>/dev/null
		i=0
		while kill -0 "$pid" 2>/dev/null && [ $i -lt 80 ]; do
			sleep 0.1; i=$((i + 1))
		done
		kill -KILL "$pid" 2>/dev/null
		rm -f "$TS_DIR/$f.pid"
	done
	# The TUN (and its routes) go with the client; wait until it has.
	i=0
	while nsx $NS_C ip link show tsb-ts >/dev/null 2>&1 && [ $i -lt 50 ]; do
		sleep 0.1; i=$((i + 1))
	done
	nsx $NS_C ip route replace 10.201.2.0/24 via 10.201.1.2 dev lkc \
	    2>/dev/null
	return 0
}

path_up() {
	case $1 in
	direct)		return 0 ;;
	openvpn)	ovpn_up ;;
	tunsplit)	tunsplit_up "${TSB_POOL:-6}" ;;
	tunsplit-nopool) tunsplit_up 0 ;;
	*)		die "unknown path $1" ;;
	esac
}

path_down() {
	case $1 in
	openvpn)	ovpn_down ;;
	tunsplit|tunsplit-nopool) tunsplit_down ;;
	esac
}

# ---- measurements -----------------------------------------------------------
# Each appends one JSON line to $RESULTS and echoes its summary.

record() {
	local kind=$1 meta=$2; shift 2
	python3 "$REPORT" "$kind" "$meta" "$@" >>"$RESULTS" ||
	    { echo "report.py failed"; return; }
	tail -n1 "$RESULTS" | python3 -c \
	    'import json,sys; print(json.load(sys.stdin)["value"])'
}

m_iperf() {
	local meta=$1 flows=$2 dir=$3 rev=
	[ "$dir" = down ] && rev=-R
	linkem_period "$WORK/le0.json"
	rm -f "$WORK/le.json"
	# --foreground keeps iperf3 in our process group, so ^C reaches it.
	timeout --foreground $((T + OMIT + 40)) ip netns exec $NS_C iperf3 -c $TARGET -J \
	    -t "$T" -O "$OMIT" -P "$flows" $rev --connect-timeout 10000 \
	    >"$WORK/iperf.json" 2>"$WORK/iperf.err" </dev/null
	linkem_period "$WORK/le.json"
	record iperf "$meta" "$WORK/iperf.json" "$WORK/le.json"
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
	record ttfb "$meta" "$WORK/ttfb.txt" "$WORK/le.json"
}

m_ping() {
	local meta=$1
	linkem_period "$WORK/le0.json"
	rm -f "$WORK/le.json"
	nsx $NS_C ping -q -c 200 -i 0.01 -W 5 $TARGET >"$WORK/ping.txt" 2>&1
	linkem_period "$WORK/le.json"
	record ping "$meta" "$WORK/ping.txt" "$WORK/le.json"
}

m_udp() {
	local meta=$1 bw=$2
	linkem_period "$WORK/le0.json"
	rm -f "$WORK/le.json"
	timeout --foreground 60 ip netns exec $NS_C iperf3 -c $TARGET -J -u -b "$bw" \
	    -l 1000 -t 4 --get-server-output >"$WORK/udp.json" 2>&1 </dev/null
	linkem_period "$WORK/le.json"
	record udp "$meta" "$WORK/udp.json" "$WORK/le.json"
}

# ---- the plan ---------------------------------------------------------------
# One line per measurement: kind|scenario|link|path|cc|flows|dir|loss|extra
# The runner changes the link and the path only when a line asks for a
# different one, so the plan's order is also its cost.

LFL_LINK="--delay $DELAY --rate $RATE --queue $QUEUE --seed $SEED"
LFL_RTT=$(awk "BEGIN { print 2 * $DELAY }")

plan() {
	local s loss path cc c f d link
	for s in $SCENARIOS; do
		case $s in
		accuracy)
			for d in 0 10 $DELAY; do
				echo "ping|accuracy|--delay $d|direct|$CEILING_CC|1|up||rtt=$((2 * d))"
			done
			echo "ping|accuracy|$LFL_LINK|direct|$CEILING_CC|1|up||rtt=$LFL_RTT"
			echo "udp|accuracy|--rate 50|direct|$CEILING_CC|1|up||rate:80M:50 Mbit/s less headers"
			echo "udp|accuracy|--delay 5 --loss 5 --seed $SEED|direct|$CEILING_CC|1|up||loss:40M:5 %"
			echo "udp|accuracy|--delay 5 --ge 1,10,0,50 --seed $SEED|direct|$CEILING_CC|1|up||Gilbert-Elliott loss:40M:4.545 % (bursts of 10 at 50 %)"
			echo "udp|accuracy|--delay 20 --jitter 5|direct|$CEILING_CC|1|up||jitter, no reorder:40M:0 out of order"
			echo "udp|accuracy|--delay 20 --jitter 5 --reorder|direct|$CEILING_CC|1|up||jitter with --reorder:40M:some out of order"
			;;
		ceiling)
			for link in veth ""; do
				for f in $FLOWS; do
					for d in up down; do
						echo "iperf|ceiling|${link:-none}|direct|$CEILING_CC|$f|$d||"
					done
				done
			done
			;;
		lfl)
			for loss in $LOSSES; do
				for path in $PATHS; do
					if [ $path = direct ]; then cc=$CCS; else cc=$TUNNEL_CC; fi
					for c in $cc; do
						for f in $FLOWS; do
							for d in up down; do
								echo "iperf|lfl|$LFL_LINK --loss $loss|$path|$c|$f|$d|$loss|"
							done
						done
					done
				done
			done
			;;
		ttfb)
			for path in $PATHS; do
				echo "ttfb|ttfb|$LFL_LINK|$path|$TUNNEL_CC|1|up||"
				# The pool's effect needs its own column.
				[ $path = tunsplit ] &&
				    echo "ttfb|ttfb|$LFL_LINK|tunsplit-nopool|$TUNNEL_CC|1|up||"
			done
			;;
		*)	die "unknown scenario $s" ;;
		esac
	done
}

# ---- runner -----------------------------------------------------------------

CUR_LINK=
CUR_PATH=
FAILED_PATHS=

cleanup() {
	trap - EXIT INT TERM
	[ -n "$CUR_PATH" ] && path_down "$CUR_PATH"
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

json_str() { printf '"%s"' "$(printf '%s' "$1" | sed 's/["\\]/\\&/g')"; }

run_plan() {
	local total i=0 start now eta kind scen link path cc flows dir loss extra
	local meta check bw expect
	total=$(plan | wc -l)
	start=$(date +%s)
	say "bench: $total measurements; results go to $OUT"
	while IFS='|' read -r kind scen link path cc flows dir loss extra <&3; do
		i=$((i + 1))
		if [ "$link" != "$CUR_LINK" ]; then
			[ -n "$CUR_PATH" ] && path_down "$CUR_PATH"
			CUR_PATH=
			link_up "$link" 2>/dev/null || die "testbed up failed"
			CUR_LINK=$link
		fi
		if [ "$path" != "$CUR_PATH" ]; then
			[ -n "$CUR_PATH" ] && path_down "$CUR_PATH"
			CUR_PATH=
			case " $FAILED_PATHS " in *" $path "*) continue ;; esac
			if ! path_up "$path"; then
				say "[$i/$total] $path: could not be set up; its results read n/a"
				path_down "$path"
				FAILED_PATHS="$FAILED_PATHS $path"
				continue
			fi
			CUR_PATH=$path
		fi
		cc_set "$cc"
		now=$(date +%s)
		eta=$(( (now - start) * (total - i + 1) / (i > 1 ? i - 1 : 1) ))
		[ $i -gt 1 ] || eta="?"
		meta="{\"kind\": \"$kind\", \"scenario\": \"$scen\", \"link\": \"$(
		    case $link in veth|none) echo "${link/none/linkem}" ;;
		    *) echo linkem ;; esac)\", \"link_args\": $(json_str "$link"),"
		meta="$meta \"path\": \"$path\", \"cc\": \"$cc\", \"flows\": $flows,"
		meta="$meta \"dir\": \"$dir\", \"loss\": ${loss:-null}"
		printf '[%d/%d, %ds, eta %ss] %s %s %s %s %s flows=%s %s: ' \
		    $i $total $((now - start)) "$eta" "$scen" "$path" "$cc" \
		    "${loss:+loss=$loss%}" "$link" "$flows" "$dir" >&2
		case $kind in
		iperf)	meta="$meta, \"seconds\": $T, \"omit\": $OMIT}"
			m_iperf "$meta" "$flows" "$dir" >&2 ;;
		ttfb)	meta="$meta, \"samples\": $SAMPLES}"
			m_ttfb "$meta" >&2 ;;
		ping)	meta="$meta, \"rtt_configured_ms\": ${extra#rtt=}}"
			m_ping "$meta" >&2 ;;
		udp)	check=${extra%%:*}; bw=${extra#*:}; expect=${bw#*:}
			bw=${bw%%:*}
			meta="$meta, \"check\": $(json_str "$check"),"
			meta="$meta \"expect\": $(json_str "$expect")}"
			m_udp "$meta" "$bw" >&2 ;;
		esac
	done 3< <(plan)
}

meta_write() {
	local linkem_bin
	linkem_bin=${LINKEM:-testbed default}
	cat <<EOF
{"date": "$(date -u +%Y-%m-%dT%H:%M:%SZ)", "kernel": "$(uname -r)",
 "cpu": $(json_str "$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n1)"),
 "cpus": $(nproc), "iperf3": $(json_str "$(iperf3 --version | head -n1)"),
 "openvpn": $(json_str "$(openvpn --version 2>/dev/null | head -n1 | cut -d' ' -f1-2)"),
 "command": $(json_str "bench/run.sh $ARGS"), "linkem": $(json_str "$linkem_bin"),
 "rate_mbit": $RATE, "rtt_ms": $LFL_RTT, "queue_ms": $QUEUE, "seed": $SEED,
 "iperf_seconds": $T, "iperf_omit": $OMIT, "ceiling_cc": "$CEILING_CC",
 "ttfb_samples": $SAMPLES, "linkem_rtprio": $(json_str "$RTPRIO"),
 "loadavg_start": $(json_str "$LOAD_START"),
 "loadavg_end": $(json_str "$(cut -d' ' -f1-3 /proc/loadavg)")}
EOF
}

cc_prepare
"$TESTBED" down
# Other work on the machine shows up as emulator lateness and CPU-starved
# endpoints: say so up front, and keep the load in the results.
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
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
echo "results: $OUT"
