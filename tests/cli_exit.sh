#!/bin/sh
# tunsplit's documented exit status (tunsplit(8), EXIT STATUS): 0 success,
# 1 runtime failure, 2 usage error, 3 configuration error.  No root, no
# network: every command here fails before it would touch either.
set -u
TUNSPLIT=${TUNSPLIT:-./tunsplit}
[ -x "$TUNSPLIT" ] || { echo "SKIP: no tunsplit binary ($TUNSPLIT)"; exit 77; }
case $TUNSPLIT in /*) ;; */*) TUNSPLIT=$(pwd)/$TUNSPLIT ;; esac	# cd below
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tunsplit-cli.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
fails=0

expect() {	# expect STATUS ARGS...: run tunsplit ARGS, want STATUS
	want=$1
	shift
	"$TUNSPLIT" "$@" >"$tmp/out" 2>&1 </dev/null
	got=$?
	if [ "$got" = "$want" ]; then
		echo "ok: tunsplit $* -> $got"
	else
		echo "FAIL: tunsplit $* -> $got, want $want"
		sed 's/^/    /' "$tmp/out"
		fails=$((fails + 1))
	fi
}

key=$("$TUNSPLIT" genkey) || { echo "FAIL: genkey"; exit 1; }
umask 077
cat >"$tmp/good.yaml" <<EOT
control: $tmp/none.sock
client:
  server: "127.0.0.1:1"
  key: "$key"
EOT
printf 'client:\n  server: "127.0.0.1:1"\n  key: "%s"\n  bogus: 1\n' "$key" >"$tmp/unknown.yaml"
printf 'client: [\n' >"$tmp/syntax.yaml"
printf 'control: off\nclient:\n  server: "127.0.0.1:1"\n  key: "%s"\n' "$key" >"$tmp/off.yaml"
printf 'metrics: 70000\nclient:\n  server: "127.0.0.1:1"\n  key: "%s"\n' "$key" >"$tmp/metrics.yaml"
printf 'client:\n  server: "127.0.0.1:1"\n  key: "%s"\n  route: auto\n' "$key" >"$tmp/route.yaml"

# usage errors: 2
expect 2
expect 2 frobnicate
expect 2 run -x
expect 2 run -c
expect 2 run -c "$tmp/good.yaml" extra
expect 2 run -p relative.pid -c "$tmp/good.yaml"
expect 2 check -z
expect 2 status --bogus
expect 2 status -s a.sock -c "$tmp/good.yaml"
expect 2 status extra
expect 2 status --watch 0
expect 2 status --watch=0
expect 2 status -w 3601
expect 2 status --watch=2x
expect 2 status --watch=-1
expect 2 status --watch 2 extra
expect 2 help frobnicate
expect 2 route-test
expect 2 route-test a.example b.example
expect 2 route-test --port 70000 a.example
expect 2 route-test -s a.sock -c "$tmp/good.yaml" a.example
expect 2 route-test -c "$tmp/good.yaml" "bad..name"
expect 2 genkey extra
# configuration errors: 3
expect 3 run -c "$tmp/missing.yaml"
expect 3 run -c "$tmp/unknown.yaml"
expect 3 check -c "$tmp/syntax.yaml"
expect 3 check -q -c "$tmp/metrics.yaml"
expect 3 check -q -c "$tmp/route.yaml"
expect 3 status -c "$tmp/off.yaml"
expect 3 status -c "$tmp/missing.yaml"
expect 3 route-test -c "$tmp/missing.yaml" 192.0.2.1
# runtime failures: 1 (no daemon behind the socket)
expect 1 status -s "$tmp/none.sock"
expect 1 status -c "$tmp/good.yaml"
expect 1 status --json -s "$tmp/none.sock"
expect 1 route-test -s "$tmp/none.sock" 192.0.2.1
# --watch ends with the daemon's absence (not a loop of errors).
expect 1 status --watch -s "$tmp/none.sock"
expect 1 status -w 1 -s "$tmp/none.sock"
# success: 0
expect 0 check -q -c "$tmp/good.yaml"
expect 0 help
expect 0 help status
expect 0 status --help
expect 0 run --help
expect 0 version
expect 0 route-test -c "$tmp/good.yaml" 192.0.2.1
expect 0 route-test --udp --port 53 --src 10.0.0.2 -c "$tmp/good.yaml" a.example
expect 0 --version

# Error messages name the file, line and column.
"$TUNSPLIT" check -c "$tmp/unknown.yaml" 2>"$tmp/err"
grep -q "unknown.yaml:4:3: client.bogus: unknown key" "$tmp/err" ||
    { echo "FAIL: error text: $(cat "$tmp/err")"; fails=$((fails + 1)); }

