package flow

import (
	"time"

	flowv1 "volcano.sh/apis/pkg/apis/flow/v1alpha1"

	"github.com/ringfire/ringfire/controllers/kit"
)

// createTTL bounds how long a Job create the informer has not shown yet is remembered. The
// informer normally catches up within a second; the bound only keeps a lost event from
// holding a step up for longer.
const createTTL = 30 * time.Second

// memory is what the JobFlow controller remembers per flow between reconciles: the Job creates
// and deletes issued and not seen yet (so that a reconcile running before the informer caught
// up issues none of them again), the warnings already told (so that a flow that stays wrong
// costs one Event, not one per reconcile), and when its status was last written with the
// status held back since (so that changes that move no phase are merged into one write per
// window, and the phase histories lose none of them). None of it is needed for correctness
// across replicas: a slot's next owner starts with none, and the deterministic Job names and
// preconditions keep its writes safe.
type memory struct {
	kit.Keyed[memo]
}

type memo struct {
	creating map[string]time.Time // Job name → when the expectation lapses
	deleting map[string]time.Time
	told     map[string]string // warning reason → the message told
	// unwritten is the status computed and held back (coalesced) from the flow at resourceVersion
	// from: the next reconcile goes on from it, so the phase histories keep what it saw.
	unwritten *flowv1.JobFlowStatus
	from      string
}

// change changes the flow's memo under the memory's lock, making one if there is none.
func (m *memory) change(key string, f func(e *memo)) {
	m.Update(key, func(e memo, _ bool) (memo, bool) {
		if e.told == nil {
			e = memo{creating: map[string]time.Time{}, deleting: map[string]time.Time{}, told: map[string]string{}}
		}
		f(&e)
		return e, true
	})
}

// read reads the flow's memo under the memory's lock, if there is one.
func (m *memory) read(key string, f func(e *memo)) {
	m.Update(key, func(e memo, ok bool) (memo, bool) {
		if ok {
			f(&e)
		}
		return e, ok
	})
}

// expect records a create (or delete) of the Job name by the flow at key, issued at now.
func (m *memory) expect(key, name string, deleting bool, now time.Time) {
	m.change(key, func(e *memo) {
		if deleting {
			e.deleting[name] = now.Add(createTTL)
		} else {
			e.creating[name] = now.Add(createTTL)
		}
	})
}

// pending reports whether a create (or delete) of the Job name is on its way to the informer.
func (m *memory) pending(key, name string, deleting bool, now time.Time) (pending bool) {
	m.read(key, func(e *memo) {
		set := e.creating
		if deleting {
			set = e.deleting
		}
		until, ok := set[name]
		if ok && !now.Before(until) {
			delete(set, name)
			return
		}
		pending = ok
	})
	return pending
}

// seen forgets the expectation the informer has just met: the Job name appeared (or went).
func (m *memory) seen(key, name string, deleted bool) {
	m.read(key, func(e *memo) {
		if deleted {
			delete(e.deleting, name)
		} else {
			delete(e.creating, name)
		}
	})
}

// tell reports whether the warning (reason, msg) is news for the flow at key, and notes it.
func (m *memory) tell(key, reason, msg string) (news bool) {
	m.change(key, func(e *memo) {
		if news = e.told[reason] != msg; news {
			e.told[reason] = msg
		}
	})
	return news
}

// resolved forgets a warning told, so that it is told again if the fault comes back.
func (m *memory) resolved(key, reason string) {
	m.read(key, func(e *memo) { delete(e.told, reason) })
}

// wrote records that the flow's status was written: nothing is held back any more.
func (m *memory) wrote(key string) {
	m.change(key, func(e *memo) { e.unwritten, e.from = nil, "" })
}

// holdBack remembers st, computed from the flow at resourceVersion from and not written yet.
func (m *memory) holdBack(key, from string, st *flowv1.JobFlowStatus) {
	m.change(key, func(e *memo) { e.unwritten, e.from = st.DeepCopy(), from })
}

// heldBack returns the status held back from the flow at resourceVersion from, if any.
func (m *memory) heldBack(key, from string) (st *flowv1.JobFlowStatus, ok bool) {
	m.read(key, func(e *memo) {
		if ok = e.unwritten != nil && e.from == from; ok {
			st = e.unwritten.DeepCopy()
		}
	})
	return st, ok
}
