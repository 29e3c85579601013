#!/bin/bash
# Domain recovery on the client (lib.sh draws the topology), with
# client.sniff: auto (the default) and a rule by domain, which turns it
# on, and sniff_timeout 50 ms, against targets of sniffpeer.py on the
# target namespace:
#
#  1. HTTPS with SNI www.sni-test.example: the client logs the domain
#     (tls), `status --json --flows` shows it on the live flow, and the
#     1 MiB answer arrives intact (SHA-256 of the known payload);
#  2. HTTP with "Host: Web.Host-Test.example:9080": the domain, lower
#     case and without the port (http), and the body intact;
#  3. a server-speaks-first target (an SMTP-like banner): the app never
#     sends first, so the flow dials at the 50 ms bound -- it logs "no
#     domain (no bytes, N ms)" with N at least the bound -- and the
#     banner arrives within the bound and a margin, never a stall;
#  4. QUIC: client Initials (tests/tools/ts_quic) to a UDP echo server on
#     port 443, the ClientHello in one datagram (IPv4) and over two
#     (IPv6): the client logs the domain of each association (quic), and
#     every datagram comes back intact;
#  5. reloaded with the rule by address instead (auto: no rule can match
#     a domain), the same flows work and nothing is sniffed (flows dial
#     at once);
#  6. a client with named outbounds and rules by domain: an SNI under
#     sni-test.example takes outbound by-sni (rule 0), the Host
#     web.host-test.example takes by-host (rule 1), both answers intact;
#     a name no rule takes goes to final, block: the app's connection is
#     reset and never reaches the target; the same for QUIC: an Initial
#     naming q.sni-test.example is echoed (rule 0), so is a hello over
#     two datagrams (the first held until the second), and one naming
#     other.example is refused.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_sniff

CSOCK=$TS_TMP/client.sock
PEER=$(dirname "$0")/sniffpeer.py
TIMEOUT_MS=50
MARGIN_MS=250
[ -n "${TS_SANITIZED:-}" ] && MARGIN_MS=1500
ts_standard_setup "  sniff_timeout: ${TIMEOUT_MS}ms
  rules:
    - domain_suffix: [sni-test.example]
      outbound: default"
"$TUNSPLIT" check -c "$TS_TMP/client.yaml" 2>/dev/null |
    grep -q '^  sniff: "auto"$' ||
    ts_fail "tunsplit check does not show sniff: auto"

T4=$TS_T_ADDR4 TLSP=9443 HTTPP=9080 BANP=9025
ts_bg "$NS_T" peer "$TS_PY" -u "$PEER" serve --bind "$T4" --tls-port $TLSP \
    --http-port $HTTPP --banner-port $BANP --cert "$TS_TMP/server.pem" \
    --key "$TS_TMP/server.key"
ts_wait_port "$NS_T" $BANP 10 "$TS_LAST_PID" || ts_fail "sniffpeer did not listen"
out=$TS_TMP/apps.log
peer() {	# peer ARGS...: the app side, must succeed; its last line logged
	ip netns exec "$NS_C" timeout 60 "$TS_PY" -u "$PEER" "$@" >>"$out" 2>&1 ||
	    ts_fail "sniffpeer $1: $(tail -n 2 "$out")"
	ts_log "$1: $(tail -n 1 "$out")"
}
clog=$TS_TMP/client.log

# ---- 1. TLS SNI -----------------------------------------------------------
peer tls --host "$T4" --port $TLSP --sni www.sni-test.example --bytes $((1 << 20)) \
    --status "$TUNSPLIT status -s $CSOCK --json --flows"
grep -q "^flows: .*\"$T4:$TLSP\", \"www.sni-test.example\"" "$out" ||
    ts_fail "status --flows without the domain: $(grep '^flows:' "$out")"
ts_wait_log "$clog" "$T4:$TLSP: domain www.sni-test.example (tls, " ||
    ts_fail "no 'domain www.sni-test.example (tls' line in the client log"