# check opens the files the configuration names (what run would trip on
# next), one line each on stderr; relative names are the file's own.
want_err() {	# want_err TEXT: the last command's stderr has TEXT
	grep -qF -- "$1" "$tmp/err" ||
	    { echo "FAIL: stderr lacks '$1':"; sed 's/^/    /' "$tmp/err"; fails=$((fails + 1)); }
}
if command -v openssl >/dev/null; then
	pki=$tmp/pki
	mkdir "$pki"
	mkcert() {	# mkcert NAME DAYS
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
		    -nodes -keyout "$pki/$1.key" -out "$pki/$1.pem" -days "$2" \
		    -subj "/CN=$1.example" >/dev/null 2>&1 ||
		    { echo "FAIL: openssl req"; exit 1; }
	}
	mkcert a 365
	mkcert b 365
	mkcert short 2
	server() {	# server FILE CERT KEY
		printf 'server:\n  listen: "127.0.0.1:1"\n  cert: %s\n  cert_key: %s\n  users:\n    - name: a\n      key: "%s"\n' \
		    "$2" "$3" "$key" >"$pki/$1"
	}
	server good.yaml a.pem a.key
	server missing.yaml nope.pem a.key
	server nokey.yaml a.pem nope.key
	server mismatch.yaml a.pem b.key
	server notpem.yaml good.yaml a.key
	server keynotpem.yaml a.pem a.pem
	server short.yaml short.pem short.key
	printf 'client:\n  server: "127.0.0.1:1"\n  key: "%s"\n  ca: b.pem\n' "$key" >"$pki/ca.yaml"
	printf 'client:\n  server: "127.0.0.1:1"\n  key: "%s"\n  ca: none.pem\n' "$key" >"$pki/noca.yaml"
	printf 'client:\n  server: "127.0.0.1:1"\n  key: "%s"\n  ca: a.key\n' "$key" >"$pki/badca.yaml"
	expect 0 check -q -c "$pki/good.yaml"
	expect 0 check -q -c "$pki/ca.yaml"
	expect 0 check -q -c "$pki/short.yaml"
	expect 3 check -q -c "$pki/missing.yaml"
	expect 3 check -q -c "$pki/nokey.yaml"
	expect 3 check -q -c "$pki/mismatch.yaml"
	expect 3 check -q -c "$pki/notpem.yaml"
	expect 3 check -q -c "$pki/keynotpem.yaml"
	expect 3 check -q -c "$pki/noca.yaml"
	expect 3 check -q -c "$pki/badca.yaml"
	# From another directory, by a relative name: the same files.
	(cd "$tmp" && "$TUNSPLIT" check -c pki/good.yaml >"$tmp/out" 2>"$tmp/err")
	[ $? = 0 ] || { echo "FAIL: check -c pki/good.yaml from $tmp"; fails=$((fails + 1)); }
	want_err "tunsplit check: cert $pki/a.pem: ok, /CN=a.example, 1 certificate, valid until"
	want_err "tunsplit check: cert_key $pki/a.key: ok, matches the certificate"
	grep -qx "  cert: \"$pki/a.pem\"" "$tmp/out" ||
	    { echo "FAIL: check prints cert as: $(grep cert: "$tmp/out")"; fails=$((fails + 1)); }
	"$TUNSPLIT" check -q -c "$pki/good.yaml" >"$tmp/out" 2>"$tmp/err"
	[ -s "$tmp/out" ] || [ -s "$tmp/err" ] &&
	    { echo "FAIL: check -q printed: $(cat "$tmp/out" "$tmp/err")"; fails=$((fails + 1)); }
	"$TUNSPLIT" check -q -c "$pki/missing.yaml" 2>"$tmp/err"
	want_err "tunsplit check: cert $pki/nope.pem: No such file or directory"
	"$TUNSPLIT" check -q -c "$pki/mismatch.yaml" 2>"$tmp/err"
	want_err "tunsplit check: cert_key $pki/b.key: does not match the certificate in $pki/a.pem"
	"$TUNSPLIT" check -q -c "$pki/short.yaml" 2>"$tmp/err"
	want_err "tunsplit check: cert $pki/short.pem: warning: expires on "
	"$TUNSPLIT" check -q -c "$pki/noca.yaml" 2>"$tmp/err"
	want_err "tunsplit check: ca $pki/none.pem: No such file or directory"
	"$TUNSPLIT" check -q -c "$pki/badca.yaml" 2>"$tmp/err"
	want_err "tunsplit check: ca $pki/a.key: no PEM certificate in it"
	# run checks the same files before it starts: in the foreground and
	# with -d, the reason is on stderr (not in a syslog) and the status
	# is 3, before anything is opened or forked.  Server files only: a
	# client that got past the check would open a TUN device here.
	expect 3 run -d -c "$pki/missing.yaml"
	"$TUNSPLIT" run -d -c "$pki/missing.yaml" 2>"$tmp/err"
	want_err "tunsplit run: cert $pki/nope.pem: No such file or directory"
	expect 3 run -c "$pki/mismatch.yaml"
	expect 3 run -d -c "$pki/mismatch.yaml"
	"$TUNSPLIT" run -d -c "$pki/mismatch.yaml" 2>"$tmp/err"
	want_err "tunsplit run: cert_key $pki/b.key: does not match the certificate in $pki/a.pem"
	# The printed configuration loads as it is with --secrets; without,
	# it says why not.
	"$TUNSPLIT" check --secrets -c "$pki/good.yaml" >"$tmp/eff.yaml" 2>/dev/null
	expect 0 check -q -c "$tmp/eff.yaml"
	"$TUNSPLIT" check -c "$tmp/eff.yaml" 2>/dev/null | grep -q "key: (redacted)" ||
	    { echo "FAIL: check prints a key"; fails=$((fails + 1)); }
	"$TUNSPLIT" check -c "$pki/good.yaml" >"$tmp/red.yaml" 2>/dev/null
	"$TUNSPLIT" check -q -c "$tmp/red.yaml" 2>"$tmp/err"
	want_err "key: the secret was redacted by tunsplit check"
else
	echo "SKIP: no openssl: check's certificate cases"
fi

[ "$fails" = 0 ] || { echo "FAIL: $fails cases"; exit 1; }
echo "PASS: cli_exit"
