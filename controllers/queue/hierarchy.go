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
	// ClosedByParentAnnotation is "true" on a Queue that was closed because its parent closed,
	// so that it opens again when its parent does; an explicit OpenQueue sets it back to
	// "false". It is Volcano's own annotation, so a queue keeps its meaning across a switch
	// between Volcano's controller and ringfire's.
	ClosedByParentAnnotation = "volcano.sh/closed-by-parent"
)

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
