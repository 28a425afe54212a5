#!/usr/bin/env bash
# Installs Prometheus's two binaries, prometheus and promtool, for the tests of
# deploy/monitoring (the rule checker, the rule unit tests, the end-to-end run
# against a live ring) into a bin directory, and prints that directory on its
# last line, as build.sh does.
#
#   e2e/tools/prometheus.sh [BIN]   BIN: the directory; default: build.sh's
#
# They come from Debian's prometheus package, fetched with `apt-get download`
# and unpacked with `dpkg-deb -x`: nothing is installed into the system, no
# maintainer script runs, no daemon starts. The version is pinned below: Debian
# 12's Prometheus 2.42.0, under each package version Debian has published it
# (a security update replaces the older one in the archive, so the first one
# the archive serves is taken; PROMETHEUS_DEB_VERSION overrides the list); a
# stamp named for it and this script marks a finished install, so a second run
# returns at once.
#
# Where the package cannot be had (no apt-get, or no such version in the
# configured archive), the script says so and fails; the tests that need the
# binaries skip without them.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
versions="${PROMETHEUS_DEB_VERSION:-2.42.0+ds-5+deb12u1 2.42.0+ds-5+b6}" # Debian 12 (bookworm), newest first

log() { echo "prometheus.sh: $*" >&2; }

if [[ $# -gt 0 ]]; then
	bin="$1"
else
	bin="$("$here/build.sh" | tail -n 1)"
fi
key="$({
	cat "$here/prometheus.sh"
	echo "$versions"
} | sha256sum | cut -c1-16)"
stamp="$bin/.prometheus.$key"
if [[ -f "$stamp" && -x "$bin/prometheus" && -x "$bin/promtool" ]]; then
	echo "$bin"
	exit 0
fi

command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || {
	log "needs apt-get and dpkg-deb (a Debian or Ubuntu system); Prometheus not installed"
	exit 1
}

mkdir -p "$bin"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
if [[ $(id -u) == 0 ]] && id _apt >/dev/null 2>&1; then
	chown _apt "$work" # apt downloads as its sandbox user
fi
start=$SECONDS
# download fetches the first of $versions the archive serves, and sets version.
download() {
	for version in $versions; do
		if (cd "$work" && apt-get download -q "prometheus=$version" >&2); then
			return 0
		fi
	done
	return 1
}
if ! download; then
	if [[ $(id -u) == 0 ]]; then
		log "download failed; refreshing the package lists (apt-get update) and trying again"
		apt-get update -q >&2
		download
	else
		log "download of prometheus (any of $versions) failed; as root this script would run apt-get update first"
		exit 1
	fi
fi
dpkg-deb -x "$work"/prometheus_*.deb "$work/root"
for name in prometheus promtool; do
	mv -f "$work/root/usr/bin/$name" "$bin/.$name.tmp.$$"
	mv -f "$bin/.$name.tmp.$$" "$bin/$name"
done
rm -f "$bin"/.prometheus.* # an older version's stamp
echo "prometheus=$version installed $(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$stamp"
log "prometheus $version: $("$bin/prometheus" --version 2>&1 | head -n 1) in $((SECONDS - start))s"
echo "$bin"
