// Package chaostest holds the chaos suites that need a real
// control plane and a ring under load: the API server restarted under the
// replicas' feet, a rolling restart of every replica, and scaling 3→5→1.
// Each test runs Jobs throughout and then checks the invariants of
// docs/design.md from outside the replicas: every Job completes, no pod is created twice
// (counted from the control plane's etcd, which sees every creation even
// while the API server is down), no Job is reconciled by two replicas at
// once (the stack's reconcile recorder), every slot has its assigned owner
// soon after each membership change, and a replica cut off from the API
// server says so and recovers by itself.
//
// The tests run with RINGFIRE_TOOLS_BIN set (`make test`); see docs/e2e.md.
package chaostest
