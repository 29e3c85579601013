#!/bin/bash
# Probe resistance, the TLS disguise and key rotation, end to end.
#
# The standard three namespaces (lib.sh), plus a cover site: nginx in the
# server namespace on 127.0.0.1:8081, serving a known page.  The server has
# `fallback: 127.0.0.1:8081` and a 1 s handshake_timeout.
#
#   tsc (client, ts0)  --- 10.77.1.0/24 ---  tss (tunsplit server)  ---  tst (target:
#     curl, openssl,                           |  cover nginx               tools.py :9000,
#     ts_probe                                 |  127.0.0.1:8081            nginx :8080)
#
# From the client namespace, straight at the server's TLS port:
#   - TLS looks like a web server's: TLS 1.3, X25519, ALPN http/1.1 chosen
#     from h2,http/1.1, the certificate verifies for the SNI;
#   - curl without credentials gets the cover page;
#   - openssl s_client sending garbage gets nginx's 400 Bad Request (not a
#     bare close), and so do a wrong key, a valid header replayed on another
#     TLS connection (version 2 binds it to the first) and half
#     a header left hanging; silence past the deadline is closed with
#     close_notify, as nginx closes it;
#   - the right key gets a tunnel (status 0, then the target's page);
#   - every rejection is logged with its reason and peer, counted, and no
#     key ever appears in a log.
# Then key rotation with SIGHUP while a download runs through the tunnel:
# the download completes intact, the old key gets the cover site, the new
# key a tunnel; the client, given the new key by its own SIGHUP, makes new
# flows again; a broken configuration on SIGHUP changes nothing.
# A SIGHUP then switches to a cover site that speaks TLS (fallback_tls):
# the same answers come through the bridge, and plain HTTP sent to the
# TLS port gets the cover's own 400 for plain HTTP on its HTTPS port.  Last, the pinned client: the
# right pin_sha256 works, a wrong one fails.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_probe

PROBE=${TS_PROBE:-$(dirname "$TUNSPLIT")/tests/tools/ts_probe}
[ -x "$PROBE" ] || ts_fail "ts_probe not built ($PROBE)"
command -v curl >/dev/null || ts_skip "missing tool: curl"
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || ts_skip "missing tool: nginx"

COVER_PORT=8081
SRV=$TS_S_ADDR4:$TS_SERVER_PORT

ts_topology_up
ts_make_pki
# No warm pool: its idle connections would outlive the 1 s deadline (the
# pool keeps them younger than pool_lifetime, made for the default 10 s).
# One worker: the "(N so far)" of the rejection lines counts per worker.
ts_write_configs "  pool: 0" "  handshake_timeout: 1s
  workers: 1
  fallback: 127.0.0.1:$COVER_PORT"
KEY1=$TS_KEY

# ---- the cover site ---------------------------------------------------------
cover=$TS_TMP/cover
mkdir -p "$cover" "$TS_TMP/cnginx"
printf '<html><body>An ordinary website (cover page 7f3a)</body></html>\n' \
    >"$cover/index.html"
chmod 755 "$cover"
chmod 644 "$cover/index.html"
for t in body proxy fastcgi uwsgi scgi; do mkdir -p "$TS_TMP/cnginx/$t"; done
cat >"$TS_TMP/cover-nginx.conf" <<EOF
worker_processes 1;
pid $TS_TMP/cnginx/nginx.pid;
error_log $TS_TMP/cover-nginx-error.log warn;
daemon off;
events { worker_connections 256; }
http {
	access_log $TS_TMP/cover-access.log;
	client_body_temp_path $TS_TMP/cnginx/body;
	proxy_temp_path $TS_TMP/cnginx/proxy;
	fastcgi_temp_path $TS_TMP/cnginx/fastcgi;
	uwsgi_temp_path $TS_TMP/cnginx/uwsgi;
	scgi_temp_path $TS_TMP/cnginx/scgi;
	default_type text/html;
	server {
		listen 127.0.0.1:$COVER_PORT;
		root $cover;
	}
}
EOF
ts_bg "$NS_S" cover-nginx "$NGINX" -c "$TS_TMP/cover-nginx.conf"
ts_wait_port "$NS_S" "$COVER_PORT" 10 "$TS_LAST_PID" ||
    ts_fail "cover nginx did not listen on $COVER_PORT"

