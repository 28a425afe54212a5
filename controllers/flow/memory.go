package flow

import (
	flowv1 "volcano.sh/apis/pkg/apis/flow/v1alpha1"

	"github.com/ringfire/ringfire/controllers/kit"
)

// memory is what the JobFlow controller remembers per flow between reconciles (the Job creates
// and deletes issued and not seen yet are the cache's expectations, Config.Expectations): the
// warnings already told (so that a flow that stays wrong costs one Event, not one per
// reconcile), and when its status was last written with the status held back since (so that changes that move no phase are merged into one write per
// window, and the phase histories lose none of them). None of it is needed for correctness
// across replicas: a slot's next owner starts with none, and the deterministic Job names and
// preconditions keep its writes safe.
type memory struct {
	kit.Keyed[memo]
}

type memo struct {
	told map[string]string // warning reason → the message told
	// unwritten is the status computed and held back (coalesced) from the flow at resourceVersion
	// from: the next reconcile goes on from it, so the phase histories keep what it saw.
	unwritten *flowv1.JobFlowStatus
	from      string
}

// change changes the flow's memo under the memory's lock, making one if there is none.
func (m *memory) change(key string, f func(e *memo)) {
	m.Update(key, func(e memo, _ bool) (memo, bool) {
		if e.told == nil {
			e = memo{told: map[string]string{}}
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
