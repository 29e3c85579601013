#!/bin/bash
# cpu_ab.sh ROUNDS SECONDS "MTUS" BIN...: CPU seconds per GiB of the
# tunsplit client and server over the plain veth (testbed.sh up --veth),
# one binary against another in the same run: for each round, each TUN
# MTU and each binary, the bench's tunsplit configuration (pool 6, BBR,
# offloads on, server workers 0) is started with that binary, then a
# single-flow iperf3 of SECONDS runs up and down (DIRS="up down"), and
# the daemons' utime + stime (/proc/PID/stat, their workers' too) over
# the bytes iperf3 received is printed per cell, with the server's and
# the client's user time alone and the 1-minute load; medians (min-max)
# per binary and cell.
# PERF=DIR also records each daemon with perf (PERFG: its call-graph
# option, default -g); STRACE=DIR counts their system calls.  As root;
# holds the testbed lock.  doc/PERFORMANCE.md cites its runs.
#   bench/cpu_ab.sh 6 10 9000 /tmp/tunsplit.main build/tunsplit
set -u
[ $# -ge 4 ] || { sed -n '2,/^set/{/^#/p}' "$0" >&2; exit 2; }
R=$1 T=$2 MTUS=$3; shift 3
BINS="$*"
HERE=$(cd "$(dirname "$0")" && pwd)
W=${TMPDIR:-/tmp}/tsb-cpu_ab; mkdir -p $W
OUT=$W/cells.txt
NS_C=tsb-client NS_S=tsb-server
TARGET=10.201.2.2 SERVER=10.201.1.2
CLK=$(getconf CLK_TCK)
exec 9>"${TSB_LOCK:-/run/tsb.lock}"
flock -w 900 9 || { echo "cpu_ab: testbed lock busy" >&2; exit 1; }
: >$OUT	# not before: a run waiting for the lock emptied the running one's
export TSB_LOCK_HELD=1
$HERE/testbed.sh up --veth >/dev/null 2>&1 || { echo "cpu_ab: testbed up failed" >&2; exit 1; }
trap '$HERE/testbed.sh down >/dev/null 2>&1; stopall' EXIT
PKI=$W/pki
if [ ! -f $PKI/server.pem ]; then mkdir -p $PKI; (cd $PKI &&
 openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=tsb-ca &&
 openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout server.key -out server.csr -subj /CN=tunsplit.bench &&
 printf 'subjectAltName=DNS:tunsplit.bench\n' >ext &&
 openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile ext -out server.pem) >/dev/null 2>&1; fi
. "$HERE/cpu.sh"	# a client with workers is several processes
ticks() { cpu_ticks "$1"; }
uticks() { cpu_ticks "$1" user; }
stopall() { for p in $W/c.pid $W/s.pid; do [ -f $p ] && kill $(cat $p) 2>/dev/null; done; sleep 0.5; rm -f $W/c.pid $W/s.pid; }
up() { # BIN MTU
 local bin=$1 mtu=$2 key i
 key=$($bin genkey)
 cat >$W/server.yaml <<E2
log: {level: warn}
server:
  listen: ["$SERVER:8443"]
  cert: $PKI/server.pem
  cert_key: $PKI/server.key
  users: [{name: bench, key: "$key"}]
  congestion: bbr
  max_conns: 30000
  max_conns_per_source: 0
  max_conns_per_user: 0
  workers: 0
  egress: {allow: [10.201.2.0/24, "fd00:201:2::/64"]}
E2
 cat >$W/client.yaml <<E2
log: {level: warn}
control: $W/client.sock
tun: {name: tsb-ts, mtu: $mtu, offload: on, address: [198.18.0.1/15, "fdfe:dcba:9876::1/64"]}
client:
  server: "$SERVER:8443"
  sni: tunsplit.bench
  ca: $PKI/ca.pem
  key: "$key"
  congestion: bbr
  max_flows: 30000
  pool: 6
E2
 chmod 600 $W/*.yaml
 ip netns exec $NS_S $bin run -c $W/server.yaml >>$W/s.log 2>&1 </dev/null & echo $! >$W/s.pid
 sleep 0.2
 ip netns exec $NS_C $bin run -c $W/client.yaml >>$W/c.log 2>&1 </dev/null & echo $! >$W/c.pid
 i=0; until ip netns exec $NS_C ip link show tsb-ts 2>/dev/null | grep -q UP; do sleep 0.1; i=$((i+1)); [ $i -lt 50 ] || return 1; done
 ip netns exec $NS_C ip route replace 10.201.2.0/24 dev tsb-ts
 ip netns exec $NS_C curl -s -o /dev/null -m 10 http://$TARGET/1k
 sleep 1
}
down() { stopall; i=0; while ip netns exec $NS_C ip link show tsb-ts >/dev/null 2>&1 && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
 ip netns exec $NS_C ip route replace 10.201.2.0/24 via $SERVER dev lkc 2>/dev/null; }
cell() { # BIN MTU DIR(up|down) ROUND
 local cp sp c0 s0 c1 s1 bytes rflag=""
 [ $3 = down ] && rflag=-R
 cp=$(cat $W/c.pid); sp=$(cat $W/s.pid)
 # the daemon pids are ip-netns-exec'd: exec replaces, so pid is the daemon
 c0=$(ticks $cp); s0=$(ticks $sp); su0=$(uticks $sp); cu0=$(uticks $cp)
 local pp=""
 if [ -n "${PERF:-}" ]; then
   perf record ${PERFG:--g} -o $PERF/c-$(basename $1)-$2-$3.data -p $cp -- sleep $((T)) >/dev/null 2>&1 & pp="$pp $!"
   perf record ${PERFG:--g} -o $PERF/s-$(basename $1)-$2-$3.data -p $sp -- sleep $((T)) >/dev/null 2>&1 & pp="$pp $!"
 fi
 local sp1="" sp2=""
 if [ -n "${STRACE:-}" ]; then
   strace -c -f -o $STRACE/c-$(basename $1)-$2-$3.txt -p $cp & sp1=$!
   strace -c -f -o $STRACE/s-$(basename $1)-$2-$3.txt -p $sp & sp2=$!
   sleep 0.3
 fi
 ip netns exec $NS_C iperf3 -c $TARGET -J -t $T $rflag >$W/iperf.json 2>/dev/null
 c1=$(ticks $cp); s1=$(ticks $sp); su1=$(uticks $sp); cu1=$(uticks $cp)
 [ -n "$sp1" ] && { kill -INT $sp1 $sp2; wait $sp1 $sp2; }
 [ -n "$pp" ] && wait $pp
 bytes=$(python3 -c "import json;d=json.load(open('$W/iperf.json'));e=d['end'];print(e['sum_received']['bytes'])")
 awk -v r=$4 -v b=$(basename $1) -v m=$2 -v d=$3 -v by=$bytes -v c=$((c1-c0)) -v s=$((s1-s0)) -v su=$((su1-su0)) -v cu=$((cu1-cu0)) -v t=$T -v k=$CLK -v l="$(cut -d' ' -f1 /proc/loadavg)" \
  'BEGIN{g=by/1073741824; printf "%s %s %s %s %.0f %.3f %.3f load %s user %.3f cuser %.3f\n", r,b,m,d, by*8/t/1e6, c/k/g, s/k/g, l, su/k/g, cu/k/g}'
}
echo "round bin mtu dir Mbit/s client_s/GiB server_s/GiB load L user server_user_s/GiB cuser client_user_s/GiB"
for r in $(seq 1 $R); do
 for m in $MTUS; do
  for b in $BINS; do
   up $b $m || { echo "up failed $b"; down; continue; }
   for d in ${DIRS:-up down}; do cell $b $m $d $r | tee -a $OUT; done
   down
  done
 done
done
python3 - "$OUT" <<'PY'
import sys, statistics, collections
d = collections.defaultdict(lambda: [[], [], [], [], []])
for l in open(sys.argv[1]):
    p = l.split()
    if len(p) < 11:
        continue
    v = d[(p[1], p[2], p[3])]
    for i, f in enumerate((p[4], p[5], p[6], p[10])):
        v[i].append(float(f))
    if len(p) >= 13:
        v[4].append(float(p[12]))
def m(a, fmt):
    return (fmt + " (" + fmt + "-" + fmt + ")") % (statistics.median(a), min(a), max(a))
print("bin mtu dir n Mbit/s client_s/GiB server_s/GiB server_user_s/GiB client_user_s/GiB (medians, min-max)")
for k in sorted(d, key=lambda k: (k[1], k[2])):
    v = d[k]
    print(k[0], k[1], k[2], len(v[0]), m(v[0], "%.0f"), m(v[1], "%.2f"),
        m(v[2], "%.2f"), m(v[3], "%.3f"),
        m(v[4], "%.3f") if v[4] else "-")
PY