# The target: tools.py for streams, nginx for a page through the tunnel.
ts_start_target
www=$TS_TMP/www
mkdir -p "$www"
printf '<html><body>target page 51c9</body></html>\n' >"$www/index.html"
chmod 644 "$www/index.html"
ts_start_http "$www" 8080
ts_start_server

# ---- TLS like a web server's --------------------------------------------------
in_c() { ip netns exec "$NS_C" timeout 20 "$@"; }

sc=$(in_c openssl s_client -connect "$SRV" -servername "$TS_SNI" \
    -CAfile "$TS_TMP/ca.pem" -alpn h2,http/1.1 -verify_return_error \
    </dev/null 2>&1)
printf '%s\n' "$sc" >"$TS_TMP/s_client.log"
grep -q 'Protocol *: TLSv1.3' <<<"$sc" || grep -q 'New, TLSv1.3' <<<"$sc" ||
    ts_fail "s_client: not TLS 1.3"
grep -q 'ALPN protocol: http/1.1' <<<"$sc" ||
    ts_fail "s_client: ALPN http/1.1 not selected from h2,http/1.1"
grep -q 'Server Temp Key: X25519' <<<"$sc" ||
    ts_fail "s_client: key exchange is not X25519"
grep -q 'Verify return code: 0 (ok)' <<<"$sc" ||
    ts_fail "s_client: certificate did not verify for $TS_SNI"
ts_log "s_client: TLS 1.3, X25519, ALPN http/1.1, certificate verified"

# ---- curl without credentials: the cover page ---------------------------------
out=$TS_TMP/curl-cover.out
res=$(in_c curl -sS -v --max-time 10 --cacert "$TS_TMP/ca.pem" \
    --resolve "$TS_SNI:$TS_SERVER_PORT:$TS_S_ADDR4" -o "$out" \
    -w '%{http_code} %{http_version}' "https://$TS_SNI:$TS_SERVER_PORT/" \
    2>"$TS_TMP/curl-cover.log") ||
    ts_fail "curl https://$TS_SNI:$TS_SERVER_PORT/ failed: $(tail -n 3 "$TS_TMP/curl-cover.log")"
[ "$res" = "200 1.1" ] || ts_fail "curl: got '$res', expected '200 1.1'"
cmp -s "$out" "$cover/index.html" || ts_fail "curl: not the cover page"
grep -qi 'ALPN.*accepted.*http/1.1' "$TS_TMP/curl-cover.log" ||
    ts_fail "curl: server did not accept ALPN http/1.1"
res=$(in_c curl -sk --max-time 10 -o "$out" -w '%{http_code}' \
    "https://$TS_S_ADDR4:$TS_SERVER_PORT/index.html") ||
    ts_fail "curl -k https://$SRV/index.html failed"
[ "$res" = 200 ] && cmp -s "$out" "$cover/index.html" ||
    ts_fail "curl -k: no cover page ($res)"
res=$(in_c curl -sk --max-time 10 -o /dev/null -w '%{http_code}' \
    "https://$TS_S_ADDR4:$TS_SERVER_PORT/no-such-page") ||
    ts_fail "curl -k /no-such-page failed"
[ "$res" = 404 ] || ts_fail "curl -k /no-such-page: $res, expected the cover's 404"
ts_log "curl without credentials: the cover page (200, and the cover's 404)"

# ---- garbage with openssl s_client: nginx's 400 ---------------------------------
sc=$(printf 'garbage\x01\x02 not a request\r\n\r\n' |
    in_c openssl s_client -connect "$SRV" -servername "$TS_SNI" -quiet \
    -CAfile "$TS_TMP/ca.pem" 2>/dev/null)
printf '%s\n' "$sc" >"$TS_TMP/s_client-garbage.log"
grep -q '^HTTP/1.1 400 Bad Request' <<<"$sc" ||
    ts_fail "s_client garbage: no 400 from the cover site: $(head -c 200 <<<"$sc")"
