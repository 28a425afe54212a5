#!/usr/bin/env bash
# Builds the binaries pinned by e2e/tools/go.mod (and Helm, pinned by its own
# module e2e/tools/helm/go.mod) into a cache outside the clone and prints the
# bin directory on its last line.
#
#   e2e/tools/build.sh                  build every tool (the default)
#   e2e/tools/build.sh controller-gen   build only the named tools
#
# The cache directory is keyed by a hash of both modules' go.mod and go.sum, this script and the
# Go toolchain, so a change to any pin builds afresh and anything else reuses
# what is there. A binary appears in the cache only once it is fully built
# (written under a temporary name, then renamed), and a stamp file marks a
# complete set, so a second run returns at once.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

# name => main package; the etcd main sits at the root of its module.
declare -A tool_pkgs=(
	[etcd]=go.etcd.io/etcd/server/v3
	[kube-apiserver]=k8s.io/kubernetes/cmd/kube-apiserver
	[kube-controller-manager]=k8s.io/kubernetes/cmd/kube-controller-manager
	[kube-scheduler]=k8s.io/kubernetes/cmd/kube-scheduler
	[kubectl]=k8s.io/kubernetes/cmd/kubectl
	[kubelet]=k8s.io/kubernetes/cmd/kubelet
	[kube-proxy]=k8s.io/kubernetes/cmd/kube-proxy
	[kwok]=sigs.k8s.io/kwok/cmd/kwok
	[controller-gen]=sigs.k8s.io/controller-tools/cmd/controller-gen
	[helm]=helm.sh/helm/v4/cmd/helm
)
# The tools built from a module of their own, by its directory here: Helm requires
# k8s.io/* v0.37, which would move the control plane's v1.36 pins of go.mod.
declare -A tool_dirs=(
	[helm]=helm
)
all_tools=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok controller-gen helm)
# Built only when named (e2e/node/build.sh does): the real node's kubelet and
# kube-proxy, which no suite of `make test` needs.
node_tools=(kubelet kube-proxy)

log() { echo "build.sh: $*" >&2; }

key="$(
	{
		cat go.mod go.sum helm/go.mod helm/go.sum build.sh
		go env GOVERSION GOOS GOARCH
	} | sha256sum | cut -c1-16
)"
root="${XDG_CACHE_HOME:-$HOME/.cache}/ringfire/tools/$key"
bin="$root/bin"
stamp="$root/stamp"

if [[ $# -gt 0 ]]; then
	wanted=("$@")
else
	wanted=("${all_tools[@]}")
	if [[ -f "$stamp" ]]; then
		touch "$stamp" # marks the set as recently used, see prune_old_sets
		echo "$bin"
		exit 0
	fi
fi
for name in "${wanted[@]}"; do
	[[ -n "${tool_pkgs[$name]:-}" ]] || { log "unknown tool $name (known: ${all_tools[*]} ${node_tools[*]})"; exit 2; }
done

mkdir -p "$bin"

module_version() { go list -m -f '{{.Version}}' "$1"; }

# Kubernetes' own release build stamps its version into component-base and
# client-go; without it the API server reports v0.0.0-master.
kube_ldflags() {
	local v major minor flags="-s -w"
	v="$(module_version k8s.io/kubernetes)"
	major="${v#v}"
	major="${major%%.*}"
	minor="${v#v*.}"
	minor="${minor%%.*}"
	local pkg
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		flags+=" -X $pkg.gitVersion=$v -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
		# The module zip carries no commit; an empty one beats the placeholder.
		flags+=" -X $pkg.gitCommit= -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
	done
	echo "$flags"
}

ldflags_for() {
	case "$1" in
	kube-apiserver | kube-controller-manager | kube-scheduler | kubectl | kubelet | kube-proxy) kube_ldflags ;;
	# Helm's release build stamps its full version; without it `helm version` says v4.3.
	helm) echo "-s -w -X helm.sh/helm/v4/internal/version.version=$(cd "$here/helm" && module_version helm.sh/helm/v4)" ;;
	*) echo "-s -w" ;;
	esac
}

export CGO_ENABLED=0
# Two cores here: two compile jobs at a time, and never touch go.mod.
GOFLAGS="$(go env GOFLAGS) -p=2 -mod=readonly"
export GOFLAGS

# prune_old_sets keeps the three most recently used tool sets (other pins,
# other branches) and removes older ones; each set is a few hundred MB.
prune_old_sets() {
	local parent old
	parent="$(dirname "$root")"
	# shellcheck disable=SC2012 # names are our own hex keys
	for old in $(ls -1t "$parent"/*/stamp 2>/dev/null | tail -n +4); do
		rm -rf "$(dirname "$old")"
	done
}

start=$SECONDS
for name in "${wanted[@]}"; do
	if [[ -x "$bin/$name" ]]; then
		continue
	fi
	tmp="$bin/.$name.tmp.$$"
	log "building $name (${tool_pkgs[$name]})"
	t0=$SECONDS
	if ! (cd "$here/${tool_dirs[$name]:-.}" && go build -trimpath -ldflags "$(ldflags_for "$name")" -o "$tmp" "${tool_pkgs[$name]}"); then
		rm -f "$tmp"
		log "building $name failed"
		exit 1
	fi
	mv -f "$tmp" "$bin/$name"
	log "built $name in $((SECONDS - t0))s"
done

complete=1
for name in "${all_tools[@]}"; do
	[[ -x "$bin/$name" ]] || complete=0
done
if [[ $complete == 1 && ! -f "$stamp" ]]; then
	{
		echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) in $((SECONDS - start))s with $(go env GOVERSION)"
		for m in k8s.io/kubernetes go.etcd.io/etcd/server/v3 sigs.k8s.io/kwok sigs.k8s.io/controller-tools; do
			echo "$m $(module_version "$m")"
		done
		echo "helm.sh/helm/v4 $(cd helm && module_version helm.sh/helm/v4)"
	} >"$stamp.tmp.$$"
	mv -f "$stamp.tmp.$$" "$stamp"
	prune_old_sets
fi

echo "$bin"
