package fencetest

import (
	"fmt"
	"sort"
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
	// Outdated is set when the write's resourceVersion precondition was
	// older than a version of the object that an earlier write had already
	// produced: it cannot have landed, whatever the answer says.
	Outdated bool
}

// landed reports whether the API server accepted the write.
func (w write) landed() bool { return w.Code >= 200 && w.Code < 300 }

// mayHaveLanded reports whether the write may have changed the object: it
// was accepted, or its answer does not say (a 5xx such as a timeout or a
// cancelled request, after which etcd may still have committed it) and its
// precondition was not already outdated. A 4xx is a refusal.
func (w write) mayHaveLanded() bool {
	return w.landed() || (w.Code >= 500 || w.Code == 0) && !w.Outdated
}

func (w write) String() string {
	return fmt.Sprintf("%s %s %s (slot %d) → %d, received %s, completed %s",
		w.Replica, w.Verb, w.Object, w.Slot, w.Code, clock(w.Received), clock(w.Completed))
}

// tenure is one replica's hold of one slot as the observer saw it: from the
// moment the creation of the slot key reached the observer to the moment its
// deletion did (End is zero while it lasts).
type tenure struct {
	Holder     string
	Begin, End time.Time
}

// staleWrite is a write that landed while another replica's tenure of its
// slot had begun and the slot had not come back to the writer.
type staleWrite struct {
	write
	Owner      string    // whose tenure it landed in; "" if no replica had held the slot yet
	OwnerSince time.Time // when that tenure began
	// Straddles is set when the request reached the API server before that
	// tenure began: it was sent while the writer still held the slot, and
	// landed somewhere between its receipt and its completion.
	Straddles bool
	// WithinLag is set when the writer's own next tenure of the slot was
	// observed within the observer's lag after the write: the write may
	// have landed after the writer acquired the slot, before the observer
	// heard of it.
	WithinLag bool
}

func (s staleWrite) String() string {
	owner := "no replica had held the slot yet"
	if s.Owner != "" {
		owner = fmt.Sprintf("%s held the slot since %s", s.Owner, clock(s.OwnerSince))
	}
	if s.Straddles {
		owner += "; the request was received before that"
	}
	if s.WithinLag {
		owner += "; the writer's own tenure was observed less than the observer's lag later"
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
// tenure of s that began at or before T is not R's: another replica's
// ownership had begun, and ownership had not come back to R since. The
// tenure's end does not matter: once another replica has held the slot, R
// may not write for it again until it acquires it anew.
//
// The times compare as they are: the audit timestamps are the API server's
// clock and the tenure times the observer's, and both are the wall clock of
// this one machine. A tenure's begin is when its creation reached the
// observer, up to the observer's lag after it happened. For another
// replica's tenure that errs on the safe side: a write flagged here landed
// after that tenure had really begun. For the writer's own next tenure it
// does not: a write made right after the writer acquired the slot, before
// the observer heard of it, would look stale. Such a write is marked
// WithinLag when the writer's next tenure was observed no more than lag
// after the write completed; the caller gives the observer's measured lag.
func staleWrites(writes []write, tenures map[int][]tenure, lag time.Duration) []staleWrite {
	var stale []staleWrite
	for _, w := range writes {
		if !w.mayHaveLanded() {
			continue
		}
		ts := tenures[w.Slot]
		last, ok := lastBegun(ts, w.Completed)
		if ok && last.Holder == w.Replica {
			continue
		}
		s := staleWrite{write: w}
		if ok {
			s.Owner, s.OwnerSince, s.Straddles = last.Holder, last.Begin, w.Received.Before(last.Begin)
		}
		if next, ok := nextBegun(ts, w.Replica, w.Completed); ok && next.Begin.Sub(w.Completed) <= lag {
			s.WithinLag = true
		}
		stale = append(stale, s)
	}
	return stale
}

// lastBegun returns the tenure, among ts in order of begin, that began last
// at or before t.
func lastBegun(ts []tenure, t time.Time) (tenure, bool) {
	i := sort.Search(len(ts), func(i int) bool { return ts[i].Begin.After(t) })
	if i == 0 {
		return tenure{}, false
	}
	return ts[i-1], true
}

// nextBegun returns holder's first tenure among ts that began after t.
func nextBegun(ts []tenure, holder string, t time.Time) (tenure, bool) {
	for _, tn := range ts[sort.Search(len(ts), func(i int) bool { return ts[i].Begin.After(t) }):] {
		if tn.Holder == holder {
			return tn, true
		}
	}
	return tenure{}, false
}

// ownMargin returns, over the landed writes made in the writer's own
// tenure, the smallest time from the tenure's observed begin to the write's
// completion. The observer sees a begin a little after it happens; a write
// closer to that than the observer's lag would be taken for another
// replica's, so the test logs this margin to show how far from that it is.
func ownMargin(writes []write, tenures map[int][]tenure) (time.Duration, bool) {
	var least time.Duration
	found := false
	for _, w := range writes {
		if !w.landed() {
			continue
		}
		last, ok := lastBegun(tenures[w.Slot], w.Completed)
		if !ok || last.Holder != w.Replica {
			continue
		}
		if d := w.Completed.Sub(last.Begin); !found || d < least {
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
