package fencetest

import (
	"fmt"
	"strings"
	"time"
)

// write is one write request of a replica on a key-owned object, as the API
// server's audit log records it.
type write struct {
	Replica  string
	Slot     int
	Verb     string
	Object   string // resource[/subresource] namespace/name
	Code     int    // HTTP status of the response
	Received time.Time
	// Completed is when the API server had its answer, the ResponseComplete
	// stage: a write that landed landed by then.
	Completed time.Time
	// NotApplied says why a write whose answer does not tell (a 5xx)
	// cannot have been applied all the same: its body was never read, or
	// its resourceVersion precondition was older than a version an earlier
	// write had produced. Empty when nothing rules it out.
	NotApplied string
}

// landed reports whether the API server accepted the write.
func (w write) landed() bool { return w.Code >= 200 && w.Code < 300 }

// mayHaveLanded reports whether the write may have changed the object: it
// was accepted, or its answer does not say (a 5xx such as a timeout or a
// cancelled request, after which etcd may still have committed it) and
// nothing rules it out (NotApplied). A 4xx is a refusal.
func (w write) mayHaveLanded() bool {
	return w.landed() || (w.Code >= 500 || w.Code == 0) && w.NotApplied == ""
}

func (w write) String() string {
	return fmt.Sprintf("%s %s %s (slot %d) → %d, received %s, completed %s",
		w.Replica, w.Verb, w.Object, w.Slot, w.Code, clock(w.Received), clock(w.Completed))
}

// tenure is one replica's hold of one slot, as the observer placed it. The
// moment the slot key was created is known to lie in [Earliest, Latest]
// (see ownership.place); End is when its deletion reached the observer, zero
// while it lasts.
type tenure struct {
	Holder           string
	Earliest, Latest time.Time
	End              time.Time
}

// staleWrite is a write that landed, or may have landed, while another
// replica's tenure of its slot had begun and the slot had not come back to
// the writer.
type staleWrite struct {
	write
	Owner      string    // whose tenure it landed in; "" if no replica held the slot
	OwnerSince time.Time // by when that tenure had begun
	// Straddles is set when the request reached the API server before that
	// tenure can have begun: it was sent while the writer still held the
	// slot, and landed somewhere between its receipt and its completion.
	Straddles bool
	// MaybeOwn is set when the writer's own next tenure of the slot may
	// have begun before the write completed: the observer cannot tell the
	// two apart, so the write is not counted against the writer.
	MaybeOwn bool
}

func (s staleWrite) String() string {
	owner := "no replica held the slot"
	if s.Owner != "" {
		owner = fmt.Sprintf("%s held the slot by %s", s.Owner, clock(s.OwnerSince))
	}
	if s.Straddles {
		owner += "; the request was received before that"
	}
	if s.MaybeOwn {
		owner += "; the writer's own next tenure may have begun before the write completed"
	}
	if !s.landed() {
		owner += "; the answer does not say whether it landed"
	}
	return s.write.String() + ": " + owner
}

// staleWrites returns the writes that landed, or may have landed, in
// another replica's tenure.
//
// A write by R on slot s that completed at time T is stale when the last
// tenure of s that had certainly begun by T (Latest ≤ T) is another
// replica's, and no later tenure of R's may have begun by T (Earliest ≤
// T): another replica's ownership had begun, and ownership had not come
// back to R. The tenure's end does not matter: once another replica has
// held the slot, R may not write for it again until it acquires it anew.
// When a later tenure of R's may have begun, the write is returned marked
// MaybeOwn. A write on a slot no tenure had certainly begun on, by a
// replica none of whose tenures may have begun, is stale with no owner.
//
// The times compare as they are: the audit timestamps are the API server's
// clock and the tenure bounds the observer's, and both are the wall clock of
// this one machine.
func staleWrites(writes []write, tenures map[int][]tenure) []staleWrite {
	var stale []staleWrite
	for _, w := range writes {
		if !w.mayHaveLanded() {
			continue
		}
		ts := tenures[w.Slot]
		i := lastCertain(ts, w.Completed)
		if i >= 0 && ts[i].Holder == w.Replica {
			continue
		}
		s := staleWrite{write: w, MaybeOwn: mayHold(ts[i+1:], w.Replica, w.Completed)}
		if i >= 0 {
			s.Owner, s.OwnerSince, s.Straddles = ts[i].Holder, ts[i].Latest, w.Received.Before(ts[i].Earliest)
		} else if s.MaybeOwn {
			continue // it may have been the slot's first holder
		}
		stale = append(stale, s)
	}
	return stale
}

// lastCertain returns the index of the last tenure among ts, in the order
// they were created, that had certainly begun by t, or -1.
func lastCertain(ts []tenure, t time.Time) int {
	last := -1
	for i, tn := range ts {
		if !tn.Latest.After(t) {
			last = i
		}
	}
	return last
}

// mayHold reports whether a tenure of holder among ts may have begun by t.
func mayHold(ts []tenure, holder string, t time.Time) bool {
	for _, tn := range ts {
		if tn.Holder == holder && !tn.Earliest.After(t) {
			return true
		}
	}
	return false
}

// ownMargin returns, over the landed writes made in a tenure of their
// writer's, the smallest time from the latest moment that tenure can have
// begun to the write's completion: how close real writes come to the
// boundary the check draws.
func ownMargin(writes []write, tenures map[int][]tenure) (time.Duration, bool) {
	var least time.Duration
	found := false
	for _, w := range writes {
		if !w.landed() {
			continue
		}
		ts := tenures[w.Slot]
		i := lastCertain(ts, w.Completed)
		if i < 0 || ts[i].Holder != w.Replica {
			continue
		}
		if d := w.Completed.Sub(ts[i].Latest); !found || d < least {
			least, found = d, true
		}
	}
	return least, found
}

// describeStale lists up to n stale writes, one a line.
func describeStale(stale []staleWrite, n int) string {
	var b strings.Builder
	for i, s := range stale {
		if i == n {
			fmt.Fprintf(&b, "... and %d more\n", len(stale)-n)
			break
		}
		fmt.Fprintf(&b, "%s\n", s)
	}
	return b.String()
}

// clock prints a time to the microsecond, as the audit log records it.
func clock(t time.Time) string { return t.Format("15:04:05.000000") }
