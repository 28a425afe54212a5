package job

import (
	"sync/atomic"

	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/ringfire/ringfire/controllers/kit"
)

// delays tracks the actions policy timeouts postponed, so that a pod that
// moves on, or a later action, cancels them. A Job has at most one per pod
// (scope: the pod's name) and one for requests of no pod (scope "").
type delays struct {
	kit.Keyed[map[string]delayed] // key → scope → the postponed action
	next                          atomic.Uint64
}

// delayed is one postponed action: its token, and the event that asked for it.
type delayed struct {
	token uint64
	event bus.Event
}

// add postpones an action that event asked for, in place of the scope's
// last, and returns its token.
func (d *delays) add(key, scope string, event bus.Event) uint64 {
	token := d.next.Add(1)
	d.Update(key, func(scopes map[string]delayed, _ bool) (map[string]delayed, bool) {
		if scopes == nil {
			scopes = map[string]delayed{}
		}
		scopes[scope] = delayed{token: token, event: event}
		return scopes, true
	})
	return token
}

// take reports whether token is still pending for key, and consumes it.
func (d *delays) take(key string, token uint64) (pending bool) {
	d.Update(key, func(scopes map[string]delayed, ok bool) (map[string]delayed, bool) {
		for scope, dl := range scopes {
			if dl.token == token {
				delete(scopes, scope)
				pending = true
				break
			}
		}
		return scopes, len(scopes) > 0
	})
	return pending
}

// cancelPod cancels the action postponed for the pod if the pod's change,
// which raised event and leaves it pending or not, ends the reason for it
// (cancels).
func (d *delays) cancelPod(key, pod string, event bus.Event, pending bool) {
	d.Update(key, func(scopes map[string]delayed, ok bool) (map[string]delayed, bool) {
		if dl, ok := scopes[pod]; ok && cancels(dl.event, event, pending) {
			delete(scopes, pod)
		}
		return scopes, len(scopes) > 0
	})
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
