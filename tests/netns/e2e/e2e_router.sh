#!/bin/bash
# Router mode with a real tunnel: a LAN host behind the client namespace,
# which runs tunsplit with the shipped OpenWrt configuration
# (examples/openwrt/tunsplit/files/tunsplit.yaml) and forwards the LAN
# into the TUN through tunsplit-route (route: auto), as a router does.
#
#  tsl$$ (LAN host)      tsc$$ (router)            tss$$ (server)       tst$$ (target)
#  eth0 192.168.88.2 --- lan0 192.168.88.1
#       fd88::2/64            fd88::1/64
#  MTU 1500: MSS 1460    ip_forward = 1
#  default via the       tunsplit client: the
#  router                OpenWrt sample, route:  eth0 10.77.1.1 --- eth0 10.77.1.2
#                        auto (tunsplit-route,                     :443 tunsplit
#                        mark 0x7353), TUN                         eth1 198.51.100.1 --- 198.51.100.2
#                        MTU 1500, then 9000                            fd77:2::1        fd77:2::2
#
# The sample is used as shipped except for what names this machine: its
# key, CA file, control socket and TUN name (tunsplit-route keeps its state
# per name in /run/tunsplit); its server name vpn.example.org resolves to
# the server namespace through /etc/netns/tsc$$/hosts, which `ip netns
# exec` puts over /etc/hosts.  The second pass changes only the TUN MTU.
# The target network lies outside the sample's route_exclude (10/8,
# 172.16/12, 192.168/16), which keeps the LAN direct.
#
# Checked at TUN MTU 1500 and 9000 (TS_ROUTER_MTUS="9000" for one):
# `tunsplit check` accepts the file; without the tunnel the LAN host
# cannot reach the target (the server
# namespace does not forward); through it, downloads (64 MiB) and uploads
# (16 MiB) from the LAN host over IPv4 and IPv6 arrive intact (SHA-256 on
# both ends); the target sees the tunsplit server, never the LAN address;
# the client's `tunsplit status --json` counted every flow and byte, with
# no failed flow; with the TUN's offloads (on in the sample), downloads
# left as super-packets cut at the LAN host's MSS.  A LAN host's MSS
# (1460) below the TUN's is what an OpenWrt router's clients all have.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_router

SAMPLE=$TS_SRCDIR/examples/openwrt/tunsplit/files/tunsplit.yaml
[ -r "$SAMPLE" ] || ts_fail "$SAMPLE missing"
export PATH="$TS_SRCDIR/src/route:$PATH"
command -v tunsplit-route >/dev/null || ts_fail "tunsplit-route not found"

# Outside the sample's route_exclude.
TS_T_ADDR4=198.51.100.2 TS_S2_ADDR4=198.51.100.1 TS_T_NET4=198.51.100.0/24
TS_SNI=vpn.example.org TS_SERVER_PORT=443
TS_TUN=tsr$$
DOWN=$((64 << 20)) UP=$((16 << 20))
if [ -n "${TS_SANITIZED:-}" ]; then
	DOWN=$((32 << 20)) UP=$((16 << 20))
fi
HOSTS_DIR=/etc/netns/$NS_C
STATE=/run/tunsplit/$TS_TUN.state
trap 'rm -rf "$HOSTS_DIR"; rmdir /etc/netns 2>/dev/null; rm -f "$STATE"; ts_cleanup' EXIT

lan_app() {	# tools.py ARGS in the LAN namespace
	ip netns exec "$NS_L" timeout 300 "$TS_PY" -u "$TS_TOOLS" "$@"
}

# ---- topology ------------------------------------------------------------------
ts_topology_up
ts_lan_up

mkdir -p "$HOSTS_DIR" || ts_fail "mkdir $HOSTS_DIR"
printf '%s vpn.example.org\n%s vpn.example.org\n' "$TS_S_ADDR4" \
    "$TS_S_ADDR6" >"$HOSTS_DIR/hosts"