grep -qi '^Server: nginx' <<<"$sc" || ts_fail "s_client garbage: not nginx's answer"
ts_log "s_client with garbage: nginx's 400 Bad Request"

# ---- ts_probe: wrong key, replay, half a header, silence, right key --------------
probe() { in_c "$PROBE" -c "$SRV" -C "$TS_TMP/ca.pem" "$@"; }
GET='GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'
is_400() {	# is_400 FILE: nginx's 400 page, no status byte before it
	head -c 24 "$1" | grep -q '^HTTP/1.1 400 Bad Request' &&
	    grep -qi '^Server: nginx' "$1"
}

WRONG=$("$TUNSPLIT" genkey)
line=$(probe -k "$WRONG" -t "$TS_T_ADDR4:8080" -d "$GET" -o "$TS_TMP/wrong") ||
    ts_fail "ts_probe wrong key: $line"
is_400 "$TS_TMP/wrong.1" || ts_fail "wrong key: not the cover's 400: $line"
case $line in *" eof "*) ;; *) ts_fail "wrong key: no clean end: $line" ;; esac
ts_log "wrong key: the cover's 400, clean TLS close ($line)"

lines=$(probe -k "$KEY1" -t "$TS_T_ADDR4:8080" -d "$GET" -n 2 \
    -o "$TS_TMP/replay") || ts_fail "ts_probe replay: $lines"
first=$TS_TMP/replay.1
[ "$(head -c 1 "$first" | od -An -tx1 | tr -d ' ')" = 00 ] ||
    ts_fail "replay: first use of the header got no status 0: $lines"
tail -c +2 "$first" | grep -q 'target page 51c9' ||
    ts_fail "replay: first use did not reach the target page"
is_400 "$TS_TMP/replay.2" || ts_fail "replay: second use not the cover's 400: $lines"
ts_log "same header on two TLS connections: tunnel to the target, then the cover site"

line=$(probe -k "$KEY1" -t "$TS_T_ADDR4:8080" -p 20 -W 2000 -d '\r\n\r\n' \
    -o "$TS_TMP/half") || ts_fail "ts_probe half header: $line"
is_400 "$TS_TMP/half.1" || ts_fail "half a header past the deadline: not the cover's 400: $line"
ts_log "20 header bytes, then silence past the deadline: the cover's 400"

# Silence: closed at the deadline with close_notify, as nginx closes a
# connection without a request at client_header_timeout.
line=$(probe -w 2000 -d "$GET" -o "$TS_TMP/silent") ||
    ts_fail "ts_probe silence: $line"
case $line in "1 0 eof"*) ;; *) false ;; esac && [ ! -s "$TS_TMP/silent.1" ] ||
    ts_fail "silence past the deadline: not closed cleanly without an answer: $line"
grep -q 'rejected .*: header timeout: closed' "$TS_TMP/server.log" ||
    ts_fail "silence past the deadline: no 'header timeout' line"
ts_log "silence past the deadline: close_notify and close, as from nginx"

line=$(probe -k "$KEY1" -t "$TS_T_ADDR4:8080" -d "$GET" -o "$TS_TMP/right") ||
    ts_fail "ts_probe right key: $line"
[ "$(head -c 1 "$TS_TMP/right.1" | od -An -tx1 | tr -d ' ')" = 00 ] &&
    grep -q 'target page 51c9' "$TS_TMP/right.1" ||
    ts_fail "right key: no tunnel: $line"
ts_log "right key: status 0 and the target's page"

# ---- the tunnel itself, through the client ------------------------------------
ts_start_client
fetch() {	# fetch URL OUT -> "code"
	ip netns exec "$NS_C" timeout 30 curl --noproxy '*' -sS --max-time 20 \
	    -o "$2" -w '%{http_code}' "$1" 2>>"$TS_TMP/curl.log"
}
res=$(fetch "http://$TS_T_ADDR4:8080/" "$TS_TMP/tunnel.out") ||
    ts_fail "GET through the tunnel failed: $(tail -n 1 "$TS_TMP/curl.log")"
