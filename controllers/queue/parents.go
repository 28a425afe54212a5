package queue

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/controllers/kit"
)

// ByParent indexes Queues by the parent they have in the hierarchy (ParentOf): the children of
// a queue are the Queues under its name.
const ByParent = "parent"

// parentIndex is the ByParent index function.
func parentIndex(obj any) ([]string, error) {
	q, ok := obj.(*scheduling.Queue)
	if !ok {
		return nil, fmt.Errorf("index %s: %T is not a Queue", ByParent, obj)
	}
	if p := ParentOf(q); p != "" {
		return []string{p}, nil
	}
	return nil, nil
}

// children are the names of the Queues whose parent is name.
func (c *Controller) children(name string) []string {
	keys, err := c.queueInf.GetIndexer().IndexKeys(ByParent, name)
	if err != nil {
		return nil // the index is registered by New
	}
	return keys
}

// enqueueChildren syncs the children of name: they follow its state, or its absence.
func (c *Controller) enqueueChildren(name string) {
	for _, child := range c.children(name) {
		c.Disp.Enqueue(child, request{})
	}
}

// enqueueSubtree syncs every queue below name: their depth changed (name came, went or moved).
// Each queue is visited once, so a cycle of parents ends the walk.
func (c *Controller) enqueueSubtree(name string) {
	seen := map[string]bool{name: true}
	next := []string{name}
	for len(next) > 0 {
		parent := next[0]
		next = next[1:]
		for _, child := range c.children(parent) {
			if !seen[child] {
				seen[child] = true
				c.Disp.Enqueue(child, request{})
				next = append(next, child)
			}
		}
	}
}

// getQueue reads the named queue from the cache.
func (c *Controller) getQueue(name string) (*scheduling.Queue, bool) {
	q, err := c.queues.Get(name)
	return q, err == nil
}

// parent returns the parent of queue from the cache, or nil when it has none, the parent does
// not exist, or the queue's parents loop back to it (a queue in a cycle follows none: two
// queues each closed under the other could never open). A missing parent other than the root
// queue, and a cycle, are reported in a Warning event, once per generation of the queue.
func (c *Controller) parent(queue *scheduling.Queue) *scheduling.Queue {
	name := ParentOf(queue)
	if name == "" {
		return nil
	}
	get := c.getQueue
	if loop := Cycle(queue.Name, get); len(loop) > 0 && loop[0] == queue.Name {
		c.reportOnce(queue, "ParentCycle", fmt.Sprintf(
			"the parents of queue %s form a cycle (%s): it follows no parent and takes no Job until spec.parent is fixed",
			queue.Name, strings.Join(loop, " → ")))
		return nil
	}
	parent, ok := get(name)
	if !ok {
		if name != RootQueue {
			c.reportOnce(queue, "MissingParent", fmt.Sprintf(
				"the parent queue %s of queue %s does not exist: create it, or fix spec.parent", name, queue.Name))
		}
		return nil
	}
	return parent
}

// marks are what queue's metadata must carry once action (taken because of its parent when
// byParent) runs and moves it to state next. The not-open label stays until both the stored
// state and next are Open: it comes off in the sync that follows the write of Open.
func (c *Controller) marks(queue *scheduling.Queue, action bus.Action, byParent bool, next scheduling.QueueState) Marks {
	depth, cyclic := Depth(queue.Name, c.getQueue)
	m := Marks{
		HasChildren: len(c.children(queue.Name)) > 0,
		NotOpen:     TakesNoJobs(queue.Status.State) || TakesNoJobs(next),
		AtMaxDepth:  cyclic || depth >= MaxDepth,
	}
	switch {
	case action == bus.CloseQueueAction && byParent:
		m.ClosedByParent = "true"
	case action == bus.OpenQueueAction && ClosedByParent(queue):
		m.ClosedByParent = "false"
	}
	return m
}

// writeMarks patches queue's metadata (and an empty spec.parent) to marks, and returns the
// queue as written; nil when it was deleted meanwhile.
func (c *Controller) writeMarks(ctx context.Context, queue *scheduling.Queue, marks Marks) (*scheduling.Queue, error) {
	patch := MarksPatch(queue, marks)
	if patch == nil {
		return queue, nil
	}
	if err := c.Guard(ctx); err != nil {
		return nil, err
	}
	got, err := c.cfg.Volcano.SchedulingV1beta1().Queues().Patch(ctx, queue.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("patch queue %s: %w", queue.Name, err)
	}
	c.written.Remember(got.Name, queue.ResourceVersion, got)
	c.Log.Debug("queue marks written", "queue", queue.Name, "patch", string(patch))
	return got, nil
}

// reported remembers the problems of the hierarchy already reported in an Event, per queue:
// reason → the generation it was reported at.
type reported struct {
	kit.Keyed[map[string]int64]
}

// first reports whether reason is new for queue at its generation, and remembers it.
func (r *reported) first(queue *scheduling.Queue, reason string) (news bool) {
	r.Update(queue.Name, func(byReason map[string]int64, _ bool) (map[string]int64, bool) {
		if byReason == nil {
			byReason = map[string]int64{}
		}
		if g, ok := byReason[reason]; !ok || g != queue.Generation {
			byReason[reason], news = queue.Generation, true
		}
		return byReason, true
	})
	return news
}

// reportOnce records a Warning event on queue, unless reason was reported at its generation.
func (c *Controller) reportOnce(queue *scheduling.Queue, reason, message string) {
	if c.reported.first(queue, reason) {
		c.Log.Warn("queue hierarchy problem", "queue", queue.Name, "reason", reason, "message", message)
		c.Recorder.Event(queue, corev1.EventTypeWarning, reason, message)
	}
}

// queueOf unwraps a Queue from an informer event.
func queueOf(obj any) (*scheduling.Queue, bool) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	q, ok := obj.(*scheduling.Queue)
	return q, ok
}
