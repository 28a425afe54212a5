package shard

import (
	"slices"
	"sync"
	"time"
)

// MovedWithin is how long after its holder changed a slot counts as moved
// in Status.Moved.
const MovedWithin = 10 * time.Second

// ringView is every slot of the ring as this replica's tenures see it: who
// holds it, who the assignment gives it to, and when its holder last
// changed. A tenure writes only what an event changes; Status copies the
// whole view, so the cost of a copy falls on whoever asks for one.
type ringView struct {
	mu         sync.Mutex
	holders    []string    // member id named by each slot's key, "" when free
	changed    []time.Time // when each slot's holder last changed; zero until it does
	read       bool        // the slot keys have been read in full at least once
	assignment []string    // never written in place: a new assignment is a new slice
}

func newRingView(slots int) *ringView {
	return &ringView{holders: make([]string, slots), changed: make([]time.Time, slots)}
}

// setAssignment records the owner of each slot by the latest member view.
func (v *ringView) setAssignment(a []string) {
	v.mu.Lock()
	v.assignment = a
	v.mu.Unlock()
}

// applyHolders takes a read or a change of the slot keys. The first read
// marks no slot as moved: it is where this replica's view starts.
func (v *ringView) applyHolders(u holderUpdate, now time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	set := func(s int, id string) {
		if id != v.holders[s] {
			if v.read {
				v.changed[s] = now
			}
			v.holders[s] = id
		}
	}
	if u.reset {
		for s := range v.holders {
			set(s, u.holders[s].holderID())
		}
		v.read = true
		return
	}
	for s, key := range u.holders {
		if s >= 0 && s < len(v.holders) {
			set(s, key.holderID())
		}
	}
}

// fill copies the view into st: the holders once the slot keys have been
// read, the assignment once a member view has come, and the slots moved
// within MovedWithin of now.
func (v *ringView) fill(st *Status, now time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	st.Assignment = slices.Clone(v.assignment)
	if !v.read {
		return
	}
	st.Holders = slices.Clone(v.holders)
	for s, at := range v.changed {
		if !at.IsZero() && now.Sub(at) < MovedWithin {
			st.Moved = append(st.Moved, s)
		}
	}
}