[ "$res" = 200 ] && cmp -s "$TS_TMP/tunnel.out" "$www/index.html" ||
    ts_fail "GET through the tunnel: $res"
ts_log "through the tunnel: the target's page"

# ---- logs: every rejection counted with its reason, no key logged -----------------
slog=$TS_TMP/server.log
# The replayed header is a bad MAC: bound to the first TLS connection.
for reason in 'unknown user' 'bad MAC' 'malformed header' \
    'incomplete header'; do
	grep -q "rejected .*: $reason: relayed to the cover site" "$slog" ||
	    ts_fail "server log: no rejection for '$reason'"
done
grep -q "rejected $TS_C_ADDR4:[0-9]*: " "$slog" ||
    ts_fail "server log: rejections do not name the peer"
n=$(grep -c 'relayed to the cover site' "$slog")
last=$(grep 'relayed to the cover site' "$slog" | tail -n 1 |
    sed -n 's/.*(\([0-9]*\) so far).*/\1/p')
[ "$n" -ge 7 ] && [ "$last" = "$n" ] ||
    ts_fail "server log: $n rejections logged, counter says $last"
ts_log "server log: $n rejections with reason and peer, counted ($last)"
st=$(ip netns exec "$NS_S" "$TUNSPLIT" status -s "$TS_TMP/server.sock")
printf '%s\n' "$st" >"$TS_TMP/status.txt"
grep -q "^cover site 127.0.0.1:$COVER_PORT: $n relayed, 0 unreachable" <<<"$st" ||
    ts_fail "tunsplit status: no cover-site counters for $n relays: $st"
ip netns exec "$NS_S" "$TUNSPLIT" status -s "$TS_TMP/server.sock" --json |
    grep -q "\"cover\":{\"site\":\"127.0.0.1:$COVER_PORT\",\"relayed\":$n," ||
    ts_fail "tunsplit status --json: no cover counters"
ts_log "tunsplit status: cover site $n relayed"

# ---- key rotation on SIGHUP -------------------------------------------------------
ip netns exec "$NS_C" timeout 120 "$TS_PY" -u "$TS_TOOLS" recv \
    --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --bytes 6m --rate 1m \
    --seed 33 --progress "$TS_TMP/dl.progress" >"$TS_TMP/app-dl.log" 2>&1 &
dl=$!
TS_PIDS+=("$dl")
for i in $(seq 100); do
	[ "$(cat "$TS_TMP/dl.progress" 2>/dev/null || echo 0)" -gt 500000 ] && break
	sleep 0.1
done
[ "$(cat "$TS_TMP/dl.progress" 2>/dev/null || echo 0)" -gt 500000 ] ||
    ts_fail "download through the tunnel did not get going"

KEY2=$("$TUNSPLIT" genkey)
cp "$TS_TMP/server.yaml" "$TS_TMP/server-key1.yaml"
sed -i "s|$KEY1|$KEY2|" "$TS_TMP/server.yaml"
grep -q "$KEY2" "$TS_TMP/server.yaml" || ts_fail "could not rotate the key"
ts_hup "$TS_SERVER_PID" "$slog" 'reload: 1 users' "server SIGHUP (users)"
ts_alive "$TS_SERVER_PID" || ts_fail "server died on SIGHUP"

line=$(probe -k "$KEY1" -t "$TS_T_ADDR4:8080" -d "$GET" -o "$TS_TMP/old") ||
    ts_fail "ts_probe old key: $line"
is_400 "$TS_TMP/old.1" || ts_fail "old key after rotation: not the cover site: $line"
line=$(probe -k "$KEY2" -t "$TS_T_ADDR4:8080" -d "$GET" -o "$TS_TMP/new") ||
    ts_fail "ts_probe new key: $line"
[ "$(head -c 1 "$TS_TMP/new.1" | od -An -tx1 | tr -d ' ')" = 00 ] &&
    grep -q 'target page 51c9' "$TS_TMP/new.1" ||
    ts_fail "new key after rotation: no tunnel: $line"
ts_log "after SIGHUP: old key -> cover site, new key -> tunnel"

