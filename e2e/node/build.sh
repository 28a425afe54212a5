#!/usr/bin/env bash
# Builds what the real node of the local control plane runs, and prints the bin
# directory on its last line (as e2e/tools/build.sh does):
#
#   kubelet, kube-proxy          from e2e/tools (the Kubernetes pins of the control plane),
#                                into e2e/tools/build.sh's directory
#   containerd, its runc shim, ctr  from e2e/node/tools (containerd's pins)
#   coredns, pause, mkimage      e2e/node/tools' own commands
#
# and checks the Debian packages the node needs (runc, the CNI plugins,
# iptables, iproute2); e2e/node/deps.sh installs them. The Go binaries land in
# one directory, the control plane's tools beside them. Each is written under a
# temporary name and renamed once built, so a second run returns at once.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
log() { echo "node/build.sh: $*" >&2; }

"$here/deps.sh" >&2
bin="$("$here/../tools/build.sh" kubelet kube-proxy | tail -n 1)"
"$here/../tools/build.sh" >/dev/null # the control plane's own tools, in the same directory

cd "$here/tools"
export CGO_ENABLED=0
GOFLAGS="$(go env GOFLAGS) -p=2 -mod=readonly"
export GOFLAGS
declare -A pkgs=(
	[containerd]=github.com/containerd/containerd/v2/cmd/containerd
	[ctr]=github.com/containerd/containerd/v2/cmd/ctr
	[containerd-shim-runc-v2]=github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2
	[coredns]=./coredns
	[pause]=./pause
	[mkimage]=./mkimage
)
# A stamp per build of this module: a change to its pins or commands builds afresh.
key="$({
	cat go.mod go.sum build.sh 2>/dev/null
	cat ../build.sh coredns/*.go pause/*.go mkimage/*.go
	go env GOVERSION
} | sha256sum | cut -c1-16)"
stamp="$bin/.node-tools.$key"
if [[ -f "$stamp" ]]; then
	echo "$bin"
	exit 0
fi
for name in containerd containerd-shim-runc-v2 ctr coredns pause mkimage; do
	tmp="$bin/.$name.tmp.$$"
	log "building $name (${pkgs[$name]})"
	t0=$SECONDS
	# containerd's snapshotters for btrfs and ZFS and its device-mapper one need
	# cgo and system libraries; the node uses overlayfs.
	if ! go build -trimpath -tags "no_btrfs no_zfs no_devmapper" -ldflags "-s -w" -o "$tmp" "${pkgs[$name]}"; then
		rm -f "$tmp"
		log "building $name failed"
		exit 1
	fi
	mv -f "$tmp" "$bin/$name"
	log "built $name in $((SECONDS - t0))s"
done
touch "$stamp"
echo "$bin"
