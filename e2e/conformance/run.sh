#!/usr/bin/env bash
# Runs Volcano's own e2e suites, unmodified, on the local control plane
# (`ringfire dev up`: kube-apiserver, kube-controller-manager, kube-scheduler, KWOK nodes that
# play each pod's command) under one or more controller set-ups, and prints a table per spec.
#
#   e2e/conformance/run.sh [suite...]      suites: jobp cronjob vcctl (default: jobp)
#
# $CONFORMANCE_MODES picks the set-ups, each on a fresh control plane (default: ringfire):
#   ringfire      3 ringfire replicas with ringfire's gang scheduler
#   vc-scheduler  3 ringfire replicas without their scheduler (--controllers job,queue,podgroup,cronjob),
#                 beside the real vc-scheduler
#   volcano       the real vc-controller-manager and vc-scheduler, no ringfire: the reference
# Every mode has the same API server, CRDs and admission policies (ringfire's, which stand in
# for Volcano's webhook), so only the controllers and the scheduler differ. With more than one
# mode, a table compares them spec by spec, the first mode being the reference.
#
# Volcano's binaries come from $VOLCANO_BIN, else from ../shared/volcano (unpacked into a
# cache). Without either, build them from Volcano's source at the commit docs/conformance.md
# names: `go build ./cmd/controller-manager ./cmd/scheduler ./cmd/cli/vcctl` and
# `go test -c ./test/e2e/jobp` (and cronjob, vcctl) in a checkout of volcano-sh/volcano.
# $VOLCANO_CRDS is a directory of Volcano's CRDs (config/crd/volcano/bases in that checkout;
# default ../shared/volcano/crds): the vc-scheduler and volcano modes add those the cluster
# lacks (JobFlow, Numatopology, ...), which Volcano's programs wait for.
#
# $CONFORMANCE_SKIP is a Ginkgo skip regexp; $CONFORMANCE_FOCUS narrows the run, and
# $CONFORMANCE_FOCUS_<suite> (e.g. CONFORMANCE_FOCUS_cronjob) narrows one suite's;
# $CONFORMANCE_FLAKE_ATTEMPTS retries a failed spec (Ginkgo's flake attempts; the report
# still names it); $CONFORMANCE_TIMEOUT bounds each suite (default 60m); $CONFORMANCE_PORT is the first
# replica's port (default 18080). Reports and logs go to $CONFORMANCE_OUT/MODE (default
# .ringfire/conformance).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
out="${CONFORMANCE_OUT:-$root/.ringfire/conformance}"
skip="${CONFORMANCE_SKIP:-}"
focus="${CONFORMANCE_FOCUS:-}"
timeout="${CONFORMANCE_TIMEOUT:-60m}"
attempts="${CONFORMANCE_FLAKE_ATTEMPTS:-}"
port="${CONFORMANCE_PORT:-18080}"
read -r -a modes <<<"${CONFORMANCE_MODES:-ringfire}"
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
crds="${VOLCANO_CRDS:-}"
if [[ -z "$crds" && -d ../shared/volcano/crds ]]; then
	crds="$(cd ../shared/volcano/crds && pwd)"
fi

for mode in "${modes[@]}"; do
	case "$mode" in
	ringfire) ;;
	vc-scheduler | volcano)
		[[ -n "$crds" ]] || { log "mode $mode needs Volcano's CRDs: set VOLCANO_CRDS"; exit 2; } ;;
	*) log "unknown mode $mode (ringfire, vc-scheduler, volcano)"; exit 2 ;;
	esac
done

mkdir -p "$out/bin"
go build -o "$out/bin/ringfire" ./cmd/ringfire
go build -o "$out/bin/addcrds" ./e2e/conformance/addcrds
go build -o "$out/bin/report" ./e2e/conformance/report

pids=()
stop_all() {
	local pid
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	pids=()
}
trap stop_all EXIT