ts_alive "$dl" || { wait "$dl"; ts_fail "download died at the rotation: $(tail -n 1 "$TS_TMP/app-dl.log")"; }
wait "$dl" || ts_fail "download through the rotation: $(tail -n 1 "$TS_TMP/app-dl.log")"
ts_log "download running across the rotation: $(tail -n 1 "$TS_TMP/app-dl.log")"

# The client still has the old key: its new flows get the cover site (and
# fail); after its own SIGHUP with the new key they work again.
sed -i "s|$KEY1|$KEY2|" "$TS_TMP/client.yaml"
ts_reload "$TS_CLIENT_PID" "$TS_TMP/client.log" "client SIGHUP with the new key"
res=$(fetch "http://$TS_T_ADDR4:8080/" "$TS_TMP/tunnel2.out") ||
    ts_fail "GET with the rotated client key failed: $(tail -n 1 "$TS_TMP/curl.log")"
[ "$res" = 200 ] && cmp -s "$TS_TMP/tunnel2.out" "$www/index.html" ||
    ts_fail "GET with the rotated client key: $res"
ts_log "client reloaded with the new key: new flows work"

# A broken file on SIGHUP: logged, nothing changes.
cp "$TS_TMP/server.yaml" "$TS_TMP/server-good.yaml"
printf 'server:\n  users: [}\n' >"$TS_TMP/server.yaml"
ts_hup "$TS_SERVER_PID" "$slog" 'keeping the running configuration' \
    "broken config on SIGHUP"
ts_alive "$TS_SERVER_PID" || ts_fail "server died on a broken config"
line=$(probe -k "$KEY2" -t "$TS_T_ADDR4:8080" -d "$GET" -o "$TS_TMP/still") ||
    ts_fail "ts_probe after the broken reload: $line"
grep -q 'target page 51c9' "$TS_TMP/still.1" ||
    ts_fail "after a broken reload the new key stopped working: $line"
cp "$TS_TMP/server-good.yaml" "$TS_TMP/server.yaml"
ts_log "broken config on SIGHUP: logged, running configuration kept"

# ---- a cover site that speaks TLS itself (fallback_tls), set by SIGHUP ---------
TLS_COVER_PORT=8444
cat >"$TS_TMP/cover-tls-nginx.conf" <<EOF
worker_processes 1;
pid $TS_TMP/cnginx/nginx-tls.pid;
error_log $TS_TMP/cover-tls-nginx-error.log warn;
daemon off;
events { worker_connections 256; }
http {
	access_log $TS_TMP/cover-tls-access.log;
	client_body_temp_path $TS_TMP/cnginx/body;
	proxy_temp_path $TS_TMP/cnginx/proxy;
	fastcgi_temp_path $TS_TMP/cnginx/fastcgi;
	uwsgi_temp_path $TS_TMP/cnginx/uwsgi;
	scgi_temp_path $TS_TMP/cnginx/scgi;
	default_type text/html;
	server {
		listen 127.0.0.1:$TLS_COVER_PORT ssl;
		ssl_certificate $TS_TMP/server.pem;
		ssl_certificate_key $TS_TMP/server.key;
		root $cover;
	}
}
EOF
ts_bg "$NS_S" cover-tls-nginx "$NGINX" -c "$TS_TMP/cover-tls-nginx.conf"
ts_wait_port "$NS_S" "$TLS_COVER_PORT" 10 "$TS_LAST_PID" ||
    ts_fail "TLS cover nginx did not listen on $TLS_COVER_PORT"
sed -i "s|fallback: 127.0.0.1:$COVER_PORT|fallback: 127.0.0.1:$TLS_COVER_PORT\n  fallback_tls: true|" \
    "$TS_TMP/server.yaml"
ts_hup "$TS_SERVER_PID" "$slog" "cover site 127.0.0.1:$TLS_COVER_PORT .*over TLS" \
    "SIGHUP to the TLS cover site"
res=$(in_c curl -sk --max-time 10 -o "$out" -w '%{http_code}' \
    "https://$TS_S_ADDR4:$TS_SERVER_PORT/") || ts_fail "curl -k via the TLS cover failed"
[ "$res" = 200 ] && cmp -s "$out" "$cover/index.html" ||
    ts_fail "curl -k via the TLS cover: no cover page ($res)"
