package job

import (
	"sync"

	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
)

// delays tracks the actions policy timeouts postponed, so that a pod that
// moves on, or a later action, cancels them. A Job has at most one per pod
// (scope: the pod's name) and one for requests of no pod (scope "").
type delays struct {
	mu    sync.Mutex
	next  uint64
	byKey map[string]map[string]delayed // key → scope → the postponed action
}

// delayed is one postponed action: its token, and the event that asked for it.
type delayed struct {
	token uint64
	event bus.Event
}

// add postpones an action that event asked for, in place of the scope's
// last, and returns its token.
func (d *delays) add(key, scope string, event bus.Event) uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.next++
	if d.byKey == nil {
		d.byKey = map[string]map[string]delayed{}
	}
	if d.byKey[key] == nil {
		d.byKey[key] = map[string]delayed{}
	}
	d.byKey[key][scope] = delayed{token: d.next, event: event}
	return d.next
}

// take reports whether token is still pending for key, and consumes it.
func (d *delays) take(key string, token uint64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for scope, dl := range d.byKey[key] {
		if dl.token == token {
			delete(d.byKey[key], scope)
			return true
		}
	}
	return false
}

// cancelPod cancels the action postponed for the pod if the pod's change,
// which raised event and leaves it pending or not, ends the reason for it
// (cancels).
func (d *delays) cancelPod(key, pod string, event bus.Event, pending bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if dl, ok := d.byKey[key][pod]; ok && cancels(dl.event, event, pending) {
		delete(d.byKey[key], pod)
	}
}

func (d *delays) forget(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.byKey, key)
}

// cancels is Volcano's rule for a pod's postponed action: one a PodPending
// asked for is cancelled once the pod is no longer pending (it runs, ends,
// or goes); one a PodFailed or PodEvicted asked for, when the pod runs
// again. Others wait for their time or for another action. A pending pod's
// other changes (its scheduling condition, a label) cancel nothing.
func cancels(started, now bus.Event, pending bool) bool {
	switch started {
	case bus.PodPendingEvent:
		return !pending
	case bus.PodFailedEvent, bus.PodEvictedEvent:
		return now == bus.PodRunningEvent
	}
	return false
}

func (d *delays) forgetWhere(drop func(key string) bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for key := range d.byKey {
		if drop(key) {
			delete(d.byKey, key)
		}
	}
}
