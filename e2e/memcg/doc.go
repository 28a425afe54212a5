// Package memcg runs ringfire replicas as `ringfire run` processes, each in
// a memory cgroup of its own with a container's limit, and audits them: the
// suites that prove a replica survives what a user writes (e2e/robusttest,
// e2e/adversarytest) share it.
//
//   - group.go: Group, a memory cgroup made by the suite (cgroup v1 or v2;
//     the suite needs root), its limit, peak and OOM kills.
//   - fleet.go: Fleet, the replicas of a run, each started in its Group,
//     killed on purpose and started again in it, and Audit, which fails on
//     any exit but a deliberate kill, any OOM kill and any peak over a bound.
//   - rss.go: PeakRSS, a process's peak resident memory, for a machine
//     where no cgroup can be made.
package memcg
