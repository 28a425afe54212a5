// Package quarantinetest proves on the local control plane that the
// quarantine stops keys that hurt, not work that is merely slow, paused or
// re-created: three `ringfire run` replicas, each in a memory cgroup, with
// their API clients throttled to 10 requests a second and a quarantine time
// budget of 20 s, so that one reconcile of a kill (256 deletes) takes longer
// than the budget, as a 3,000-pod kill at 20 requests a second took longer
// than the default 2 minutes.
//
//   - a 300-pod Job aborted (AbortJob) is never quarantined and all its pods
//     go, though the replica holding it is stopped (SIGSTOP) for longer than
//     the budget and the lease in the middle of it: the paused replica writes
//     no mark when it wakes;
//   - a Job created in another namespace meanwhile completes;
//   - a quarantined Job deleted while every replica is down, then made again
//     under its name before they are back, runs to Completed, and its
//     predecessor's mark goes.
//
// The tests need the local control plane (e2e/cluster): run them with
// `make test`, or with RINGFIRE_TOOLS_BIN and RINGFIRE_E2E=1 set.
package quarantinetest
