// Package fencetest proves invariant 3 of docs/design.md (a stale owner cannot land a write) for a replica paused
// past its lease: a ringfire replica stopped with SIGSTOP for three lease
// TTLs while it works, then continued, lands no write for a key once
// another replica's ownership of that key's slot has begun, until the slot
// comes back to it; and no pod is created twice.
//
// It proves the same for replicas cut off from the ring's etcd whose wall
// clocks step a minute back or forward at the cut (wallstep_test.go): the
// fence runs on the monotonic clock, so neither keeps writing past its lease.
//
// Everything is checked from outside the replicas, which run as separate
// `ringfire run` processes (e2e/procs):
//
//   - who held which slot, and when, comes from an observer of its own that
//     watches the slot keys in the ring's etcd (ownership_test.go);
//   - who wrote what, when, and whether it landed, comes from the API
//     server's audit log (audit_test.go), where each replica's requests
//     carry the user agent ringfire/<id>;
//   - the check itself, a pure function of those two records, is in
//     stale_test.go, with unit tests of its own on made-up records.
//
// The tests need the local control plane (e2e/cluster): run them with
// `make test`, or with RINGFIRE_TOOLS_BIN and RINGFIRE_E2E=1 set.
package fencetest
