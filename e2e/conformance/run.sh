#!/usr/bin/env bash
# Runs Volcano's own e2e suites, unmodified, against ringfire on the local control plane
# (`ringfire dev up`: kube-apiserver, kube-controller-manager, KWOK nodes that play each pod's
# command, 3 replicas with ringfire's gang scheduler) and prints a table per spec.
#
#   e2e/conformance/run.sh [suite...]      suites: jobp cronjob vcctl (default: jobp)
#
# Volcano's binaries come from $VOLCANO_BIN, else from ../shared/volcano (unpacked into a
# cache). Without either, build them from Volcano's source at the commit docs/conformance.md
# names: `go build ./cmd/controller-manager ./cmd/scheduler ./cmd/cli/vcctl` and
# `go test -c ./test/e2e/jobp` (and cronjob, vcctl) in a checkout of volcano-sh/volcano.
#
# $CONFORMANCE_SKIP is a Ginkgo skip regexp (default: the specs that need kube-scheduler,
# which the local control plane does not run); $CONFORMANCE_FOCUS narrows the run;
# $CONFORMANCE_TIMEOUT bounds each suite (default 40m). Reports and logs go to
# $CONFORMANCE_OUT (default .ringfire/conformance).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
out="${CONFORMANCE_OUT:-$root/.ringfire/conformance}"
skip="${CONFORMANCE_SKIP:-default-scheduler}"
focus="${CONFORMANCE_FOCUS:-}"
timeout="${CONFORMANCE_TIMEOUT:-40m}"
suites=("$@")
[[ ${#suites[@]} -gt 0 ]] || suites=(jobp)

log() { echo "conformance: $*" >&2; }

bin="${VOLCANO_BIN:-}"
if [[ -z "$bin" ]]; then
	if [[ -x ../shared/volcano/unpack.sh ]]; then
		bin="$(../shared/volcano/unpack.sh | tail -n 1)"
	else
		log "no Volcano binaries: set VOLCANO_BIN, or see the top of this script for how to build them"
		exit 2
	fi
fi

rm -rf "$out"
mkdir -p "$out"
go build -o "$out/ringfire" ./cmd/ringfire

log "starting the local control plane and ringfire in $out/dev"
"$out/ringfire" dev up -examples=false -dir "$out/dev" >"$out/dev.log" 2>&1 &
dev=$!
trap 'kill "$dev" 2>/dev/null; wait "$dev" 2>/dev/null || true' EXIT
kubeconfig="$out/dev/cluster/admin.kubeconfig"
for _ in $(seq 1 180); do
	grep -q "installed the Volcano CRDs" "$out/dev.log" 2>/dev/null && break
	kill -0 "$dev" 2>/dev/null || { log "ringfire dev up ended:"; tail -20 "$out/dev.log" >&2; exit 1; }
	sleep 1
done
grep -q "installed the Volcano CRDs" "$out/dev.log" || { log "the cluster did not come up in 3 minutes"; exit 1; }

status=0
for suite in "${suites[@]}"; do
	log "running $suite"
	args=(-ginkgo.v -ginkgo.no-color -ginkgo.json-report "$out/$suite.json" -test.timeout "$timeout")
	[[ -n "$skip" ]] && args+=(-ginkgo.skip "$skip")
	[[ -n "$focus" ]] && args+=(-ginkgo.focus "$focus")
	if ! (cd "$out" && PATH="$bin:$PATH" VC_BIN="$bin" KUBECONFIG="$kubeconfig" "$bin/$suite.test" "${args[@]}" >"$out/$suite.log" 2>&1); then
		status=1
	fi
	[[ -f "$out/$suite.json" ]] && go run ./e2e/conformance/report "$out/$suite.json"
done
exit "$status"
