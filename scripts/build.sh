#!/bin/bash
# Install the build and test dependencies (Debian 12), obtain lwIP, and build
# tunsplit out of tree.  Shared by scripts/demo.sh and scripts/test.sh; safe
# to re-run (packages already installed are not touched, lwIP is fetched once).
#
# usage: scripts/build.sh BUILD_DIR [configure options...]
# env:   TS_NO_APT=1   never call apt-get (dependencies are your business)
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: scripts/build.sh BUILD_DIR [configure options...]}
shift

DEPS=(build-essential autoconf automake libtool pkg-config libssl-dev
	libsodium-dev libyaml-dev libcmocka-dev libmaxminddb-dev nginx-light curl iproute2
	openssl python3 dnsmasq-base dnsutils iputils-ping trojan v2ray nftables)

say() { printf '==> %s\n' "$*"; }

installed() {
	dpkg-query -W -f='${Status}\n' "$1" 2>/dev/null | grep -q '^install ok installed$'
}

install_deps() {
	local missing=() p
	for p in "${DEPS[@]}"; do
		installed "$p" || missing+=("$p")
	done
	if [ ${#missing[@]} -eq 0 ]; then
		say "dependencies already installed"
		return 0
	fi
	if [ -n "${TS_NO_APT:-}" ]; then
		say "TS_NO_APT set; not installing: ${missing[*]}"
		return 0
	fi
	[ "$(id -u)" -eq 0 ] || {
		echo "build.sh: missing packages (${missing[*]}); run as root" >&2
		exit 1
	}
	say "installing: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	# Keep package scripts from starting services (nginx would otherwise
	# start a default site on the host); the demo runs its own nginx.
	local policy=/usr/sbin/policy-rc.d own_policy=
	if [ ! -e "$policy" ]; then
		printf '#!/bin/sh\nexit 101\n' >"$policy"
		chmod 755 "$policy"
		own_policy=1
	fi
	local rc=0
	{ apt-get update -q &&
	  apt-get install -y -q --no-install-recommends \
	    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
	    "${missing[@]}"; } </dev/null || rc=$?
	[ -n "$own_policy" ] && rm -f "$policy"
	[ $rc -eq 0 ] || { echo "build.sh: apt-get failed ($rc)" >&2; exit $rc; }
}

install_deps

say "obtaining lwIP"
"$top/scripts/get-lwip.sh" </dev/null

say "autoreconf"
(cd "$top" && autoreconf -fi)

say "configure in $build $*"
mkdir -p "$build"
cd "$build"
"$top/configure" -q "$@"

say "make"
make -j"$(nproc 2>/dev/null || echo 2)"
say "built $build/tunsplit"
