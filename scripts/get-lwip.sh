#!/bin/sh
# Fetch the unmodified lwIP 2.1.x source into ./lwip (or $1) from Debian's
# source package.  Only the upstream tarball (*.orig.tar.*) is unpacked:
# Debian's patches touch opt.h and init.c, and we build unmodified lwIP.
set -eu

dest=${1:-$(cd "$(dirname "$0")/.." && pwd)/lwip}
if [ -f "$dest/src/include/lwip/init.h" ]; then
	echo "get-lwip: $dest already holds lwIP"
	exit 0
fi

have_debsrc() {
	grep -rqsE '^(deb-src|Types:.*deb-src)' /etc/apt/sources.list /etc/apt/sources.list.d/
}

if ! have_debsrc; then
	[ "$(id -u)" -eq 0 ] || { echo "get-lwip: no deb-src entry and not root; run as root or pass --with-lwip=DIR to configure" >&2; exit 1; }
	echo "get-lwip: adding a deb-src entry for bookworm"
	cat > /etc/apt/sources.list.d/tunsplit-debsrc.sources <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
	apt-get update -qq
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
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
