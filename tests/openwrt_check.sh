#!/bin/sh
# The OpenWrt package's shell parts, without OpenWrt:
#  - tunsplit-uci2yaml turns the shipped /etc/config/tunsplit (read with a
#    small stand-in for `uci show`, below) into YAML that `tunsplit check`
#    accepts, keeping every option (route_exclude as a list, tun_mtu under
#    tun:, a quote, a double quote and a backslash in a value intact);
#  - it refuses an unknown option, a list for a single value, a word for a
#    number, a missing section main, and then writes nothing;
#  - the uci-defaults script asks uci for a fw4 zone on the TUN device and
#    a lan -> tunsplit forwarding, once (a fake uci records the batch);
#  - scripts/openwrt-package.sh puts the tarball's SHA-256 and version in
#    the package Makefile;
#  - the init script and the others parse (sh -n).
# Not tested here: procd, the real uci and fw4 on a router.
set -u
name=openwrt_check
srcdir=${TS_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
pkg=$srcdir/examples/openwrt/tunsplit
u2y=$pkg/files/tunsplit-uci2yaml
tunsplit=${TUNSPLIT:-}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tunsplit-$name.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { printf 'FAIL: %s: %s\n' "$name" "$*"; exit 1; }

# uci_show FILE: what `uci show tunsplit` prints for a UCI file (config,
# option and list lines, single- or double-quoted or bare values).
uci_show() {
	python3 - "$1" <<'EOF'
import shlex, sys
sect = None
lists = {}
out = []
def q(v):
    return "'" + v.replace("'", "'\\''") + "'"
for line in open(sys.argv[1]):
    w = shlex.split(line, comments=True)
    if not w:
        continue
    if w[0] == "config":
        sect = w[2]
        out.append(("tunsplit.%s" % sect, w[1]))
    elif w[0] == "option":
        out.append(("tunsplit.%s.%s" % (sect, w[1]), q(w[2])))
    elif w[0] == "list":
        k = "tunsplit.%s.%s" % (sect, w[1])
        if k not in lists:
            lists[k] = []
            out.append((k, None))
        lists[k].append(q(w[2]))
for k, v in out:
    print("%s=%s" % (k, v if v is not None else " ".join(lists[k])))
EOF
}

for f in "$u2y" "$pkg/files/tunsplit.init" "$pkg/files/tunsplit.uci-defaults" \
    "$srcdir/scripts/openwrt-package.sh"; do
	sh -n "$f" || fail "$f does not parse"
done

# ---- the shipped config, with a real key, CA and a tricky SNI ----------
uci_show "$pkg/files/tunsplit.config" >"$tmp/show" || fail "uci_show"
grep -q "^tunsplit.main.route_exclude='192.168.0.0/16' '10.0.0.0/8' '172.16.0.0/12'\$" \
    "$tmp/show" || fail "uci_show: $(cat "$tmp/show")"
sh "$u2y" <"$tmp/show" >"$tmp/out.yaml" 2>"$tmp/err" ||
    fail "the shipped config: $(cat "$tmp/err")"
grep -q '^  mtu: 1500$' "$tmp/out.yaml" && grep -q '^tun:$' "$tmp/out.yaml" &&
    grep -q '^  route_exclude:$' "$tmp/out.yaml" &&
    grep -q '^    - "172.16.0.0/12"$' "$tmp/out.yaml" &&
    grep -q '^  mark: 0x7353$' "$tmp/out.yaml" &&
    grep -q '^drain_timeout: "5s"$' "$tmp/out.yaml" ||
    fail "the shipped config's YAML: $(cat "$tmp/out.yaml")"
grep -q 'enabled' "$tmp/out.yaml" && fail "option enabled leaked into the YAML"

if [ -n "$tunsplit" ] && [ -x "$tunsplit" ] &&
    command -v openssl >/dev/null 2>&1; then
	(umask 077 && "$tunsplit" genkey >"$tmp/client.key") || fail "genkey"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -keyout "$tmp/ca.key" -out "$tmp/ca.pem" -days 2 \
	    -subj /CN=test-ca >/dev/null 2>&1 || fail "openssl req"
	grep -v -e '^tunsplit.main.key_file=' -e '^tunsplit.main.ca=' \
	    -e '^tunsplit.main.control=' "$tmp/show" >"$tmp/show2"
	cat >>"$tmp/show2" <<EOF
tunsplit.main.key_file='$tmp/client.key'
tunsplit.main.ca='$tmp/ca.pem'
tunsplit.main.control='$tmp/c'\''q"\\.sock'
EOF
	sh "$u2y" <"$tmp/show2" >"$tmp/t.yaml" 2>"$tmp/err" ||
	    fail "with a key: $(cat "$tmp/err")"
	"$tunsplit" check -c "$tmp/t.yaml" >"$tmp/eff.yaml" 2>"$tmp/err" ||
	    fail "tunsplit check refuses the YAML: $(cat "$tmp/err")$(cat "$tmp/t.yaml")"
	grep -qF "control: \"$tmp/c'q\\\"\\\\.sock\"" "$tmp/eff.yaml" ||
	    fail "the control path did not survive: $(grep control "$tmp/eff.yaml")"
	grep -q '172.16.0.0/12' "$tmp/eff.yaml" ||
	    fail "route_exclude lost: $(cat "$tmp/eff.yaml")"
fi

# ---- bad input: a clear error, nothing on stdout ------------------------
bad() {	# bad WHAT EXPECTED-MESSAGE LINE...: LINEs are the uci show
	b_what=$1 b_msg=$2
	shift 2
	printf '%s\n' "$@" >"$tmp/bad"
	set -- "$b_what" "$b_msg"
	if sh "$u2y" <"$tmp/bad" >"$tmp/bad.out" 2>"$tmp/bad.err"; then
		fail "$1: accepted"
	fi
	[ -s "$tmp/bad.out" ] && fail "$1: wrote YAML anyway"
	grep -q -- "$2" "$tmp/bad.err" || fail "$1: message '$(cat "$tmp/bad.err")'"
}
bad "a misspelt option" "unknown option sever" \
    "tunsplit.main=tunsplit" "tunsplit.main.sever='x:1'"
bad "a list for server" "option server: one value wanted, got 2" \
    "tunsplit.main=tunsplit" "tunsplit.main.server='a:1' 'b:2'"
bad "a word for tun_mtu" "option tun_mtu: not a number" \
    "tunsplit.main=tunsplit" "tunsplit.main.server='a:1'" \
    "tunsplit.main.tun_mtu='big'"
bad "a word for log_flows" "not a boolean" "tunsplit.main=tunsplit" \
    "tunsplit.main.server='a:1'" "tunsplit.main.log_flows='maybe'"
bad "an option twice" "option server given twice" "tunsplit.main=tunsplit" \
    "tunsplit.main.server='a:1'" "tunsplit.main.server='b:1'"
bad "an unterminated quote" "unterminated quote" "tunsplit.main=tunsplit" \
    "tunsplit.main.server='a:1"
bad "no section main" "no section tunsplit.main" \
    "tunsplit.other=tunsplit" "tunsplit.other.server='a:1'"
bad "no client options" "no client options" \
    "tunsplit.main=tunsplit" "tunsplit.main.log_level='info'"
sh "$u2y" extra </dev/null >/dev/null 2>&1 && fail "an argument was accepted"

# ---- uci-defaults: the firewall zone, once --------------------------------
mkdir -p "$tmp/bin"
cat >"$tmp/bin/uci" <<EOF
#!/bin/sh
# a fake uci: get answers from \$tmp/uci.get, batch is recorded
[ "\$1" = -q ] && shift
case \$1 in
get) grep "^\$2=" "$tmp/uci.get" | cut -d= -f2- | grep . ;;
batch) cat >>"$tmp/uci.batch" ;;
*) exit 1 ;;
esac
EOF
chmod +x "$tmp/bin/uci"
printf 'tunsplit.main.tun_name=tun7\n' >"$tmp/uci.get"
PATH="$tmp/bin:$PATH" sh "$pkg/files/tunsplit.uci-defaults" ||
    fail "uci-defaults failed"