# up MODE DIR starts the control plane and the mode's controllers; it returns once the suites
# can run, and leaves the kubeconfig's path in $kubeconfig.
up() {
	local mode="$1" dir="$2" args=(-examples=false -dir "$dir/dev" -port "$port")
	case "$mode" in
	vc-scheduler) args+=(-controllers job,queue,podgroup,cronjob) ;;
	volcano) args+=(-replicas 0) ;;
	esac
	log "$mode: starting the local control plane in $dir/dev"
	"$out/bin/ringfire" dev up "${args[@]}" >"$dir/dev.log" 2>&1 &
	pids+=($!)
	kubeconfig="$dir/dev/cluster/admin.kubeconfig"
	local _
	for _ in $(seq 1 240); do
		grep -q "ringfire dev cluster is up" "$dir/dev.log" 2>/dev/null && break
		kill -0 "${pids[-1]}" 2>/dev/null || { log "ringfire dev up ended:"; tail -20 "$dir/dev.log" >&2; return 1; }
		sleep 1
	done
	grep -q "ringfire dev cluster is up" "$dir/dev.log" || { log "the cluster did not come up in 4 minutes"; return 1; }
	[[ "$mode" == ringfire ]] && return 0

	"$out/bin/addcrds" -kubeconfig "$kubeconfig" "$crds" >&2
	if [[ "$mode" == volcano ]]; then
		"$bin/vc-controller-manager" --kubeconfig "$kubeconfig" --leader-elect=false \
			--healthz-address 127.0.0.1:0 >"$dir/vc-controller-manager.log" 2>&1 &
		pids+=($!)
	fi
	"$bin/vc-scheduler" --kubeconfig "$kubeconfig" --leader-elect=false \
		--scheduler-conf "$root/e2e/conformance/vc-scheduler.conf" \
		--listen-address 127.0.0.1:0 --healthz-address 127.0.0.1:0 >"$dir/vc-scheduler.log" 2>&1 &
	pids+=($!)
	sleep 5 # their informers sync; the suites' first specs wait for far longer anyway
	local pid
	for pid in "${pids[@]}"; do
		kill -0 "$pid" 2>/dev/null || { log "a Volcano program exited:"; tail -5 "$dir"/vc-*.log >&2; return 1; }
	done
}

status=0
for mode in "${modes[@]}"; do
	dir="$out/$mode"
	rm -rf "$dir"
	mkdir -p "$dir"
	if ! up "$mode" "$dir"; then
		status=1
		stop_all
		continue
	fi
	for suite in "${suites[@]}"; do
		log "$mode: running $suite"
		args=(-ginkgo.v -ginkgo.no-color -ginkgo.json-report "$dir/$suite.json" -test.timeout "$timeout")
		[[ -n "$skip" ]] && args+=(-ginkgo.skip "$skip")
		suite_focus="CONFORMANCE_FOCUS_$suite"
		suite_focus="${!suite_focus:-$focus}"
		[[ -n "$suite_focus" ]] && args+=(-ginkgo.focus "$suite_focus")
		[[ -n "$attempts" ]] && args+=(-ginkgo.flake-attempts "$attempts")
		if ! (cd "$dir" && PATH="$bin:$PATH" VC_BIN="$bin" KUBECONFIG="$kubeconfig" "$bin/$suite.test" "${args[@]}" >"$dir/$suite.log" 2>&1); then
			status=1
		fi
		if [[ -f "$dir/$suite.json" ]]; then
			echo "## $suite, $mode"
			echo
			"$out/bin/report" "$dir/$suite.json"
		fi
	done
	stop_all
done

if [[ ${#modes[@]} -gt 1 ]]; then
	for suite in "${suites[@]}"; do
		cols=()
		for mode in "${modes[@]}"; do
			cols+=("$mode=$out/$mode/$suite.json")
		done
		echo "## $suite: the modes side by side"
		echo
		"$out/bin/report" -compare "${cols[@]}"
	done
fi
exit "$status"
