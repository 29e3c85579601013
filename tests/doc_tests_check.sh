#!/bin/sh
# doc/TESTING.md lists every end-to-end test; this keeps it so.
#
#   1. Every tests/netns/*/*.sh is named in doc/TESTING.md, as `name.sh`.
#   2. Every test a table row of doc/TESTING.md names in its first cell
#      (`name.sh`, without a directory) exists in tests/netns/*/.
#
# Each miss is printed on its own line.  No root needed; part of make check.
set -u

top=${TS_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$top" || exit 1
doc=doc/TESTING.md

if [ ! -f "$doc" ]; then
	echo "FAIL: doc_tests_check: no $doc under $top"
	exit 1
fi

bad=0 n=0
for t in tests/netns/*/*.sh; do
	[ -f "$t" ] || continue
	n=$((n + 1))
	name=${t##*/}
	if ! grep -qF "\`$name\`" "$doc"; then
		echo "$t: not named in $doc (add a row to its table)"
		bad=$((bad + 1))
	fi
done
if [ "$n" -eq 0 ]; then
	echo "FAIL: doc_tests_check: no tests found in tests/netns/*/ under $top"
	exit 1
fi

# The first cell of each table row: `a.sh`, `b.sh` | ...  (The backquotes
# are Markdown's, not the shell's.)
# shellcheck disable=SC2016
rows=$(sed -n 's/^| \(`[^|]*`\) |.*/\1/p' "$doc" | tr ',' '\n' |
    sed -n 's/^ *`\([A-Za-z0-9_.-]*\.sh\)` *$/\1/p')
for name in $rows; do
	set -- tests/netns/*/"$name"
	if [ ! -f "$1" ]; then
		echo "$doc: names $name, which is not in tests/netns/*/"
		bad=$((bad + 1))
	fi
done

if [ "$bad" -gt 0 ]; then
	echo "FAIL: doc_tests_check: $bad test(s) and $doc disagree"
	exit 1
fi
echo "PASS: doc_tests_check: all $n tests in tests/netns/*/ are in $doc"