for l in "set firewall.tunsplit=zone" "add_list firewall.tunsplit.device='tun7'" \
    "set firewall.tunsplit.input='REJECT'" "set firewall.tunsplit.forward='REJECT'" \
    "set firewall.tunsplit_lan.src='lan'" "set firewall.tunsplit_lan.dest='tunsplit'" \
    "commit firewall"; do
	grep -qxF "$l" "$tmp/uci.batch" || fail "uci-defaults: no '$l' in: $(cat "$tmp/uci.batch")"
done
printf 'firewall.tunsplit=zone\n' >>"$tmp/uci.get"
: >"$tmp/uci.batch"
PATH="$tmp/bin:$PATH" sh "$pkg/files/tunsplit.uci-defaults" ||
    fail "uci-defaults failed the second time"
[ -s "$tmp/uci.batch" ] && fail "uci-defaults changed an existing zone"

# ---- openwrt-package.sh ---------------------------------------------------
printf 'not really a tarball\n' >"$tmp/tunsplit-9.8.7.tar.gz"
sh "$srcdir/scripts/openwrt-package.sh" "$tmp/tunsplit-9.8.7.tar.gz" \
    "$tmp/pkgout" >"$tmp/p.out" 2>&1 || fail "openwrt-package.sh: $(cat "$tmp/p.out")"
want=$(sha256sum "$tmp/tunsplit-9.8.7.tar.gz" | cut -d' ' -f1)
grep -qx "PKG_HASH:=$want" "$tmp/pkgout/tunsplit/Makefile" &&
    grep -qx "PKG_VERSION:=9.8.7" "$tmp/pkgout/tunsplit/Makefile" &&
    cmp -s "$tmp/tunsplit-9.8.7.tar.gz" "$tmp/pkgout/dl/tunsplit-9.8.7.tar.gz" ||
    fail "openwrt-package.sh: $(grep -e PKG_HASH -e PKG_VERSION "$tmp/pkgout/tunsplit/Makefile")"
grep -qx "PKG_HASH:=skip" "$pkg/Makefile" || fail "the source package's Makefile was changed"

printf 'PASS: %s\n' "$name"
