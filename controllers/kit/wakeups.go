package kit

import (
	"context"
	"time"
)

// Wakeups keeps one delayed look per key at a time, the earliest asked for. A controller
// waiting for a window to end, a backoff to pass or an expectation to lapse asks for a look
// on every reconcile that meets the wait; without this, each would add a timer. A look is
// asked in a term (the slot's context when it was asked): one whose term ended (the slot was
// lost, and its timer dropped with it) counts as none, as does one whose time has passed.
// The zero value is ready to use.
type Wakeups struct {
	at Keyed[wake]
}

type wake struct {
	at   time.Time
	term context.Context
}

// Due records a look at key at at, asked at now in term, and reports whether its timer is to
// be set: not when a look of a live term is already due by then.
func (w *Wakeups) Due(key string, term context.Context, now, at time.Time) (set bool) {
	w.at.Update(key, func(due wake, ok bool) (wake, bool) {
		if ok && due.term.Err() == nil && due.at.After(now) && !due.at.After(at) {
			return due, true
		}
		set = true
		return wake{at: at, term: term}, true
	})
	return set
}

// Passed drops key's look once its time has passed at now: the reconcile it asked for runs.
func (w *Wakeups) Passed(key string, now time.Time) {
	w.at.Update(key, func(due wake, ok bool) (wake, bool) {
		return due, ok && due.at.After(now)
	})
}

// Forget drops key's look (its object is gone, or its slot changed hands).
func (w *Wakeups) Forget(key string) { w.at.Forget(key) }

// ForgetWhere drops the looks of the keys drop reports.
func (w *Wakeups) ForgetWhere(drop func(key string) bool) { w.at.ForgetWhere(drop) }

// At reports when key's look is due, if one is.
func (w *Wakeups) At(key string) (time.Time, bool) {
	due, ok := w.at.Get(key)
	return due.at, ok
}
