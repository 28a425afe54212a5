#!/usr/bin/env bash
# Runs the test packages as `make test` does: one package at a time, so the
# timing bounds of the ring and fencing tests (TTL + 1 s, fence before
# expiry) are not judged on a machine running several control planes at
# full tilt; except the packages in RINGFIRE_IDLE_PKGS, which mostly wait
# (the CronJob suite waits for minute boundaries, the robustness suite for
# its fault windows to pass) and run beside the rest.
#
#   e2e/run-suite.sh [go test flags] -- [packages]
#
# RINGFIRE_TOOLS_BIN and RINGFIRE_E2E are passed through to the tests.
set -uo pipefail

flags=()
while [[ $# -gt 0 && $1 != -- ]]; do
	flags+=("$1")
	shift
done
shift || true
pkgs=("${@:-./...}")
idle_default="github.com/ringfire/ringfire/e2e/cronjobtest|github.com/ringfire/ringfire/e2e/robusttest"
idle_pattern="^(${RINGFIRE_IDLE_PKGS:-$idle_default})\$"

mapfile -t all < <(go list "${pkgs[@]}")
busy=() idle=()
for p in "${all[@]}"; do
	if [[ $p =~ $idle_pattern ]]; then idle+=("$p"); else busy+=("$p"); fi
done

idle_rc=0 idle_pid=
idle_log="$(mktemp)"
trap 'rm -f "$idle_log"' EXIT
if [[ ${#idle[@]} -gt 0 ]]; then
	go test "${flags[@]}" -p 1 "${idle[@]}" >"$idle_log" 2>&1 &
	idle_pid=$!
fi
rc=0
if [[ ${#busy[@]} -gt 0 ]]; then
	go test "${flags[@]}" -p 1 "${busy[@]}" || rc=$?
fi
if [[ -n $idle_pid ]]; then
	wait "$idle_pid" || idle_rc=$?
	echo "--- run beside the others: ${idle[*]}"
	cat "$idle_log"
fi
exit $((rc != 0 || idle_rc != 0))
