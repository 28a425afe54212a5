// Package robusttest proves that nothing a user writes, and no fault of the
// API server, takes the ring down or loses work (docs/design.md, invariants
// 10 and 11): three ringfire replicas run as `ringfire run` processes, each
// in a memory cgroup with the StatefulSet's limit (2 GiB), as the
// ServiceAccount of deploy/ringfire, with every controller on
// (job,queue,podgroup,cronjob,jobflow,batchjob,scheduler), against the local
// control plane with kube-controller-manager (its garbage collector) and
// kube-scheduler (for batch/v1 Jobs' pods).
//
// All cases share one world and run side by side, each in namespaces of its
// own; each file registers its cases (register, in an init). When the cases
// are done the world is audited: no replica exited or was OOM-killed, and
// each one's peak memory is reported.
//
//   - world_test.go: the world, the cases' registry and the audit.
//   - memcg_test.go: the replicas' memory cgroups.
//   - poison_test.go: Jobs and gangs of 2^31-1 pods beside ordinary Jobs.
//   - recreate_test.go: Jobs and JobFlows re-created over their
//     predecessors' lingering objects run their own.
//   - faults_test.go: a pod-admission webhook down for 5 minutes and a
//     full ResourceQuota for 3 end no Job.
//
// The tests need the local control plane (e2e/cluster): run them with
// `make test`, or with RINGFIRE_TOOLS_BIN and RINGFIRE_E2E=1 set.
package robusttest
