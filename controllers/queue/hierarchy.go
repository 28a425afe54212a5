package queue

import (
	"fmt"
	"strings"

	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// What the controller keeps on a Queue's metadata for the hierarchy.
const (
	// HasChildrenLabel is "true" on a Queue that some Queue names as its spec.parent, and
	// absent on a leaf. ringfire's admission policy (deploy/crds/job-queue-policy.yaml) reads
	// the labelled Queues as its parameters to refuse a Job on a queue that has children, and
	// the Queue policy refuses to delete one.
	HasChildrenLabel = "ringfire.io/has-children"
	// NotOpenLabel is "true" on a Queue whose state is not Open (Closed, Closing, Unknown), and
	// absent on an open one. ringfire's admission policy (deploy/crds/job-queue-policy.yaml,
	// with the binding of job-queue-state-binding.yaml) reads the labelled Queues as its
	// parameters to refuse a Job on a queue that is not open. The label is set before the
	// state leaves Open and removed only once the state is Open again, so that a labelled
	// queue's status is what the policy checks: the label only narrows which Queues it reads.
	NotOpenLabel = "ringfire.io/not-open"
	// AtMaxDepthLabel is "true" on a Queue that sits MaxDepth queues below the root queue or
	// deeper, or whose parents form a cycle (a cycle is deeper than any limit), and absent
	// elsewhere: a queue naming it as its parent would be deeper than the hierarchy allows, which
	// ringfire's admission policy (deploy/crds/queue-depth-policy.yaml) refuses.
	AtMaxDepthLabel = "ringfire.io/at-max-depth"
	// ClosedByParentAnnotation is "true" on a Queue that was closed because its parent closed,
	// so that it opens again when its parent does; an explicit OpenQueue sets it back to
	// "false". It is Volcano's own annotation, so a queue keeps its meaning across a switch
	// between Volcano's controller and ringfire's.
	ClosedByParentAnnotation = "volcano.sh/closed-by-parent"
)

// MaxDepth is how many queues a path below the root queue may hold, the queue at its end
// included: a queue directly under root is at depth 1. It is the default of Volcano's admission
// webhook (--max-queue-depth), which refuses a queue that would sit deeper.
const MaxDepth = 5

// ParentOf is the parent a queue has in the hierarchy: its spec.parent, or the root queue when
// that is empty. The root queue has none ("").
func ParentOf(q *scheduling.Queue) string {
	switch {
	case q.Name == RootQueue:
		return ""
	case q.Spec.Parent == "":
		return RootQueue
	}
	return q.Spec.Parent
}

// TakesNoJobs reports whether a queue in state s refuses new Jobs: any state but Open. An empty
// state (a queue the controller has not written yet) counts as Open, as the schedulers count it.
func TakesNoJobs(s scheduling.QueueState) bool {
	return s != "" && s != scheduling.QueueStateOpen
}

// closedOrClosing reports whether a queue in state s takes no new work.
func closedOrClosing(s scheduling.QueueState) bool {
	return s == scheduling.QueueStateClosed || s == scheduling.QueueStateClosing
}

// ClosedByParent reports whether the queue was closed because its parent closed.
func ClosedByParent(q *scheduling.Queue) bool {
	return q.Annotations[ClosedByParentAnnotation] == "true"
}

// FollowParent is the action a sync of queue takes because of its parent, as Volcano's queue
// controller decides it: a queue whose parent is Closed or Closing closes too (unless it already
// is), and a queue that was closed by its parent opens again once the parent is Open. parent is
// nil when the queue has none or it does not exist: nothing to follow then.
func FollowParent(queue, parent *scheduling.Queue) bus.Action {
	if parent == nil || queue.Name == RootQueue {
		return ""
	}
	switch {
	case closedOrClosing(parent.Status.State) && !closedOrClosing(queue.Status.State):
		return bus.CloseQueueAction
	case parent.Status.State == scheduling.QueueStateOpen && closedOrClosing(queue.Status.State) && ClosedByParent(queue):
		return bus.OpenQueueAction
	}
	return ""
}

// OpenRefusal says why a queue cannot be opened under parent (nil: none, or missing), or is
// empty when it can: a queue under a Closed or Closing parent stays closed until the parent
// opens, as in Volcano (whose controller retries the OpenQueue a while, then drops it).
func OpenRefusal(queue, parent *scheduling.Queue) string {
	if parent == nil || !closedOrClosing(parent.Status.State) {
		return ""
	}
	return fmt.Sprintf("Failed to open queue %s because its parent queue %s is %s. Open the parent queue first.",
		queue.Name, parent.Name, strings.ToLower(string(parent.Status.State)))
}

// Cycle walks up the parents of the named queue through get and returns the loop it runs into
// ("a", "b", "a"), or nil when the walk ends (at the root, at a queue without parent, or at a
// parent that does not exist). The walk visits each queue at most once.
func Cycle(name string, get func(string) (*scheduling.Queue, bool)) []string {
	seen := map[string]int{}
	var path []string
	for name != "" {
		if i, ok := seen[name]; ok {
			return append(path[i:], name)
		}
		seen[name] = len(path)
		path = append(path, name)
		q, ok := get(name)
		if !ok {
			return nil
		}
		name = ParentOf(q)
	}
	return nil
}

// Depth is the number of queues from the named queue up to the root queue, the root left out
// and the queue itself counted (a queue under root is at depth 1), walking up through get.
// cyclic is true when the walk runs into a cycle of parents. A walk that reaches a queue that
// does not exist stops there, with the queues counted so far.
func Depth(name string, get func(string) (*scheduling.Queue, bool)) (depth int, cyclic bool) {
	seen := map[string]bool{}
	for name != "" && name != RootQueue {
		if seen[name] {
			return depth, true
		}
		seen[name] = true
		depth++
		q, ok := get(name)
		if !ok {
			return depth, false
		}
		name = ParentOf(q)
	}
	return depth, false
}
