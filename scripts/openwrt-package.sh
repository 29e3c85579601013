#!/bin/sh
# openwrt-package.sh: the OpenWrt SDK package of a release, ready to copy.
#
#   scripts/openwrt-package.sh TARBALL OUTDIR
#
# TARBALL is what `make dist` made (tunsplit-VERSION.tar.gz).  OUTDIR gets
# tunsplit/ (examples/openwrt/tunsplit with PKG_VERSION and PKG_HASH set
# from the tarball) and dl/TARBALL; then:
#
#   cp -r OUTDIR/tunsplit $SDK/package/net/ && cp OUTDIR/dl/* $SDK/dl/
#   cd $SDK && make package/tunsplit/compile V=s
set -eu

[ $# -eq 2 ] || { echo "usage: $0 TARBALL OUTDIR" >&2; exit 2; }
tarball=$1 out=$2
srcdir=$(cd "$(dirname "$0")/.." && pwd)
base=${tarball##*/}
case $base in
tunsplit-*.tar.gz) version=${base#tunsplit-}; version=${version%.tar.gz} ;;
*) echo "$0: $base is not tunsplit-VERSION.tar.gz" >&2; exit 2 ;;
esac
[ -r "$tarball" ] || { echo "$0: cannot read $tarball" >&2; exit 1; }
hash=$(sha256sum "$tarball" | cut -d' ' -f1)

mkdir -p "$out/dl"
rm -rf "$out/tunsplit"
cp -r "$srcdir/examples/openwrt/tunsplit" "$out/tunsplit"
cp "$tarball" "$out/dl/$base"
sed -i -e "s/^PKG_VERSION:=.*/PKG_VERSION:=$version/" \
    -e "s/^PKG_HASH:=.*/PKG_HASH:=$hash/" "$out/tunsplit/Makefile"
echo "$out/tunsplit: version $version, sha256 $hash"
