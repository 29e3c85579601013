#!/bin/bash
# The target closes its side first while the app's upload still waits in
# the client: the target reads nothing, after 1 s sends a short reply and
# its FIN, then reads everything.  With socket buffers capped at 64 KiB in
# the namespaces, uploads of 192..704 KiB end -- for some of the sizes --
# with both FINs through the client's lwIP while upload bytes still sit in
# the flow's queue (lwIP then closes its pcb on the app's last ACK).  Every
# byte of every upload must reach the target, followed by a clean end (no
# reset), and the app gets the reply intact; v4 and v6.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../soaklib.sh"
ts_init e2e_early_close

ts_topology_up
for ns in "$NS_C" "$NS_S" "$NS_T"; do
	ts_sysctl "$ns" net/ipv4/tcp_rmem "4096 16384 65536"
	ts_sysctl "$ns" net/ipv4/tcp_wmem "4096 16384 65536"
done
ts_make_pki
ts_write_configs
ts_start_soak_target
ts_start_server
ts_start_client

out=$TS_TMP/early.log
TS_APP_TIMEOUT=60
n=0 ok=0
for host in "$TS_T_ADDR4" "$TS_T_ADDR6"; do
	for kb in $(seq 192 64 704); do
		ts_soak_app early --host "$host" --port "$TS_SOAK_PORT" \
		    --bytes $((kb << 10)) --delay 1 --rate 0 >>"$out" 2>&1 ||
		    ts_fail "$host, $kb KiB: $(tail -n 1 "$out")"
		sent=$(tail -n 1 "$out" | sed -n 's/.*sha256 \([0-9a-f]*\) and FIN.*/\1/p')
		n=$((n + 1))
		for i in $(seq 100); do
			[ "$(grep -c 'EARLY' "$TS_TMP/soak-target.log")" -ge $n ] && break
			sleep 0.1
		done
		got=$(grep 'EARLY' "$TS_TMP/soak-target.log" | tail -n 1)
		case $got in
		*"got $((kb << 10)) bytes sha256 $sent, eof") ok=$((ok + 1)) ;;
		*) ts_fail "$host, $kb KiB: the upload did not arrive whole and cleanly closed: ${got#soak-target: }" ;;
		esac
	done
	ts_log "$host: $(tail -n 1 "$out")"
done
ts_check_alive
ts_pass "$ok uploads of 192..704 KiB finished whole after the target's early FIN (v4 and v6)"
