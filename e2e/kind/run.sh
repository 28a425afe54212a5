#!/usr/bin/env bash
# The deployment suite (e2e/deploytest) on a kind cluster, with one fault more
# than on the local real node: a whole kind node killed with a replica and an
# etcd member on it, then started again.
#
#   e2e/kind/run.sh               build what is needed, create the cluster, deploy, test
#   e2e/kind/run.sh --keep        leave the cluster (and a dockerd it started) running
#   e2e/kind/run.sh --published   kind's published node image instead of one built
#                                 here (a machine with internet access)
#
# Root. Nothing is pulled from a registry unless --published: Docker is
# Debian's docker.io (installed when missing; a dockerd is started when none
# runs, and stopped at the end if this script started it); kind and kubeadm
# are built from e2e/kind/tools; the node image by e2e/kind/node-image.sh;
# ringfire's and etcd's images by e2e/node/images.sh, loaded with kind load
# image-archive. The pod network is wired from the host (node.sh network); the
# fake nodes the load's pods go to are KWOK's, played by a kwok process on the
# host with ringfire's stages; the etcd members' claims get a local
# PersistentVolume on each worker. docs/node.md has the numbers.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
name=ringfire
keep=0
published=0
for arg in "$@"; do
	case "$arg" in
	--keep) keep=1 ;;
	--published) published=1 ;;
	*) echo "usage: $0 [--keep] [--published]" >&2; exit 2 ;;
	esac
done
[[ $(id -u) == 0 ]] || { echo "kind/run.sh: needs root (Docker, debootstrap)" >&2; exit 1; }
work="$(mktemp -d)"
kubeconfig="$work/kubeconfig"
export RINGFIRE_KIND_CLUSTER="$name" RINGFIRE_KIND_KUBECONFIG="$kubeconfig"
log() { echo "kind/run.sh: $(date +%T) $*" >&2; }
dockerd_pid=
kwok_pid=
cleanup() {
	[[ -n $kwok_pid ]] && kill "$kwok_pid" 2>/dev/null || true
	if [[ $keep == 0 ]]; then
		[[ -x ${bin:-}/kind ]] && "$bin/kind" delete cluster --name "$name" >/dev/null 2>&1 || true
		if [[ -n $dockerd_pid ]]; then
			kill "$dockerd_pid" 2>/dev/null || true
			wait "$dockerd_pid" 2>/dev/null || true
		fi
	fi
	rm -rf "$work"
}
trap cleanup EXIT
t_start=$SECONDS

t0=$SECONDS
bin="$("$here/build.sh" | tail -n 1)"
export PATH="$bin:$PATH"
(cd "$repo" && CGO_ENABLED=0 go build -o "$bin/capfit" ./e2e/kind/capfit)

# Docker. A dockerd this script starts runs every container through capfit
# (capfit/main.go): Debian's engine gives a privileged container capabilities
# the machine may withhold, and kind's nodes are privileged.
if ! command -v dockerd >/dev/null; then
	log "installing Debian's docker.io"
	DEBIAN_FRONTEND=noninteractive apt-get install -y docker.io >&2
	# The package starts its dockerd, without capfit: this script owns it.
	if [[ -f /var/run/docker.pid ]]; then
		kill "$(cat /var/run/docker.pid)" 2>/dev/null || true
		for i in $(seq 1 30); do docker info >/dev/null 2>&1 || break; sleep 1; done
	fi
fi
if ! docker info >/dev/null 2>&1; then
	log "starting dockerd"
	dockerd --add-runtime "capfit=$bin/capfit" --default-runtime capfit >"$work/dockerd.log" 2>&1 &
	dockerd_pid=$!
	for i in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
	docker info >/dev/null 2>&1 || { log "dockerd did not start:"; tail -20 "$work/dockerd.log" >&2; exit 1; }
fi

image_args=()
if [[ $published == 0 ]]; then
	image="$("$here/node-image.sh" | tail -n 1)"
	image_args=(--image "$image")
	if ! out="$(docker run --rm --privileged --entrypoint /bin/true "$image" 2>&1)"; then
		log "the running dockerd cannot start a privileged container: $out"
		log "kind's nodes are privileged. Where the machine withholds a capability, run dockerd with"
		log "  --add-runtime capfit=$bin/capfit --default-runtime capfit, or stop it and let this script start its own"
		exit 1
	fi
fi
log "tools and node image ready in $((SECONDS - t0))s"
k() { kubectl --kubeconfig "$kubeconfig" "$@"; }

log "creating the kind cluster $name"
t0=$SECONDS
"$bin/kind" delete cluster --name "$name" >/dev/null 2>&1 || true
"$bin/kind" create cluster --config "$here/cluster.yaml" --kubeconfig "$kubeconfig" "${image_args[@]}"
"$here/node.sh" network
k wait --for=condition=Ready nodes --all --timeout=5m
# kube-proxy's DaemonSet tolerates every taint: keep it off the fake nodes.
k -n kube-system patch daemonset kube-proxy --type merge -p \
	'{"spec":{"template":{"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"type","operator":"NotIn","values":["kwok"]}]}]}}}}}}}'
log "cluster ready in $((SECONDS - t0))s"

log "building the images (e2e/node/images.sh) and loading them into the nodes"
etcd_tag=
"$repo/e2e/node/images.sh" "$work/images" e2e >"$work/images.txt" # its failure stops the run
while read -r ref archive; do
	"$bin/kind" load image-archive "$archive" --name "$name"
	[[ $ref == ringfire.local/etcd:* ]] && etcd_tag="${ref#*:}"
done <"$work/images.txt"

log "four fake nodes, played by kwok on this host with ringfire's stages"
(cd "$repo" && go run ./e2e/kind/stages) >"$work/stages.yaml"
"$bin/kwok" --kubeconfig="$kubeconfig" --config="$work/stages.yaml" --manage-all-nodes=false \
	--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake --node-ip=127.0.0.1 \
	--cidr=10.250.0.0/16 >"$work/kwok.log" 2>&1 &
kwok_pid=$!
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

log "a local PersistentVolume on each worker for the etcd members' claims"
for node in $("$bin/kind" get nodes --name "$name" | grep worker | sort); do
	docker exec "$node" mkdir -p /var/local-pv/etcd
	k apply -f - <<PV
apiVersion: v1
kind: PersistentVolume
metadata:
  name: etcd-$node
spec:
  capacity: {storage: 2Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Delete
  storageClassName: standard
  local: {path: /var/local-pv/etcd}
  nodeAffinity:
    required:
      nodeSelectorTerms:
        - matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [$node]}]
PV
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
RINGFIRE_DEPLOY_KUBECONFIG="$kubeconfig" RINGFIRE_KUBECTL="$bin/kubectl" \
	RINGFIRE_DEPLOY_NODE_FAULT="$here/node.sh" \
	go test -race -count=1 -timeout 30m -v -run TestDeployment ./e2e/deploytest/
log "done in $((SECONDS - t_start))s"