ts_make_pki
ts_write_configs	# the server's; the client's is the sample's
ts_start_target
ts_prove_no_forward "$TS_TARGET_PORT"
# The same from the LAN host, through the forwarding router.
ip -n "$NS_C" route add "$TS_T_NET4" via "$TS_S_ADDR4"
ip -n "$NS_C" -6 route add "$TS_T_NET6" via "$TS_S_ADDR6"
for h in "$TS_T_ADDR4" "$TS_T_ADDR6"; do
	lan_app probe --host "$h" --port "$TS_TARGET_PORT" --timeout 2 \
	    >>"$TS_TMP/probe.log" 2>&1 &&
	    ts_fail "$h reachable from the LAN without the tunnel"
done
ip -n "$NS_C" route del "$TS_T_NET4" via "$TS_S_ADDR4"
ip -n "$NS_C" -6 route del "$TS_T_NET6" via "$TS_S_ADDR6"
ts_log "target unreachable from the LAN without the tunnel (v4 and v6)"
ts_start_server

# sample_config MTU: the sample with this machine's key, CA, socket, TUN
# name and MTU, into client.yaml; every change must have been made.
sample_config() {
	sed -e "s|^\(  name: \)tun0\$|\1$TS_TUN|" \
	    -e "s|^\(  mtu: \)1500\$|\1$1|" \
	    -e "s|^control: /var/run/tunsplit/tunsplit.sock|control: $TS_TMP/client.sock|" \
	    -e "s|^\(  ca: \)/etc/ssl/certs/ca-certificates.crt\$|\1$TS_TMP/ca.pem|" \
	    -e "s|^\(  key: \)[A-Za-z0-9+/=]*\$|\1$TS_KEY|" \
	    "$SAMPLE" >"$TS_TMP/client.yaml"
	local n want=5
	[ "$1" = 1500 ] && want=4
	n=$(diff "$SAMPLE" "$TS_TMP/client.yaml" | grep -c '^>')
	[ "$n" = "$want" ] ||
	    ts_fail "adapting the sample changed $n lines, want $want (did the sample change?): $(diff "$SAMPLE" "$TS_TMP/client.yaml")"
	grep -q '^  server: vpn.example.org:443$' "$TS_TMP/client.yaml" &&
	    grep -q '^  route: auto$' "$TS_TMP/client.yaml" &&
	    grep -q '^  mtu: 1500$' "$SAMPLE" ||
	    ts_fail "the sample no longer has server vpn.example.org:443, route: auto and mtu 1500"
	"$TUNSPLIT" check -c "$TS_TMP/client.yaml" >"$TS_TMP/check-sample.log" 2>&1 ||
	    ts_fail "tunsplit check rejects the sample (MTU $1): $(cat "$TS_TMP/check-sample.log")"
}

start_router_client() {
	ts_bg "$NS_C" client "$TUNSPLIT" run -c "$TS_TMP/client.yaml"
	TS_CLIENT_PID=$TS_LAST_PID
	for _ in $(seq 100); do
		ts_alive "$TS_CLIENT_PID" || ts_fail "client exited during start-up"
		ip -n "$NS_C" route show table 7353 2>/dev/null |
		    grep -q "default dev $TS_TUN" &&
		    ip -n "$NS_C" -6 route show table 7353 2>/dev/null |
		    grep -q "default dev $TS_TUN" && break
		sleep 0.1
	done
	ip -n "$NS_C" route show table 7353 | grep -q "default dev $TS_TUN" ||
	    ts_fail "route: auto did not route into $TS_TUN within 10 s"
	for _ in $(seq 30); do
		[ -z "$(ip -n "$NS_C" -6 addr show dev "$TS_TUN" tentative 2>/dev/null)" ] && break
		sleep 0.1
	done
}

stop_router_client() {
	kill -TERM "$TS_CLIENT_PID" 2>/dev/null
	wait "$TS_CLIENT_PID" 2>/dev/null
	ts_wait_log "$TS_TMP/client.log" "routes through $TS_TUN removed" 50 ||
	    ts_fail "the route helper did not remove the routes"
}

