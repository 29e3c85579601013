#!/bin/bash
# The client's ClientHello, as a passive observer sees it, is curl's: the
# first record of an outer connection made by the real client (its warm
# pool dials at start with pool_idle: 0) is compared with the one curl on this machine sends
# to the same name, field by field and byte for byte, except for what is
# random by nature (random, session id bytes, key share).  Then:
#   - fingerprint: browser sends its own, Chrome-like ClientHello (TLS 1.2
#     and 1.3 only, Chrome's suites, status_request, session_ticket) and
#     still carries a flow, hash-checked, through a real tunsplit server;
#   - the client offers TLS 1.0 to 1.3 like curl but speaks only 1.3: a
#     server that stops at TLS 1.2 completes handshakes and never receives
#     a byte (no request header), and the app's flow fails.
#
# Same topology as lib.sh; the capture listener (tests/netns/hellotool.py)
# stands where the server listens, 10.77.1.2:8443 in tss.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_clienthello
ts_need curl curl

HT=$TS_LIB_DIR/hellotool.py

ts_topology_up
ts_make_pki
ts_write_configs "  pool: 1
  pool_idle: 0"
ts_start_target

# ht_listen PREFIX: capture one ClientHello at the server's address.
ht_listen() {
	ts_bg "$NS_S" "listen-$1" "$TS_PY" -u "$HT" listen "$TS_S_ADDR4" \
	    "$TS_SERVER_PORT" "$TS_TMP/$1" 1
	HT_PID=$TS_LAST_PID
	ts_wait_port "$NS_S" "$TS_SERVER_PORT" 10 "$HT_PID" ||
	    ts_fail "capture listener for $1 did not start"
}

# ht_wait PREFIX: the capture is written and the listener gone.
ht_wait() {
	local i
	for i in $(seq 100); do
		! ts_any_running "$HT_PID" && [ -s "$TS_TMP/$1.1" ] && return 0
		sleep 0.1
	done
	ts_fail "no ClientHello captured for $1: $(cat "$TS_TMP/listen-$1.log")"
}

stop_client() {
	kill -TERM "$TS_CLIENT_PID" 2>/dev/null
	wait "$TS_CLIENT_PID" 2>/dev/null
	ip -n "$NS_C" route del "$TS_T_NET4" dev "$TS_TUN" 2>/dev/null
	ip -n "$NS_C" -6 route del "$TS_T_NET6" dev "$TS_TUN" 2>/dev/null
}

# 1. curl, as Debian ships it, default options (-q: no ~/.curlrc).
ht_listen curl
ip netns exec "$NS_C" curl -q -s -o /dev/null --max-time 5 \
    --resolve "$TS_SNI:$TS_SERVER_PORT:$TS_S_ADDR4" \
    "https://$TS_SNI:$TS_SERVER_PORT/" >/dev/null 2>&1
ht_wait curl
"$TS_PY" "$HT" show "$TS_TMP/curl.1" >"$TS_TMP/curl.txt" ||
    ts_fail "curl's ClientHello does not parse"
ts_log "curl $(curl --version | head -n 1 | cut -d ' ' -f 2): $(head -n 1 "$TS_TMP/curl.txt")"

# 2. The tunsplit client's first pool connection.
ht_listen tunsplit
ts_start_client
ht_wait tunsplit
stop_client
"$TS_PY" "$HT" show "$TS_TMP/tunsplit.1" >"$TS_TMP/tunsplit.txt" ||
    ts_fail "tunsplit's ClientHello does not parse"
ts_log "tunsplit: $(head -n 1 "$TS_TMP/tunsplit.txt")"
if ! "$TS_PY" "$HT" compare "$TS_TMP/curl.1" "$TS_TMP/tunsplit.1" \
    >"$TS_TMP/compare.txt"; then
	cat "$TS_TMP/curl.txt" "$TS_TMP/tunsplit.txt" "$TS_TMP/compare.txt"
	ts_fail "tunsplit's ClientHello is not curl's: $(head -n 1 "$TS_TMP/compare.txt")"
