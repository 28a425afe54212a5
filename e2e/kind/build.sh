#!/usr/bin/env bash
# Builds what e2e/kind needs beside the real node's pieces (e2e/node/build.sh),
# from the pins of e2e/kind/tools, into the same directory, and prints it on
# its last line:
#
#   kind      sigs.k8s.io/kind, the cluster tool
#   kubeadm   the control plane's Kubernetes version: the node image's bootstrapper
#   coredns   tools/coredns: the plugins kubeadm's Corefile names (for the node image)
#
# Each is written under a temporary name and renamed once built; a stamp keyed
# by the module, its commands and this script makes a second run return at once.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
log() { echo "kind/build.sh: $*" >&2; }

bin="$("$here/../node/build.sh" | tail -n 1)"

cd "$here/tools"
export CGO_ENABLED=0
GOFLAGS="$(go env GOFLAGS) -p=2 -mod=readonly"
export GOFLAGS
declare -A pkgs=(
	[kind]=sigs.k8s.io/kind
	[kubeadm]=k8s.io/kubernetes/cmd/kubeadm
	[coredns-kind]=./coredns
)
key="$({
	cat go.mod go.sum coredns/*.go ../build.sh
	go env GOVERSION
} | sha256sum | cut -c1-16)"
stamp="$bin/.kind-tools.$key"
if [[ -f "$stamp" ]]; then
	echo "$bin"
	exit 0
fi
for name in kind kubeadm coredns-kind; do
	tmp="$bin/.$name.tmp.$$"
	log "building $name (${pkgs[$name]})"
	t0=$SECONDS
	ldflags="-s -w"
	if [[ $name == kubeadm ]]; then
		# As e2e/tools/build.sh stamps the control plane: kubeadm reads its own
		# version to pick the images and the kubelet configuration.
		v="$(go list -m -f '{{.Version}}' k8s.io/kubernetes)"
		major="${v#v}"; major="${major%%.*}"
		minor="${v#v*.}"; minor="${minor%%.*}"
		for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
			ldflags+=" -X $pkg.gitVersion=$v -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
		done
	fi
	if ! go build -trimpath -ldflags "$ldflags" -o "$tmp" "${pkgs[$name]}"; then
		rm -f "$tmp"
		log "building $name failed"
		exit 1
	fi
	mv -f "$tmp" "$bin/$name"
	log "built $name in $((SECONDS - t0))s"
done
touch "$stamp"
echo "$bin"
