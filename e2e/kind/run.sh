#!/usr/bin/env bash
# The deployment suite (e2e/deploytest) against a kind cluster, where Docker
# runs: the same faults through kubectl as on the local real node.
#
#   e2e/kind/run.sh            create the cluster, load the images, deploy, test
#   e2e/kind/run.sh --keep     leave the cluster running afterwards
#
# Needs docker, kind (sigs.k8s.io/kind) and network access for kind's node
# image and kwok's (registry.k8s.io). Steps: kind create cluster
# (cluster.yaml: a control plane and three workers); the images built
# without Docker by e2e/node/images.sh, loaded with kind load image-archive;
# kwok's controller and ringfire's KWOK stages, and four fake nodes
# (label type=kwok, taint kwok.x-k8s.io/node=fake:NoSchedule) for the load's
# pods; the CRDs, the etcd certificates and deploy/ (overlay/); then
# `go test ./e2e/deploytest` with RINGFIRE_DEPLOY_KUBECONFIG.
#
# Not run on ringfire's CI machine, which has no Docker engine: there the
# same suite runs on a real kubelet node (`make node-test`, docs/node.md).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
name=ringfire
keep=0
[[ ${1:-} == --keep ]] && keep=1
kwok_version=v0.8.0 # as e2e/tools pins it
work="$(mktemp -d)"
kubeconfig="$work/kubeconfig"
log() { echo "kind/run.sh: $*" >&2; }
cleanup() {
	rm -rf "$work"
	if [[ $keep == 0 ]]; then kind delete cluster --name "$name" >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

for bin in docker kind kubectl go; do
	command -v "$bin" >/dev/null || { log "needs $bin on PATH"; exit 1; }
done
k() { kubectl --kubeconfig "$kubeconfig" "$@"; }

log "creating the kind cluster $name"
kind create cluster --config "$here/cluster.yaml" --kubeconfig "$kubeconfig" --wait 5m

log "building the images (e2e/node/images.sh) and loading them into the nodes"
etcd_tag=
while read -r ref archive; do
	kind load image-archive "$archive" --name "$name"
	[[ $ref == ringfire.local/etcd:* ]] && etcd_tag="${ref#*:}"
done < <("$repo/e2e/node/images.sh" "$work/images" e2e)

log "installing kwok $kwok_version, its stages and four fake nodes"
k apply -f "https://github.com/kubernetes-sigs/kwok/releases/download/$kwok_version/kwok.yaml"
k -n kube-system rollout status deployment/kwok-controller --timeout=5m
(cd "$repo" && go run ./e2e/kind/stages) | k apply -f -
for i in 0 1 2 3; do
	k apply -f - <<NODE
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-$i
  labels: {type: kwok, kubernetes.io/hostname: kwok-node-$i, kubernetes.io/os: linux, kubernetes.io/arch: amd64}
  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: "0"}
spec:
  taints: [{key: kwok.x-k8s.io/node, value: fake, effect: NoSchedule}]
status:
  allocatable: {cpu: "32", memory: 256Gi, pods: "110"}
  capacity: {cpu: "32", memory: 256Gi, pods: "110"}
NODE
done

log "installing the CRDs, the etcd certificates and deploy/"
# The Queues in deploy/crds need their CRD established: a second apply takes them.
k apply --server-side -k "$repo/deploy/crds" >/dev/null 2>&1 || true
sleep 5
k apply --server-side -k "$repo/deploy/crds"
k create namespace ringfire-system
"$work/images/ringfire" certs --namespace ringfire-system | k apply -f -
mkdir -p "$work/overlay"
sed "s/ETCD_TAG/$etcd_tag/" "$here/overlay/kustomization.yaml" >"$work/overlay/kustomization.yaml"
rel="$(realpath --relative-to="$work/overlay" "$repo/deploy")"
sed -i "s#../../../deploy#$rel#" "$work/overlay/kustomization.yaml"
k apply -k "$work/overlay"

log "running the deployment suite"
cd "$repo"
RINGFIRE_DEPLOY_KUBECONFIG="$kubeconfig" RINGFIRE_KUBECTL="$(command -v kubectl)" \
	go test -race -count=1 -timeout 30m -v -run TestDeployment ./e2e/deploytest/
