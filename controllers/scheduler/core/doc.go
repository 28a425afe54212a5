// Package core is the pure core of ringfire's gang scheduler: one
// scheduling cycle over a plain Snapshot (Allocate), in the manner of
// Volcano's enqueue and allocate actions with the gang, priority and
// proportion plugins.
//
// The core is pure: no clients, no informers, no clock, no goroutines; the
// same snapshot gives the same Result. Package scheduler (the parent
// directory) runs it as a ring singleton.
//
// A cycle (Allocate):
//
//  1. Fair share. Each queue deserves a part of the cluster by weight,
//     capped by what its jobs ask for and by its capability, with what one
//     queue does not need dealt to the others (proportion.go).
//  2. Admission. Pending PodGroups whose minResources fit the cluster
//     (with overcommit), their queue's capability and their queue's
//     deserved share become Inqueue (enqueue.go).
//  3. Placement. Turns go to the queue with the lowest share
//     (allocated/deserved), and within it to the first job by priority,
//     then age. A gang places its pending pods tentatively, best fit on
//     each pod's dominant resource (nodes.go), checking node selector,
//     required node affinity, taints and unschedulable (predicates.go),
//     inter-pod affinity and anti-affinity with the gang's own tentative
//     placements counted (podaffinity.go, affinityfit.go: required terms
//     filter, preferred ones score ahead of best fit) and the queue's
//     deserved room. Once minMember pods (and every task's
//     minTaskMember) are placed, the placements are committed as bindings;
//     if not, they are undone, hold nothing, and the PodGroup gets an
//     Unschedulable condition that says why (messages.go). A job already
//     at minMember places its extra pods one per turn (allocate.go).
//  4. Status. Every PodGroup's new phase: Running at minMember, Inqueue
//     while admitted and waiting, else Pending.
//
// Speed comes from doing each thing once per cycle: the node checks once
// per distinct set of node constraints, best fit by binary search over
// nodes kept sorted by free resources, and per task shape an upper bound on
// how many more fit, so that a gang that cannot fit is turned down without
// a search once one like it has failed (capacity.go). See docs/scheduler.md
// for the numbers and the differences from Volcano.
package core
