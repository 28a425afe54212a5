// Package procs runs ringfire replicas as separate `ringfire run` processes:
// the replicas of `ringfire dev up`, and (through e2e/procs, which adds the
// testing helpers) those of end-to-end tests and benchmarks. A replica of
// its own process can be paused (SIGSTOP), killed (SIGKILL) or measured
// (/proc/<pid>) on its own, and is seen only as an operator would see it:
// through its flags, its log, its servers (/metrics and /status.json on its
// metrics address, /readyz on its health address) and what it does to etcd
// and the API server. It does not import
// testing, so the ringfire binary can link it.
//
//   - replica.go: Args, Addrs, Start, Replica, StopAll.
//   - ring.go: WaitRing, until the replicas share every slot as assigned.
//   - metrics.go: MetricValue, one metric out of a Prometheus exposition.
package procs
