// Package metricstest checks, end to end, what a running replica exposes:
// two `ringfire run` processes on a real control plane (e2e/cluster) with the
// scheduler stand-in run a few Jobs, one of them aborted by a Command; then
// each replica's /metrics must have every metric of internal/promreg's
// Contract with its type, its labels and data, and the Job metrics, summed
// over the replicas, must count every Job exactly once. It checks the ports
// too: metrics and probes each on their own address, profiles only where
// --pprof-bind-address asks for them.
package metricstest
