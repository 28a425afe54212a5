#!/usr/bin/env bash
# Runs the test packages as `make test` does, in two lanes:
#
#   beside: $RINGFIRE_BESIDE_CMD first when set (`make test` sets it to Volcano's
#           conformance suites, e2e/conformance/ci.sh), then the packages in
#           RINGFIRE_IDLE_PKGS, one at a time: those that mostly wait (the CronJob
#           suite for minute boundaries, the robustness suite for its fault
#           windows, the monitoring suite for its alerts to fire) or compare
#           outcomes, not times (the side-by-side suite);
#   main:   every other package, one at a time; the packages in
#           RINGFIRE_STRICT_PKGS last, once the beside lane has finished, so
#           that the timing bounds of the ring and fencing tests (TTL + 1 s,
#           fence before expiry) are judged on a machine running nothing else.
#
#   e2e/run-suite.sh [go test flags] -- [packages]
#
# RINGFIRE_TOOLS_BIN and RINGFIRE_E2E are passed through to the tests. Each
# lane's packages start in `go list` order; the script fails if any lane
# failed, and prints how long each lane took.
set -uo pipefail

flags=()
while [[ $# -gt 0 && $1 != -- ]]; do
	flags+=("$1")
	shift
done
shift || true
pkgs=("${@:-./...}")
mod=github.com/ringfire/ringfire
idle_default="$mod/e2e/cronjobtest|$mod/e2e/robusttest|$mod/e2e/sidebyside|$mod/e2e/monitoringtest"
strict_default="$mod/e2e/adversarytest|$mod/e2e/chaostest|$mod/e2e/fencetest|$mod/e2e/migrationtest|$mod/e2e/certtest|$mod/shard|$mod/membership|$mod/cache"
idle_pattern="^(${RINGFIRE_IDLE_PKGS:-$idle_default})\$"
strict_pattern="^(${RINGFIRE_STRICT_PKGS:-$strict_default})\$"

mapfile -t all < <(go list "${pkgs[@]}")
busy=() idle=() strict=()
for p in "${all[@]}"; do
	if [[ $p =~ $idle_pattern ]]; then
		idle+=("$p")
	elif [[ $p =~ $strict_pattern ]]; then
		strict+=("$p")
	else
		busy+=("$p")
	fi
done

start=$SECONDS
beside_log="$(mktemp)"
trap 'rm -f "$beside_log"' EXIT
beside() {
	local rc=0 t=$SECONDS
	if [[ -n ${RINGFIRE_BESIDE_CMD:-} ]]; then
		echo "--- $RINGFIRE_BESIDE_CMD"
		bash -c "$RINGFIRE_BESIDE_CMD" || rc=1
		echo "--- $RINGFIRE_BESIDE_CMD: $((SECONDS - t)) s"
	fi
	if [[ ${#idle[@]} -gt 0 ]]; then
		go test "${flags[@]}" -p 1 "${idle[@]}" || rc=1
	fi
	echo "--- beside lane: $((SECONDS - t)) s"
	return $rc
}
beside >"$beside_log" 2>&1 &
beside_pid=$!

rc=0
if [[ ${#busy[@]} -gt 0 ]]; then
	go test "${flags[@]}" -p 1 "${busy[@]}" || rc=1
fi
echo "--- main lane, before the strict packages: $((SECONDS - start)) s"
beside_rc=0
wait "$beside_pid" || beside_rc=1
echo "--- run beside the main lane: ${RINGFIRE_BESIDE_CMD:-} ${idle[*]}"
cat "$beside_log"
if [[ ${#strict[@]} -gt 0 ]]; then
	t=$SECONDS
	go test "${flags[@]}" -p 1 "${strict[@]}" || rc=1
	echo "--- strict packages, alone: $((SECONDS - t)) s"
fi
echo "--- all lanes: $((SECONDS - start)) s"
exit $((rc != 0 || beside_rc != 0))
