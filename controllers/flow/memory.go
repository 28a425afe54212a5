package flow

import (
	"sync"
	"time"

	flowv1 "volcano.sh/apis/pkg/apis/flow/v1alpha1"
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
	mu    sync.Mutex
	flows map[string]*memo
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

func (m *memory) get(key string) *memo {
	if m.flows == nil {
		m.flows = map[string]*memo{}
	}
	e := m.flows[key]
	if e == nil {
		e = &memo{creating: map[string]time.Time{}, deleting: map[string]time.Time{}, told: map[string]string{}}
		m.flows[key] = e
	}
	return e
}

// expect records a create (or delete) of the Job name by the flow at key, issued at now.
func (m *memory) expect(key, name string, deleting bool, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.get(key)
	if deleting {
		e.deleting[name] = now.Add(createTTL)
	} else {
		e.creating[name] = now.Add(createTTL)
	}
}

// pending reports whether a create (or delete) of the Job name is on its way to the informer.
func (m *memory) pending(key, name string, deleting bool, now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.flows[key]
	if e == nil {
		return false
	}
	set := e.creating
	if deleting {
		set = e.deleting
	}
	until, ok := set[name]
	if ok && !now.Before(until) {
		delete(set, name)
		return false
	}
	return ok
}

// seen forgets the expectation the informer has just met: the Job name appeared (or went).
func (m *memory) seen(key, name string, deleted bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.flows[key]; e != nil {
		if deleted {
			delete(e.deleting, name)
		} else {
			delete(e.creating, name)
		}
	}
}

// tell reports whether the warning (reason, msg) is news for the flow at key, and notes it.
func (m *memory) tell(key, reason, msg string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.get(key)
	if e.told[reason] == msg {
		return false
	}
	e.told[reason] = msg
	return true
}

// resolved forgets a warning told, so that it is told again if the fault comes back.
func (m *memory) resolved(key, reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.flows[key]; e != nil {
		delete(e.told, reason)
	}
}

// wrote records that the flow's status was written: nothing is held back any more.
func (m *memory) wrote(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.get(key)
	e.unwritten, e.from = nil, ""
}

// holdBack remembers st, computed from the flow at resourceVersion from and not written yet.
func (m *memory) holdBack(key, from string, st *flowv1.JobFlowStatus) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.get(key)
	e.unwritten, e.from = st.DeepCopy(), from
}

// heldBack returns the status held back from the flow at resourceVersion from, if any.
func (m *memory) heldBack(key, from string) (*flowv1.JobFlowStatus, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.flows[key]; e != nil && e.unwritten != nil && e.from == from {
		return e.unwritten.DeepCopy(), true
	}
	return nil, false
}

func (m *memory) forget(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.flows, key)
}

func (m *memory) forgetWhere(match func(key string) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key := range m.flows {
		if match(key) {
			delete(m.flows, key)
		}
	}
}
