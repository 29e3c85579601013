#!/bin/sh
# Fetch the unmodified lwIP 2.1.x source into ./lwip (or $1) from Debian's
# source package.  Only the upstream tarball (*.orig.tar.*) is unpacked:
# Debian's patches touch opt.h and init.c, and we build unmodified lwIP.
#
# apt-get source needs a deb-src entry.  When the machine has none, the
# entries are derived from its own deb entries (the same URIs, suites,
# components and options; Types: deb-src), in both formats apt reads:
# one-line "deb ..." lines (sources.list, *.list) and deb822 stanzas
# (*.sources).  They go into one file of their own in sources.list.d,
# are printed, and are removed again when the script exits, followed by
# an apt-get update that drops their indices.  No mirror host is ever
# written that the machine did not already use.  When stdin is a
# terminal it asks first (GET_LWIP_YES=1 answers yes).  apt's own
# configuration (APT_CONFIG, Dir::Etc::*) says where the sources are.
#
#   scripts/get-lwip.sh [DIR]          fetch and unpack into DIR
#   scripts/get-lwip.sh --print-debsrc print the entries it would derive
set -eu

eval "$(apt-config shell SRCLIST Dir::Etc::sourcelist/f \
    SRCPARTS Dir::Etc::sourceparts/d)"
SRCLIST=${SRCLIST:-/etc/apt/sources.list}
SRCPARTS=${SRCPARTS:-/etc/apt/sources.list.d/}
SRCPARTS=${SRCPARTS%/}
added_list=$SRCPARTS/tunsplit-get-lwip-src.list
added_sources=$SRCPARTS/tunsplit-get-lwip-src.sources

list_files() {	# the one-line format files apt reads
	[ -f "$SRCLIST" ] && echo "$SRCLIST"
	for f in "$SRCPARTS"/*.list; do [ -f "$f" ] && echo "$f"; done
	return 0
}
sources_files() {	# the deb822 files apt reads
	for f in "$SRCPARTS"/*.sources; do [ -f "$f" ] && echo "$f"; done
	return 0
}

have_debsrc() {
	# shellcheck disable=SC2046
	{ grep -qsE '^[[:space:]]*deb-src[[:space:]]' $(list_files) /dev/null ||
	  awk -v RS= '
	    /(^|\n)Types:[^\n]*deb-src/ && !/(^|\n)Enabled:[[:space:]]*(no|false)/ { f = 1 }
	    END { exit !f }' $(sources_files) /dev/null; }
}

derive_list() {	# deb lines -> deb-src lines
	# shellcheck disable=SC2046
	sed -n 's/^[[:space:]]*deb\([[:space:]]\)/deb-src\1/p' $(list_files) /dev/null
}

derive_sources() {	# deb822 stanzas with Types: deb -> Types: deb-src
	# shellcheck disable=SC2046
	awk '
	function flush() {
		if (n > 0 && deb && !off) {
			if (out++) print ""
			for (i = 1; i <= n; i++) print s[i]
		}
		n = 0; deb = 0; off = 0
	}
	FNR == 1 { flush() }
	/^#/ { next }
	/^[[:space:]]*$/ { flush(); next }
	/^Types:/ {
		if ($0 ~ /[[:space:]]deb([[:space:]]|$)/) deb = 1
		s[++n] = "Types: deb-src"; next
	}
	/^Enabled:[[:space:]]*(no|false)/ { off = 1 }
	{ s[++n] = $0 }
	END { flush() }' $(sources_files) /dev/null
}

if [ "${1:-}" = --print-debsrc ]; then
	derive_list
	derive_sources
	exit 0
fi

dest=${1:-$(cd "$(dirname "$0")/.." && pwd)/lwip}
if [ -f "$dest/src/include/lwip/init.h" ]; then
	echo "get-lwip: $dest already holds lwIP"
	exit 0
fi

# Versions before this one wrote a deb.debian.org entry here and left it.
old=$SRCPARTS/tunsplit-debsrc.sources
if [ -f "$old" ]; then
	echo "get-lwip: note: $old was left by an earlier get-lwip.sh;" \
	    "remove it if this machine should not have it"
fi

work=$(mktemp -d)
added=
cleanup() {
	rm -rf "$work"
	if [ -n "$added" ]; then
		rm -f "$added_list" "$added_sources"
		echo "get-lwip: removed the deb-src entries it added; apt-get update"
		apt-get update -qq || true
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if ! have_debsrc; then
	[ "$(id -u)" -eq 0 ] || { echo "get-lwip: no deb-src entry and not root; run as root or pass --with-lwip=DIR to configure" >&2; exit 1; }
	derive_list >"$work/src.list"
	derive_sources >"$work/src.sources"
	[ -s "$work/src.list" ] || [ -s "$work/src.sources" ] || {
		echo "get-lwip: no deb-src entry and no deb entry to derive one from in $SRCLIST or $SRCPARTS" >&2
		exit 1; }
	echo "get-lwip: no deb-src entry; adding these, derived from your deb entries, for this run only:"
	for f in list sources; do
		[ -s "$work/src.$f" ] || continue
		case $f in list) to=$added_list ;; *) to=$added_sources ;; esac
		echo "  $to:"
		sed 's/^/    /' "$work/src.$f"
	done
	if [ -t 0 ] && [ -z "${GET_LWIP_YES:-}" ]; then
		printf 'get-lwip: add them (removed again when done)? [Y/n] '
		read -r ans || ans=n
		case $ans in [nN]*) echo "get-lwip: nothing added" >&2; exit 1 ;; esac
	fi
	added=yes
	[ -s "$work/src.list" ] && cp "$work/src.list" "$added_list"
	[ -s "$work/src.sources" ] && cp "$work/src.sources" "$added_sources"
	apt-get update -qq ||
	    echo "get-lwip: apt-get update reported errors; trying apt-get source anyway" >&2
fi

(cd "$work" && apt-get source --download-only -qq lwip >/dev/null 2>&1) || {
	apt-get update -qq
	(cd "$work" && apt-get source --download-only -qq lwip)
}
orig=$(ls "$work"/lwip_*.orig.tar.* 2>/dev/null | head -n 1)
[ -n "$orig" ] || { echo "get-lwip: no lwip orig tarball downloaded" >&2; exit 1; }
mkdir -p "$work/x"
tar -C "$work/x" -xf "$orig"
top=$(ls -d "$work"/x/*/ | head -n 1)
grep -q 'LWIP_VERSION_MAJOR *2' "$top/src/include/lwip/init.h" &&
grep -q 'LWIP_VERSION_MINOR *1' "$top/src/include/lwip/init.h" || {
	echo "get-lwip: $orig is not lwIP 2.1.x" >&2; exit 1; }
rm -rf "$dest"
mv "$top" "$dest"
echo "get-lwip: lwIP $(basename "$orig") unpacked (unpatched) into $dest"
