#!/bin/sh
# The layout of src/ is the architecture (doc/DESIGN.md); this keeps it so.
# Every #include "dir/file.h" in the daemon's sources is checked against
# these rules, and each violation is printed as file:line: rule.
#
#   1. A private header (*_int.h) is included only from its own folder.
#   2. The roles do not see each other: nothing in src/client/ includes
#      src/server/, and nothing in src/server/ includes src/client/.
#   3. The layers below the roles include only what is below them:
#        core  -> core
#        wire  -> core wire
#        tls   -> core tls
#        rules -> core wire rules
#        conf  -> core wire rules conf
#        stack -> core stack
#   4. The daemon's machinery (control, status, daemon) is role-agnostic:
#      only daemon/main.c, which picks a role, includes src/client/ or
#      src/server/ -- and status.h the roles' public counter types (no
#      *_int.h, by rule 1).
#   5. tun/ and lwip-port/ stay at the top level, outside src/: they
#      include nothing from src/.
#   6. Sessions do not call up into the server: nothing in src/server/sess/
#      or src/server/dgram/ includes server/server.h.
#   7. Every .c in src/ and tun/ includes "config.h" first -- it defines
#      _GNU_SOURCE and friends, which every system header must see, the
#      same in every file -- and then its own header if it has one
#      (src/core/log.c: "core/log.h"), so each header shows that it
#      stands on its own.
#
# No root needed; part of make check.
set -u

top=${TS_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$top" || exit 1

bad=0
violate() { printf '%s: %s\n' "$1" "$2"; bad=$((bad + 1)); }

allowed_below() {	# allowed_below LAYER INCLUDED_TOP -> 0 if allowed
	case $1 in
	core)	[ "$2" = core ] ;;
	wire)	case $2 in core|wire) true ;; *) false ;; esac ;;
	tls)	case $2 in core|tls) true ;; *) false ;; esac ;;
	rules)	case $2 in core|wire|rules) true ;; *) false ;; esac ;;
	conf)	case $2 in core|wire|rules|conf) true ;; *) false ;; esac ;;
	stack)	case $2 in core|stack) true ;; *) false ;; esac ;;
	*)	true ;;
	esac
}

n=0
for f in $(find src tun lwip-port -name '*.[ch]' | sort); do
	n=$((n + 1))
	dir=$(dirname "$f")
	case $f in
	src/*)	top_of_f=$(echo "$f" | cut -d/ -f2) ;;
	*)	top_of_f=${f%%/*} ;;
	esac
	case $f in
	src/*.c|tun/*.c)
		incs=$(grep -n '^#include' "$f" | head -n 2)
		first=$(echo "$incs" | sed -n 1p)
		[ "${first#*:}" = '#include "config.h"' ] ||
		    violate "$f:${first%%:*}" "the first #include is not \"config.h\" (rule 7)"
		own=${f%.c}.h
		second=$(echo "$incs" | sed -n 2p)
		[ ! -f "$own" ] || [ "${second#*:}" = "#include \"${own#*/}\"" ] ||
		    violate "$f:${second%%:*}" "its own header ${own#*/} is not the second #include (rule 7)"
		;;
	esac
	grep -n '^#include "[a-z]*/[a-z0-9_/]*\.h"' "$f" | while IFS= read -r line; do
		ln=${line%%:*}
		inc=$(echo "$line" | sed 's/.*#include "\([^"]*\)".*/\1/')
		itop=${inc%%/*}
		[ -f "src/$inc" ] || continue	# lwIP's own "lwip/..." headers
		where="$f:$ln"
		case $inc in
		*_int.h)
			[ "src/$(dirname "$inc")" = "$dir" ] ||
			    violate "$where" "includes $inc, private to src/$(dirname "$inc")/ (rule 1)" ;;
		esac
		case $top_of_f/$itop in
		client/server|server/client)
			violate "$where" "the $top_of_f role includes $inc of the $itop role (rule 2)" ;;
		esac
		allowed_below "$top_of_f" "$itop" ||
		    violate "$where" "$top_of_f/ may not include $inc (rule 3)"
		case $f/$itop in
		src/daemon/main.c/*|src/daemon/status.h/*) ;;
		src/daemon/*/client|src/daemon/*/server)
			violate "$where" "daemon machinery includes $inc (rule 4)" ;;
		esac
		case $f/$inc in
		src/server/sess/*/server/server.h|src/server/dgram/*/server/server.h)
			violate "$where" "a session includes the server role's $inc (rule 6)" ;;
		esac
		case $top_of_f in
		tun|lwip-port)
			violate "$where" "$top_of_f/ includes $inc from src/ (rule 5)" ;;
		esac
	done
done >"${TMPDIR:-/tmp}/layout_check.$$"
out="${TMPDIR:-/tmp}/layout_check.$$"
bad=$(wc -l <"$out")
cat "$out"
rm -f "$out"
if [ "$n" -lt 50 ]; then
	echo "FAIL: layout_check: only $n sources found under $top"
	exit 1
fi
if [ "$bad" -gt 0 ]; then
	echo "FAIL: layout_check: $bad include(s) break the layout of src/"
	exit 1
fi
echo "PASS: layout_check: $n sources, every include within the layout"