grep -q '"GET / HTTP/1.1" 200' "$TS_TMP/cover-tls-access.log" ||
    ts_fail "the TLS cover site did not serve the request"
line=$(probe -k "$WRONG" -t "$TS_T_ADDR4:8080" -d "$GET" -o "$TS_TMP/wrongtls") ||
    ts_fail "ts_probe wrong key (TLS cover): $line"
is_400 "$TS_TMP/wrongtls.1" || ts_fail "wrong key, TLS cover: not nginx's 400: $line"
line=$(probe -k "$KEY2" -t "$TS_T_ADDR4:8080" -d "$GET" -o "$TS_TMP/righttls") ||
    ts_fail "ts_probe right key (TLS cover): $line"
grep -q 'target page 51c9' "$TS_TMP/righttls.1" ||
    ts_fail "right key with a TLS cover configured: no tunnel: $line"
# Plain HTTP on the TLS port goes raw to the TLS cover site's own port,
# which answers it as nginx answers plain HTTP on an HTTPS port.
res=$(in_c curl -s --max-time 10 -o "$TS_TMP/plain.out" -w '%{http_code}' \
    "http://$TS_S_ADDR4:$TS_SERVER_PORT/") ||
    ts_fail "curl http:// to the TLS port failed"
[ "$res" = 400 ] && grep -q 'The plain HTTP request was sent to HTTPS port' \
    "$TS_TMP/plain.out" ||
    ts_fail "plain HTTP to the TLS port: not the TLS cover's own answer ($res)"
grep -q 'not TLS: relayed to the cover site' "$slog" ||
    ts_fail "plain HTTP to the TLS port: no 'not TLS' rejection logged"
ts_log "fallback_tls (switched by SIGHUP): cover page and 400 through the TLS bridge, plain HTTP answered by the cover's HTTPS port"

for k in "$KEY1" "$KEY2"; do
	grep -qF "$k" "$TS_TMP"/*.log && ts_fail "a key appears in a log"
done
ts_log "no key in any log"

# ---- public-key pinning -----------------------------------------------------------
pin=$(openssl x509 -in "$TS_TMP/server.pem" -pubkey -noout |
    openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64)
ts_stop_client() {
	kill -TERM "$TS_CLIENT_PID" 2>/dev/null
	wait "$TS_CLIENT_PID" 2>/dev/null
	for i in $(seq 50); do
		ip -n "$NS_C" link show "$TS_TUN" >/dev/null 2>&1 || break
		sleep 0.1
	done
}
pinned_get() {	# pinned_get PIN: curl's code through a client with that pin
	ts_stop_client
	printf '  pin_sha256: "%s"\n' "$1" >>"$TS_TMP/client.yaml"
	ts_start_client
	fetch "http://$TS_T_ADDR4:8080/" "$TS_TMP/pinned.out" >"$TS_TMP/pinned.code" ||
	    echo failed >>"$TS_TMP/pinned.code"
	sed -i '/pin_sha256/d' "$TS_TMP/client.yaml"
}
pinned_get "$pin"
[ "$(cat "$TS_TMP/pinned.code")" = 200 ] ||
    ts_fail "pinned client (right pin): $(cat "$TS_TMP/pinned.code") $(tail -n 1 "$TS_TMP/curl.log")"
grep -q 'server public key pinned' "$TS_TMP/client.log" ||
    ts_fail "client did not log the pin"
wrong=$(printf 'x%.0s' $(seq 32) | openssl dgst -sha256 -binary | base64)
pinned_get "$wrong"
[ "$(head -n 1 "$TS_TMP/pinned.code")" = 200 ] &&
    ts_fail "pinned client with a wrong pin still reached the target"
grep -q 'does not match pin_sha256' "$TS_TMP/client.log" ||
    ts_fail "wrong pin: no log line"
ts_log "pin_sha256: the right pin works, a wrong one is refused"

ts_check_alive
ts_pass "cover site for curl, garbage, wrong key, replay, half header, silence; TLS 1.3/X25519/http1.1; key rotation by SIGHUP without dropping flows; pinning"
