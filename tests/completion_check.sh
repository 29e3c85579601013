#!/bin/bash
# completion/tunsplit (the bash completion make install puts in place)
# offers every subcommand `tunsplit help` lists and every option each
# `tunsplit COMMAND --help` lists, so a new option cannot be forgotten
# there.  No root needed; part of make check.
set -u
TS_SRCDIR=${TS_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
[ -x "${TUNSPLIT:-}" ] || { echo "SKIP: no tunsplit binary (${TUNSPLIT:-})"; exit 77; }
# shellcheck source=/dev/null
. "$TS_SRCDIR/completion/tunsplit" || { echo "FAIL: cannot source completion/tunsplit"; exit 1; }

offered() {	# offered WORD...: what completing after these words offers
	COMP_WORDS=(tunsplit "$@" "")
	COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
	COMPREPLY=()
	_tunsplit
	printf '%s\n' "${COMPREPLY[@]}"
}

bad=0 n=0
cmds=$("$TUNSPLIT" help | sed -n '/^commands:/,/^$/s/^  \([a-z][a-z0-9-]*\)\( .*\)*$/\1/p')
[ -n "$cmds" ] || { echo "FAIL: no commands in 'tunsplit help'"; exit 1; }
top=$(offered)
for c in $cmds; do
	n=$((n + 1))
	grep -qx -- "$c" <<<"$top" || { echo "FAIL: command $c not completed"; bad=$((bad + 1)); }
	# Options: "  -x ...", "  -x, --long ...", "  --long ..." lines of --help.
	opts=$("$TUNSPLIT" "$c" --help |
	    grep -oE '^  (-[A-Za-z0-9](, --[a-z][a-z0-9-]*)?|--[a-z][a-z0-9-]*)' |
	    tr ',' ' ')
	got=$(offered "$c")
	for o in $opts; do
		n=$((n + 1))
		grep -qx -- "$o" <<<"$got" ||
		    { echo "FAIL: tunsplit $c $o not completed"; bad=$((bad + 1)); }
	done
done
# help takes a command name.
got=$(offered help)
for c in $cmds; do
	grep -qx -- "$c" <<<"$got" || { echo "FAIL: tunsplit help $c not completed"; bad=$((bad + 1)); }
done
if [ "$bad" -ne 0 ]; then
	echo "FAIL: $bad of $n commands and options missing from completion/tunsplit"
	exit 1
fi
echo "ok: completion/tunsplit offers all $n commands and options"
