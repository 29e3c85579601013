#!/bin/bash
# Differential active probing: a tunsplit server with a cover site must
# answer every probe exactly as a stock nginx would.
#
#   tsc (client)                          tss (server)
#     probediff.py  ---- 10.77.1.0/24 ---  10.77.1.2:8443  tunsplit, fallback: cover
#                                          127.0.0.1:8081  cover nginx (plain HTTP)
#                                          127.0.0.1:8082  its "return 497" (fallback_plain)
#                                          10.77.1.2:9443  reference nginx (TLS)
#
# The reference is Debian 12's nginx 1.22 configured as Debian ships it
# (/etc/nginx/nginx.conf's sendfile, ssl_protocols,
# ssl_prefer_server_ciphers and gzip, everything else at nginx's defaults), terminating TLS itself with the
# same RSA certificate and serving the same site as the cover; the cover
# nginx has a second server (return 497) for the server's fallback_plain.
# tests/netns/probediff.py runs every probe against both at once (TLS 1.3
# and 1.2 handshakes with ALPN and SNI variants, resumption, old and
# malformed hellos, plain HTTP, silence, FIN, requests after the handshake,
# trojan- and native-looking first bytes ...) and compares the bytes of
# the unencrypted records, the lengths of the encrypted ones, the close
# (FIN, RST, nothing) and its timing class.  A difference fails the test
# unless it is listed in KNOWN below with its reason.
#
# TS_PROBE_FAST=1 (the default under make check) sets both sides'
# pre-request timeouts to 2 s so the timing probes take seconds;
# TS_PROBE_FAST=0 runs with the real defaults (nginx's 60 s, tunsplit's
# defaults) and takes about two minutes.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_probe_diff

NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || ts_skip "missing tool: nginx"

FAST=${TS_PROBE_FAST:-1}
COVER_PORT=8081
PLAIN_PORT=8082
REF_PORT=9443
PW=probe-diff-trojan-password

# Differences OpenSSL or the design cannot (yet) remove: probe name, reason.
# None today (the cover relay ends its records where nginx does).
: >"$TS_TMP/known.txt"

ts_topology_up

# ---- one RSA certificate for both (fixed-length signatures) --------------
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$TS_TMP/server.key" \
    -out "$TS_TMP/server.pem" -days 30 -subj "/CN=$TS_SNI" \
    -addext "subjectAltName=DNS:$TS_SNI" >"$TS_TMP/openssl.log" 2>&1 ||
    ts_fail "openssl: no certificate: $(tail -n 3 "$TS_TMP/openssl.log")"
cp "$TS_TMP/server.pem" "$TS_TMP/ca.pem"
chmod 644 "$TS_TMP/server.key"	# nginx workers read it as nobody

if [ "$FAST" = 1 ]; then
	T=2
	NGX_T="client_header_timeout ${T}s; keepalive_timeout ${T}s;"
	TS_T="  handshake_timeout: ${T}s"
else
	T=60
	NGX_T=
	TS_T=
fi
ts_write_configs "  pool: 0" "  fallback: 127.0.0.1:$COVER_PORT
  fallback_plain: 127.0.0.1:$PLAIN_PORT
  trojan_passwords: [\"$PW\"]
$TS_T"

# ---- the site, the cover and the reference --------------------------------
site=$TS_TMP/site
mkdir -p "$site"
printf '<!DOCTYPE html>\n<html>\n<head><title>Welcome</title></head>\n<body>\n<h1>An ordinary web site</h1>\n<p>Nothing to see here.</p>\n</body>\n</html>\n' \
    >"$site/index.html"
head -c 50000 /dev/zero | tr '\0' 'x' >"$site/big.bin"
head -c 300000 /dev/zero | tr '\0' 'y' >"$site/large.bin"
# ~250 kB of HTML that gzip turns into several 16 KiB records (chunked)
seq 1 12000 | awk '{ printf "<p>%08x %d</p>\n", ($1 * 2654435761) % 4294967296, $1 }' \
    >"$site/page.html"
touch -d @1600000000 "$site"/*	# probediff.py's MTIME
chmod 755 "$site"
chmod 644 "$site"/*

nginx_conf() {	# nginx_conf NAME LISTEN-LINES [MORE-SERVERS]
	local d=$TS_TMP/$1 t
	mkdir -p "$d"
	for t in body proxy fastcgi uwsgi scgi; do mkdir -p "$d/$t"; done
	cat >"$TS_TMP/$1.conf" <<EOF
worker_processes 1;
pid $d/nginx.pid;
error_log $TS_TMP/$1-error.log warn;
daemon off;
events { worker_connections 256; }
http {
	sendfile on;
	tcp_nopush on;
	types_hash_max_size 2048;
	include /etc/nginx/mime.types;
	default_type application/octet-stream;
	ssl_protocols TLSv1 TLSv1.1 TLSv1.2 TLSv1.3;
	ssl_prefer_server_ciphers on;
	access_log $TS_TMP/$1-access.log;
	gzip on;
	client_body_temp_path $d/body;
	proxy_temp_path $d/proxy;
	fastcgi_temp_path $d/fastcgi;
	uwsgi_temp_path $d/uwsgi;
	scgi_temp_path $d/scgi;
	$NGX_T
	server {
		$2
		server_name $TS_SNI;
		root $site;
		index index.html;
	}
	${3:-}
}
EOF
	ts_bg "$NS_S" "$1" "$NGINX" -c "$TS_TMP/$1.conf"
}
# Beside the site, what fallback_plain points at: a server that answers
# plain HTTP as nginx's HTTPS port does (497: its 400 page for it).
nginx_conf cover "listen 127.0.0.1:$COVER_PORT;" "server {
		listen 127.0.0.1:$PLAIN_PORT;
		return 497;
	}"
ts_wait_port "$NS_S" "$COVER_PORT" 10 "$TS_LAST_PID" ||
    ts_fail "cover nginx did not listen on $COVER_PORT"
nginx_conf reference "listen $TS_S_ADDR4:$REF_PORT ssl;
		ssl_certificate $TS_TMP/server.pem;
		ssl_certificate_key $TS_TMP/server.key;"
ts_wait_port "$NS_S" "$REF_PORT" 10 "$TS_LAST_PID" ||
    ts_fail "reference nginx did not listen on $REF_PORT"
ts_start_server

# ---- the probes -----------------------------------------------------------
ts_log "probing (timeouts ${T}s on both sides)"
ip netns exec "$NS_C" timeout $((T * 3 + 120)) "$TS_PY" -u \
    "$TS_LIB_DIR/probediff.py" --a "tunsplit=$TS_S_ADDR4:$TS_SERVER_PORT" \
    --b "nginx=$TS_S_ADDR4:$REF_PORT" --sni "$TS_SNI" --timeout "$T" \
    --known "$TS_TMP/known.txt" ${TS_PROBE_ONLY:+--only "$TS_PROBE_ONLY"} \
    ${TS_PROBE_VERBOSE:+--verbose} >"$TS_TMP/probediff.log" 2>&1
rc=$?
cat "$TS_TMP/probediff.log"
grep -q ' probes in ' "$TS_TMP/probediff.log" ||
    ts_fail "probediff.py did not finish (status $rc)"
[ "$rc" = 0 ] || ts_fail "the server is told apart from nginx (above)"
ts_alive "$TS_SERVER_PID" || ts_fail "the server died"
ts_pass "$(tail -n 1 "$TS_TMP/probediff.log")"
