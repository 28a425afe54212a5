package core

import vcv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

// Result is what one cycle decided. The caller binds, then writes the
// PodGroup statuses.
type Result struct {
	// Bindings in the order they were decided; the members of a gang are
	// adjacent.
	Bindings []Binding
	// PodGroups holds the decision for every job of the snapshot, by
	// namespace/name.
	PodGroups map[string]GroupStatus
	Stats     Stats
}

// Binding places one pod on one node.
type Binding struct {
	Pod      string // namespace/name
	Node     string
	PodGroup string // namespace/name of the pod's job
}

// GroupStatus is the new status of one PodGroup.
type GroupStatus struct {
	Phase vcv1beta1.PodGroupPhase
	// Unschedulable says why the gang still waits; nil when nothing holds it
	// back (the caller then clears the PodGroup's Unschedulable condition).
	Unschedulable *Condition
	// Bound is how many of its pods this cycle bound.
	Bound int32
}

// Condition is the reason and message of a PodGroup's Unschedulable condition.
type Condition struct {
	Reason  string
	Message string
}

// Reasons of the Unschedulable condition beyond Volcano's own
// (vcv1beta1.NotEnoughResourcesReason, NotEnoughPodsReason, NotEnoughPodsOfTaskReason).
const (
	// ReasonQueueNotOpen: the job's queue is Closed or Closing, or missing.
	ReasonQueueNotOpen = "QueueNotOpen"
)

// Stats counts what a cycle did.
type Stats struct {
	Nodes int // nodes in the snapshot
	Jobs  int // jobs in the snapshot
	// Admitted is how many PodGroups went from Pending to Inqueue.
	Admitted int
	// GangsPlaced is how many jobs reached minMember this cycle.
	GangsPlaced int
	// Unschedulable is how many jobs were left with an Unschedulable condition.
	Unschedulable int
	// TasksBound is len(Bindings).
	TasksBound int
	// TasksDiscarded counts tentative placements undone because their gang
	// could not be completed.
	TasksDiscarded int
	// FastRejects counts gangs turned down by the cycle's capacity bounds
	// without searching for nodes.
	FastRejects int
}