status_json() {	# status_json FILE
	ip netns exec "$NS_C" "$TUNSPLIT" status --json -s "$TS_TMP/client.sock" \
	    >"$1" 2>&1 || ts_fail "tunsplit status --json: $(cat "$1")"
}

seed=0 passes=0
for mtu in ${TS_ROUTER_MTUS:-1500 9000}; do
	sample_config "$mtu"
	: >"$TS_TMP/client.log"
	start_router_client
	ts_log "MTU $mtu: sample config running, LAN routed into $TS_TUN"
	for h in "$TS_T_ADDR4" "$TS_T_ADDR6"; do
		seed=$((seed + 1))
		out=$(lan_app recv --host "$h" --port "$TS_TARGET_PORT" \
		    --bytes "$DOWN" --seed "$seed" 2>&1) ||
		    ts_fail "MTU $mtu: LAN download from $h: $out"
		ts_log "MTU $mtu, $h: $out"
		out=$(lan_app send --host "$h" --port "$TS_TARGET_PORT" \
		    --bytes "$UP" --seed "$seed" 2>&1) ||
		    ts_fail "MTU $mtu: LAN upload to $h: $out"
		ts_log "MTU $mtu, $h: $out"
	done
	# The flows' bytes are counted when they end.
	for _ in $(seq 50); do
		status_json "$TS_TMP/status$mtu.json"
		grep -q '"active": *0[,}]' "$TS_TMP/status$mtu.json" && break
		sleep 0.1
	done
	"$TS_PY" - "$TS_TMP/status$mtu.json" "$DOWN" "$UP" <<'EOF' ||
import json, sys
j = json.load(open(sys.argv[1]))
down, up = 2 * int(sys.argv[2]), 2 * int(sys.argv[3])
f, b = j["flows"], j["bytes"]
sys.exit(0 if f["total"] == 4 and f["active"] == 0 and f["failed"] == 0 and
         f.get("internal", 0) == 0 and
         down <= b["down"] < down + (1 << 20) and
         up <= b["up"] < up + (1 << 20) else 1)
EOF
	    ts_fail "MTU $mtu: the client's status does not count the 4 flows and their bytes: $(cat "$TS_TMP/status$mtu.json")"
	ts_log "MTU $mtu: client status: $("$TS_PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["flows"], j["bytes"])' "$TS_TMP/status$mtu.json")"
	# The shipped config keeps the TUN's offloads (tun.offload: on): the
	# downloads left as super-packets the kernel cut at the LAN host's
	# MSS before forwarding them (the SHA-256 above says they arrived).
	gso=$("$TS_PY" -c 'import json,sys; t=json.load(open(sys.argv[1]))["tun"]
print(t["offload"] and t["tx_gso"] > 0 and t["rx_vnet_bad"] == 0)' \
	    "$TS_TMP/status$mtu.json")
	[ "$gso" = True ] ||
	    ts_fail "MTU $mtu: no super-packets with offloads: $(cat "$TS_TMP/status$mtu.json")"
	grep -q "out of memory" "$TS_TMP/client.log" &&
	    ts_fail "MTU $mtu: the client ran out of memory: $(grep "out of memory" "$TS_TMP/client.log" | head -n 3)"
	stop_router_client
	passes=$((passes + 1))
done
# Split TCP: the target only ever saw the tunsplit server.
grep -q "$L_ADDR4\|$L_ADDR6" "$TS_TMP/target.log" &&
    ts_fail "the target saw the LAN host's address"
n=$(grep -c "target: \[\($TS_S2_ADDR4\|$TS_S2_ADDR6\)\]:[0-9]* \(SEND\|SINK\) " \
    "$TS_TMP/target.log")
[ "$n" = $((4 * passes)) ] ||
    ts_fail "the target logged $n transfers from the tunsplit server, want $((4 * passes))"
ts_alive "$TS_SERVER_PID" || ts_fail "the server died"
ts_pass "OpenWrt sample in router mode at TUN MTU ${TS_ROUTER_MTUS:-1500 9000}: LAN (MSS 1460) $((DOWN >> 20)) MiB down, $((UP >> 20)) MiB up, IPv4 and IPv6, intact, through the tunnel"