ts_wait_log "$clog" "$T4:$TLSP (www.sni-test.example): [a-z]" ||
    ts_fail "the flow's summary line does not name the domain"
ts_log "TLS: SNI recovered, shown in status --flows and the log"

# ---- 2. HTTP Host -----------------------------------------------------------
peer http --host "$T4" --port $HTTPP --hostname Web.Host-Test.example:$HTTPP \
    --bytes $((256 << 10))
ts_wait_log "$clog" "$T4:$HTTPP: domain web.host-test.example (http, " ||
    ts_fail "no 'domain web.host-test.example (http' line in the client log"
ts_log "HTTP: Host recovered, lower case, port stripped"

# ---- 3. server speaks first -------------------------------------------------
peer banner --host "$T4" --port $BANP --max-ms $((TIMEOUT_MS + MARGIN_MS))
ts_wait_log "$clog" "$T4:$BANP: no domain (no bytes, [0-9]* ms)" ||
    ts_fail "no 'no domain (no bytes' line for the banner flow"
waited=$(grep -o "$T4:$BANP: no domain (no bytes, [0-9]* ms)" "$clog" |
    tail -n 1 | grep -o '[0-9]* ms' | cut -d' ' -f1)
[ "$waited" -ge "$TIMEOUT_MS" ] && [ "$waited" -le $((TIMEOUT_MS + MARGIN_MS)) ] ||
    ts_fail "the banner flow waited $waited ms, bound $TIMEOUT_MS ms"
ts_log "server-speaks-first: dialled after $waited ms (bound $TIMEOUT_MS ms)"

# ---- 4. QUIC on UDP/443 -------------------------------------------------------
QUIC=${TS_QUIC:-$(dirname "$TUNSPLIT")/tests/tools/ts_quic}
[ -x "$QUIC" ] || ts_fail "ts_quic not built ($QUIC)"
ts_start_udpecho 443
quic() {	# quic ARGS...: ts_quic in the client namespace, must succeed
	ip netns exec "$NS_C" timeout 30 "$QUIC" "$@" >>"$out" 2>&1 ||
	    ts_fail "ts_quic $*: $(tail -n 2 "$out")"
	ts_log "$(tail -n 1 "$out")"
}
quic "$T4" 443 one.quic-test.example
ts_wait_log "$clog" "udp [0-9]* [0-9.:]*: domain one.quic-test.example (quic)" ||
    ts_fail "no 'domain one.quic-test.example (quic)' line"
quic "$TS_T_ADDR6" 443 two.quic-test.example --split
ts_wait_log "$clog" "udp [0-9]* \[[0-9a-f:]*\]:[0-9]*: domain two.quic-test.example (quic)" ||
    ts_fail "no 'domain two.quic-test.example (quic)' line (hello over two datagrams)"
ts_log "QUIC: SNI recovered from one Initial, and from a hello over two"

