package shard

import (
	"slices"
	"testing"
	"time"
)

// The view copies holders and assignment on request; the first read marks
// nothing as moved, later changes mark their slots for MovedWithin.
func TestRingViewHoldersAssignmentAndMoves(t *testing.T) {
	v := newRingView(4)
	start := time.Now()
	var st Status
	v.fill(&st, start)
	if st.Holders != nil || st.Assignment != nil || st.Moved != nil {
		t.Fatalf("before any read: %+v, want no holders, assignment or moves", st)
	}

	v.setAssignment([]string{"a", "a", "b", "b"})
	v.applyHolders(holderUpdate{reset: true, holders: map[int]keyHolder{
		0: {Lease: 1, Holder: "a"}, 1: {Lease: 1, Holder: "a"}, 2: {Lease: 2, Holder: "a"},
	}}, start)
	st = Status{}
	v.fill(&st, start)
	if want := []string{"a", "a", "a", ""}; !slices.Equal(st.Holders, want) {
		t.Errorf("holders %q, want %q", st.Holders, want)
	}
	if want := []string{"a", "a", "b", "b"}; !slices.Equal(st.Assignment, want) {
		t.Errorf("assignment %q, want %q", st.Assignment, want)
	}
	if st.Moved != nil {
		t.Errorf("moved %v after the first read, want none", st.Moved)
	}

	// Slot 2 is handed over to b, slot 3 acquired; a key with lease 0 is free.
	later := start.Add(time.Second)
	v.applyHolders(holderUpdate{holders: map[int]keyHolder{2: {}}}, later)
	v.applyHolders(holderUpdate{holders: map[int]keyHolder{2: {Lease: 3, Holder: "b"}, 3: {Lease: 3, Holder: "b"}}}, later)
	st = Status{}
	v.fill(&st, later)
	if want := []string{"a", "a", "b", "b"}; !slices.Equal(st.Holders, want) {
		t.Errorf("holders %q, want %q", st.Holders, want)
	}
	if want := []int{2, 3}; !slices.Equal(st.Moved, want) {
		t.Errorf("moved %v, want %v", st.Moved, want)
	}
	st.Holders[0] = "changed by the caller"
	st = Status{}
	v.fill(&st, later.Add(MovedWithin))
	if st.Moved != nil || st.Holders[0] != "a" {
		t.Errorf("after MovedWithin: moved %v, holder of 0 %q; want none moved and a", st.Moved, st.Holders[0])
	}

	// A read after a broken watch marks only the slots that differ.
	v.applyHolders(holderUpdate{reset: true, holders: map[int]keyHolder{
		0: {Lease: 1, Holder: "a"}, 1: {Lease: 1, Holder: "a"}, 2: {Lease: 3, Holder: "b"},
	}}, later.Add(MovedWithin))
	st = Status{}
	v.fill(&st, later.Add(MovedWithin))
	if want := []int{3}; !slices.Equal(st.Moved, want) {
		t.Errorf("moved %v after a read, want %v", st.Moved, want)
	}
}