fi
# The comparison must be able to fail: the hellos are not byte-identical
# (random fields), and a different extension list is caught.
cmp -s "$TS_TMP/curl.1" "$TS_TMP/tunsplit.1" &&
    ts_fail "byte-identical ClientHellos: the random fields are not random"
ts_log "same ClientHello as curl ($(grep -c . "$TS_TMP/tunsplit.txt") fields, random fields aside)"

# 3. fingerprint: browser.
printf '  fingerprint: browser\n' >>"$TS_TMP/client.yaml"
"$TUNSPLIT" check -c "$TS_TMP/client.yaml" >"$TS_TMP/check-browser.log" 2>&1 ||
    ts_fail "fingerprint: browser rejected: $(cat "$TS_TMP/check-browser.log")"
ht_listen browser
ts_start_client
ht_wait browser
"$TS_PY" "$HT" show "$TS_TMP/browser.1" >"$TS_TMP/browser.txt" ||
    ts_fail "the browser ClientHello does not parse"
ts_log "browser: $(head -n 1 "$TS_TMP/browser.txt")"
"$TS_PY" "$HT" compare "$TS_TMP/curl.1" "$TS_TMP/browser.1" >/dev/null &&
    ts_fail "fingerprint: browser sends curl's ClientHello"
for want in "^ciphers (16) 1301 1302 1303 c02b c02f c02c c030 cca9 cca8 c013 c014 009c 009d 002f 0035 00ff$" \
    "supported_versions 0304 0303$" "supported_groups 001d 0017 0018$" \
    "signature_algorithms 0403 0804 0401 0503 0805 0501 0806 0601$" \
    " status_request " " session_ticket " " signed_certificate_timestamp " \
    "alpn h2,http/1.1$"; do
	grep -q -- "$want" "$TS_TMP/browser.txt" || {
		cat "$TS_TMP/browser.txt"
		ts_fail "browser ClientHello lacks '$want'"
	}
done
for unwanted in " encrypt_then_mac" " post_handshake_auth"; do
	grep -q -- "$unwanted" "$TS_TMP/browser.txt" &&
	    ts_fail "browser ClientHello has$unwanted"
done
# ... and it carries flows: the real server takes the listener's place.
ts_start_server
out=$TS_TMP/app.log
ts_app send --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --bytes 256k \
    --seed 3 --timeout 15 >"$out" 2>&1 ||
    ts_fail "flow with fingerprint: browser: $(tail -n 1 "$out")"
ts_log "flow with fingerprint: browser: $(tail -n 1 "$out")"
stop_client
ts_stop_server

# 4. A server that stops at TLS 1.2 (default fingerprint again).
sed -i '/fingerprint: browser/d' "$TS_TMP/client.yaml"
ts_bg "$NS_S" tls12 "$TS_PY" -u "$HT" tls12 "$TS_S_ADDR4" "$TS_SERVER_PORT" \
    "$TS_TMP/server.pem" "$TS_TMP/server.key" 8
T12_PID=$TS_LAST_PID
ts_wait_port "$NS_S" "$TS_SERVER_PORT" 10 "$T12_PID" ||
    ts_fail "TLS 1.2 server did not start"
ts_start_client
if ts_app send --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --bytes 1k \
    --seed 4 --timeout 4 >"$out" 2>&1; then
	ts_fail "a flow went through a TLS 1.2 server"
fi
stop_client
wait "$T12_PID" 2>/dev/null
hs=$(grep -c "^TLSv1.2 " "$TS_TMP/tls12.log")
sent=$(awk '$1 == "TLSv1.2" { n += $2 } END { print n + 0 }' "$TS_TMP/tls12.log")
ts_log "TLS 1.2 server: $hs handshakes completed, $sent bytes received"
[ "$hs" -ge 1 ] || ts_fail "no TLS 1.2 handshake completed: $(cat "$TS_TMP/tls12.log")"
[ "$sent" = 0 ] || ts_fail "the client sent $sent bytes over TLS 1.2"
ts_pass "ClientHello identical to curl's; browser profile Chrome-like and working; TLS 1.2 handshakes get no byte"
