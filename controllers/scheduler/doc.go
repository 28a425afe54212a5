// Package scheduler is ringfire's gang scheduler controller: it runs the
// pure core (package core, controllers/scheduler/core: one scheduling cycle
// over a plain Snapshot, Allocate) as a ring singleton.
//
// The Controller (controller.go, shift.go, watch.go, view.go, act.go,
// status.go, statuswrite.go, change.go, announce.go, memory.go, metrics.go)
// runs on the replica that holds the slot of Key: it watches nodes, pods,
// PodGroups, Queues and PriorityClasses, turns them into a core.Snapshot
// each cycle (view.go), calls core.Allocate, binds the pods (act.go) and
// writes the PodGroups' status (status.go, statuswrite.go, change.go). See
// package core for what a cycle decides, and docs/scheduler.md.
package scheduler
