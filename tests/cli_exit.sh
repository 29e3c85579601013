#!/bin/sh
# tunsplit's documented exit status (tunsplit(8), EXIT STATUS): 0 success,
# 1 runtime failure, 2 usage error, 3 configuration error.  No root, no
# network: every command here fails before it would touch either.
set -u
TUNSPLIT=${TUNSPLIT:-./tunsplit}
[ -x "$TUNSPLIT" ] || { echo "SKIP: no tunsplit binary ($TUNSPLIT)"; exit 77; }
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
expect 2 help frobnicate
expect 2 genkey extra
# configuration errors: 3
expect 3 run -c "$tmp/missing.yaml"
expect 3 run -c "$tmp/unknown.yaml"
expect 3 check -c "$tmp/syntax.yaml"
expect 3 check -q -c "$tmp/metrics.yaml"
expect 3 check -q -c "$tmp/route.yaml"
expect 3 status -c "$tmp/off.yaml"
expect 3 status -c "$tmp/missing.yaml"
# runtime failures: 1 (no daemon behind the socket)
expect 1 status -s "$tmp/none.sock"
expect 1 status -c "$tmp/good.yaml"
expect 1 status --json -s "$tmp/none.sock"
# success: 0
expect 0 check -q -c "$tmp/good.yaml"
expect 0 help
expect 0 help status
expect 0 status --help
expect 0 run --help
expect 0 version
expect 0 --version

# Error messages name the file, line and column.
"$TUNSPLIT" check -c "$tmp/unknown.yaml" 2>"$tmp/err"
grep -q "unknown.yaml:4:3: client.bogus: unknown key" "$tmp/err" ||
    { echo "FAIL: error text: $(cat "$tmp/err")"; fails=$((fails + 1)); }

[ "$fails" = 0 ] || { echo "FAIL: $fails cases"; exit 1; }
echo "PASS: cli_exit"
