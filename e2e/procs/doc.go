// Package procs runs ringfire replicas as separate `ringfire run` processes
// for end-to-end tests and benchmarks. A replica of its own process can be
// paused (SIGSTOP), killed (SIGKILL) or measured (/proc/<pid>) on its own,
// and the test sees it only as an operator would: through its flags, its
// log, its ops server (/readyz, /status.json, /metrics) and what it does to
// etcd and the API server.
//
//   - build.go: Build, the ringfire binary of the working tree.
//   - replica.go: Args, Start, Replica, StopAll.
//   - ring.go: WaitRing, until the replicas share every slot as assigned.
//   - metrics.go: MetricValue, one metric out of a Prometheus exposition.
package procs
