#!/usr/bin/env bash
# The part of `make conformance` that `make test` (and so CI) runs: Volcano's whole jobp suite
# against ringfire and, beside it on a control plane of its own, the quick cronjob specs (they
# mostly wait for minute boundaries, so they cost little next to jobp and take four minutes
# off the run). Both with one retry of a failed spec. Reports go to .ringfire/conformance-ci
# and .ringfire/conformance-ci-cronjob; the cronjob run's output follows jobp's.
#
# $CI_JOBP_FOCUS and $CI_CRONJOB_FOCUS override the specs chosen (to try this script quickly).
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
mkdir -p .ringfire
export CONFORMANCE_FLAKE_ATTEMPTS="${CONFORMANCE_FLAKE_ATTEMPTS:-2}"
# Unpack Volcano's programs once, before the two runs would both do it.
if [[ -z "${VOLCANO_BIN:-}" ]]; then
	VOLCANO_BIN="$(../shared/volcano/unpack.sh | tail -n 1)" || exit 1
	export VOLCANO_BIN
fi
cron_log=.ringfire/conformance-ci-cronjob.log

CONFORMANCE_FOCUS_cronjob="${CI_CRONJOB_FOCUS:-basic cronjob|many miss schedule|remove finished job}" \
	CONFORMANCE_PORT=18300 CONFORMANCE_OUT="$root/.ringfire/conformance-ci-cronjob" \
	e2e/conformance/run.sh cronjob >"$cron_log" 2>&1 &
cron=$!
trap 'kill "$cron" 2>/dev/null; wait "$cron" 2>/dev/null' EXIT

CONFORMANCE_FOCUS_jobp="${CI_JOBP_FOCUS:-}" CONFORMANCE_PORT=18080 \
	CONFORMANCE_OUT="$root/.ringfire/conformance-ci" e2e/conformance/run.sh jobp
jobp=$?
wait "$cron"
cronjob=$?
trap - EXIT
cat "$cron_log"
echo "conformance (CI part): jobp exit $jobp, cronjob exit $cronjob" >&2
exit $((jobp != 0 || cronjob != 0))