# ---- 5. no rule by domain: auto does not sniff -------------------------------
sed -i 's/- domain_suffix: \[sni-test.example\]/- dst: [192.0.2.0\/24]/' "$TS_TMP/client.yaml"
grep -q 'dst: \[192.0.2.0/24\]' "$TS_TMP/client.yaml" || ts_fail "sed on client.yaml"
ts_reload "$TS_CLIENT_PID" "$clog" "reload without a rule by domain"
n=$(grep -c ": domain \|: no domain (" "$clog")
peer tls --host "$T4" --port $TLSP --sni never.example --bytes 65536
peer banner --host "$T4" --port $BANP --max-ms $MARGIN_MS
sleep 0.3
[ "$(grep -c ": domain \|: no domain (" "$clog")" -eq "$n" ] ||
    ts_fail "auto sniffed without a rule by domain: $(grep ': domain \|: no domain (' "$clog" | tail -n 2)"
ts_log "no rule by domain: flows dial at once, nothing sniffed"
# ---- 6. rules by domain choose the outbound ----------------------------------
# A client with three outbounds: two names for the one server (so the log
# and status show which took a flow) and block as final.  SNI names one,
# Host the other; a name neither rule knows goes to final and is refused.
kill "$TS_CLIENT_PID" 2>/dev/null
wait "$TS_CLIENT_PID" 2>/dev/null
cat >"$TS_TMP/client.yaml" <<YAML
log: {level: info, flows: true}
control: $CSOCK
tun: {name: $TS_TUN, mtu: 9000, address: [198.18.0.1/15, "fdfe:dcba:9876::1/64"]}
client:
  sniff_timeout: ${TIMEOUT_MS}ms
  outbounds:
    - {name: by-sni, protocol: tunsplit, server: "$TS_S_ADDR4:$TS_SERVER_PORT", sni: $TS_SNI, ca: $TS_TMP/ca.pem, key: "$TS_KEY"}
    - {name: by-host, protocol: tunsplit, server: "$TS_S_ADDR4:$TS_SERVER_PORT", sni: $TS_SNI, ca: $TS_TMP/ca.pem, key: "$TS_KEY"}
    - {name: reject, protocol: block}
  final: reject
  rules:
    - domain_suffix: [sni-test.example]
      outbound: by-sni
    - domain: [web.host-test.example]
      outbound: by-host
YAML
"$TUNSPLIT" check -c "$TS_TMP/client.yaml" >"$TS_TMP/check6.log" 2>&1 ||
    ts_fail "check rejects the outbounds config: $(cat "$TS_TMP/check6.log")"
mv "$clog" "$TS_TMP/client-1.log"
ts_start_client
peer tls --host "$T4" --port $TLSP --sni deep.www.sni-test.example --bytes $((256 << 10))
peer http --host "$T4" --port $HTTPP --hostname web.host-test.example --bytes $((256 << 10))
ts_wait_log "$clog" "$T4:$TLSP (deep.www.sni-test.example): .*outbound by-sni, rule 0 (domain_suffix sni-test.example)" ||
    ts_fail "the SNI flow did not take by-sni by rule 0: $(grep "$T4:$TLSP" "$clog" | tail -n 2)"
ts_wait_log "$clog" "$T4:$HTTPP (web.host-test.example): .*outbound by-host, rule 1 (domain web.host-test.example)" ||
    ts_fail "the Host flow did not take by-host by rule 1: $(grep "$T4:$HTTPP" "$clog" | tail -n 2)"
# No rule: final, block: the app's connection is reset after the sniff.
if ip netns exec "$NS_C" timeout 30 "$TS_PY" -u "$PEER" tls --host "$T4" \
    --port $TLSP --sni other.example --bytes 1000 >>"$out" 2>&1; then
	ts_fail "a name no rule takes reached the target (final is block)"
fi
ts_wait_log "$clog" "$T4:$TLSP (other.example): blocked.*outbound reject, final" ||
    ts_fail "the unmatched flow was not blocked by final: $(grep "$T4:$TLSP" "$clog" | tail -n 2)"
# QUIC: the Initial's name routes the conversation; final being block,
# only a datagram that rule 0 took can come back.
quic "$T4" 443 q.sni-test.example
ts_wait_log "$clog" "udp [0-9]* [0-9.:]*: domain q.sni-test.example (quic) to $T4:443" ||
    ts_fail "no 'domain q.sni-test.example (quic)' line"
# A hello over two datagrams: the first is held until the second.
quic "$TS_T_ADDR6" 443 split.sni-test.example --split
ts_wait_log "$clog" "domain split.sni-test.example (quic) to \[$TS_T_ADDR6\]:443" ||
    ts_fail "no 'domain split.sni-test.example (quic)' line"
if ip netns exec "$NS_C" timeout 30 "$QUIC" "$T4" 443 other.example >>"$out" 2>&1; then
	ts_fail "a QUIC name no rule takes was echoed (final is block)"
fi
ts_log "rules by domain: SNI -> by-sni, Host -> by-host, QUIC SNI -> by-sni, no match -> final (reject)"
ts_check_alive
ts_pass "SNI, Host and QUIC recovered, rules by domain chose outbounds, server-speaks-first bounded"
