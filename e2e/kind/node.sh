#!/usr/bin/env bash
# The nodes of ringfire's kind cluster, from the host:
#
#   e2e/kind/node.sh network       wire the pod network: on every node, the CNI
#                                  config for its podCIDR and a route to every
#                                  other node's podCIDR through that node
#   e2e/kind/node.sh kill NODE     docker kill: the whole node lost at once
#   e2e/kind/node.sh start NODE    docker start, then the network again (a
#                                  started node's routes are gone)
#
# RINGFIRE_KIND_CLUSTER (default ringfire) and RINGFIRE_KIND_KUBECONFIG name the
# cluster. The deployment suite calls kill and start for its node-loss fault
# (RINGFIRE_DEPLOY_NODE_FAULT). The network needs no image: the ptp and
# host-local plugins of the node image, and routes set here — what kind's
# own CNI, kindnetd, would do from inside, without its image.
set -euo pipefail

cluster="${RINGFIRE_KIND_CLUSTER:-ringfire}"
kubeconfig="${RINGFIRE_KIND_KUBECONFIG:?set RINGFIRE_KIND_KUBECONFIG to the kubeconfig of the cluster}"
log() { echo "kind/node.sh: $*" >&2; }

nodes() { docker ps --filter "label=io.x-k8s.kind.cluster=$cluster" --format '{{.Names}}' | sort; }
ip_of() { docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$1"; }
cidr_of() {
	local c="" i
	for i in $(seq 1 60); do
		c="$(kubectl --kubeconfig "$kubeconfig" get node "$1" -o jsonpath='{.spec.podCIDR}' 2>/dev/null || true)"
		[[ -n $c ]] && break
		sleep 1
	done
	[[ -n $c ]] || { log "node $1 has no podCIDR after 60 s"; return 1; }
	echo "$c"
}

network() {
	local n m
	declare -A ip cidr
	for n in $(nodes); do
		ip[$n]="$(ip_of "$n")"
		cidr[$n]="$(cidr_of "$n")"
	done
	for n in "${!ip[@]}"; do
		docker exec -i "$n" sh -c 'mkdir -p /etc/cni/net.d && cat >/etc/cni/net.d/.10-ringfire.conflist && mv /etc/cni/net.d/.10-ringfire.conflist /etc/cni/net.d/10-ringfire.conflist' <<CONF
{
  "cniVersion": "1.0.0",
  "name": "ringfire-kind",
  "plugins": [
    {
      "type": "ptp",
      "ipMasq": false,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "${cidr[$n]}"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
CONF
		docker exec "$n" sysctl -qw net.ipv4.ip_forward=1
		for m in "${!ip[@]}"; do
			[[ $m == "$n" ]] && continue
			docker exec "$n" ip route replace "${cidr[$m]}" via "${ip[$m]}"
		done
		log "$n: ${ip[$n]}, pods ${cidr[$n]}"
	done
}

case "${1:-}" in
network) network ;;
kill) docker kill "${2:?kill NODE}" >/dev/null ;;
start)
	docker start "${2:?start NODE}" >/dev/null
	# systemd is up (and the node's address known) once docker exec runs.
	for i in $(seq 1 60); do docker exec "$2" true 2>/dev/null && break; sleep 1; done
	network
	;;
*) echo "usage: $0 network | kill NODE | start NODE" >&2; exit 2 ;;
esac
