#!/bin/bash
# HTTP GET through the tunnel, IPv4 and IPv6 destinations: a page and a
# generated 16 MiB file from nginx on the target, fetched with curl in the
# client namespace; the file's SHA-256 must match the original.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_http

ts_standard_setup

www=$TS_TMP/www
mkdir -p "$www"
printf '<html><body>tunsplit e2e page</body></html>\n' >"$www/index.html"
head -c $((16 << 20)) /dev/urandom >"$www/file.bin"
chmod 644 "$www"/*
want=$(sha256sum <"$www/file.bin" | cut -d' ' -f1)
ts_start_http "$www" 8080

fetch() {	# fetch URL OUT -> prints curl's summary
	ip netns exec "$NS_C" timeout 120 curl --noproxy '*' -sS --max-time 100 \
	    -o "$2" -w '%{http_code} %{size_download} %{time_total}' "$1" \
	    2>>"$TS_TMP/curl.log"
}

for host in "$TS_T_ADDR4" "[$TS_T_ADDR6]"; do
	page=$TS_TMP/page.out
	rm -f "$page"
	res=$(fetch "http://$host:8080/" "$page") ||
	    ts_fail "GET http://$host:8080/ failed: $(tail -n 1 "$TS_TMP/curl.log")"
	case $res in 200\ *) ;; *) ts_fail "GET http://$host:8080/: $res" ;; esac
	cmp -s "$page" "$www/index.html" ||
	    ts_fail "page from $host differs from the original"
	ts_log "GET http://$host:8080/ -> $res, content identical"

	out=$TS_TMP/file.out
	rm -f "$out"
	res=$(fetch "http://$host:8080/file.bin" "$out") ||
	    ts_fail "GET http://$host:8080/file.bin failed: $(tail -n 1 "$TS_TMP/curl.log")"
	case $res in 200\ *) ;; *) ts_fail "GET http://$host:8080/file.bin: $res" ;; esac
	got=$(sha256sum <"$out" | cut -d' ' -f1)
	[ "$got" = "$want" ] ||
	    ts_fail "file.bin via $host: sha256 $got, expected $want ($res)"
	ts_log "GET http://$host:8080/file.bin -> $res (code bytes seconds), sha256 match"
done

# The requests really went through tunsplit: nginx saw the server's
# addresses as the peers, never the client's.
if [ "$TS_HTTP_WHAT" = nginx ]; then
	for a in "$TS_S2_ADDR4" "$TS_S2_ADDR6"; do
		grep -q "^$a " "$TS_TMP/nginx-access.log" ||
		    ts_fail "nginx access log shows no request from the tunsplit server ($a)"
	done
fi
ts_check_alive
ts_pass "page and 16 MiB file over IPv4 and IPv6 destinations, sha256 $want"
