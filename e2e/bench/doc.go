// Package bench holds ringfire's end-to-end load benchmarks. They run on the
// local control plane of package e2e/cluster (kube-apiserver, etcd,
// kube-controller-manager, KWOK nodes) with the Volcano CRDs, a ring etcd,
// ringfire replicas as separate `ringfire run` processes, so that each
// replica's memory and CPU can be read from /proc on its own, and either
// ringfire's gang scheduler or the stand-in of package e2e/standin.
//
// BenchmarkJobCreation times Jobs to pods, and counts the API writes per
// Job from the API server's own apiserver_request_total, split between
// ringfire, the control plane and the benchmark's clients.
//
// The benchmarks are Go benchmarks: plain `go test` never runs them (it
// runs the accounting's unit tests, in milliseconds).
//
//	RINGFIRE_TOOLS_BIN=$(e2e/tools/build.sh | tail -1) RINGFIRE_E2E=1 \
//	  go test -run '^$' -bench BenchmarkJobCreation -benchtime=1x -timeout 30m ./e2e/bench/
//
// docs/benchmarks.md records the results and the knobs (environment
// variables RINGFIRE_BENCH_*).
package bench
