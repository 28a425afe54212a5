package queue

import (
	"sync"

	toolscache "k8s.io/client-go/tools/cache"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// tally keeps the PodGroup counts of every queue that has PodGroups, from the PodGroup
// informer's events: each add counts one in, each delete counts one out, and an update moves
// one from the old phase (or queue) to the new. A reconcile reads a queue's counts in constant
// time and memory, however many PodGroups the queue has; counting them from the cache instead
// would walk them all, on every reconcile of a busy queue. A queue whose last PodGroup goes is
// dropped, so the tally holds at most one entry per PodGroup.
//
// The informer hands one handler its events in order, and the object an update or delete
// carries as the old state is the one the add or the last update carried, so the counts are
// those of the informer's store once the handler has caught up with it.
type tally struct {
	mu      sync.Mutex
	byQueue map[string]*Counts
}

// get returns the counts of the queue: zero when it has no PodGroups.
func (t *tally) get(queue string) Counts {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c := t.byQueue[queue]; c != nil {
		return *c
	}
	return Counts{}
}

// add counts pg in (sign +1) or out (sign -1).
func (t *tally) add(pg *scheduling.PodGroup, sign int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	q := pg.Spec.Queue
	c := t.byQueue[q]
	if c == nil {
		if sign < 0 {
			return // never counted in: nothing to take out
		}
		if t.byQueue == nil {
			t.byQueue = map[string]*Counts{}
		}
		c = &Counts{}
		t.byQueue[q] = c
	}
	c.add(pg.Status.Phase, sign)
	if c.Total <= 0 {
		delete(t.byQueue, q)
	}
}

// event applies one informer event: old is nil for an add, new is nil for a delete. It reports
// whether any count changed (an update that moves neither phase nor queue changes none).
func (t *tally) event(old, new *scheduling.PodGroup) bool {
	if old != nil && new != nil && old.Spec.Queue == new.Spec.Queue && old.Status.Phase == new.Status.Phase {
		return false
	}
	if old != nil {
		t.add(old, -1)
	}
	if new != nil {
		t.add(new, 1)
	}
	return true
}

// podGroupOf unwraps a PodGroup from an informer event.
func podGroupOf(obj any) (*scheduling.PodGroup, bool) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	pg, ok := obj.(*scheduling.PodGroup)
	return pg, ok
}
