#!/usr/bin/env bash
# Installs the Debian packages the real node needs, when missing: runc (the
# OCI runtime containerd calls), containernetworking-plugins (bridge,
# host-local, loopback, portmap in /usr/lib/cni), iptables (kube-proxy's
# Service rules), iproute2 (the harness's bridge) and conntrack. Needs root
# and apt-get; says what is missing otherwise.
set -euo pipefail
log() { echo "node/deps.sh: $*" >&2; }

need=()
command -v runc >/dev/null || need+=(runc)
[[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local && -x /usr/lib/cni/loopback ]] || need+=(containernetworking-plugins)
command -v iptables >/dev/null || need+=(iptables)
command -v ip >/dev/null || need+=(iproute2)
command -v conntrack >/dev/null || need+=(conntrack)
[[ ${#need[@]} -eq 0 ]] && exit 0

if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null; then
	log "missing: ${need[*]}; install them (Debian: apt-get install ${need[*]}) as root"
	exit 1
fi
log "installing ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null || true
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
