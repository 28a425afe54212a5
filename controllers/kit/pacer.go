package kit

import (
	"sync/atomic"
	"time"
)

// Pacer merges an object's count-only status writes over a window (a Job's pod counts, a
// Queue's PodGroup counts, a JobFlow's Job states). A new phase (or reason, state,
// condition) is written at once and never waits: only the caller knows which is which.
// A change of counts waits until a window has passed since the first
// change not yet written, and at least a window since the Job's last write,
// then goes out in one write with whatever the counts are by then. So pods
// that are created, bound and started within a window cost no write of their
// own: their counts ride on the phase write that follows (Pending → Running),
// or on the one write at the window's end. The zero value writes at once.
type Pacer struct {
	Window time.Duration // 0: no merging

	keys   Keyed[paced]
	writes atomic.Int64 // since the last prune
}

// paced is what a Pacer remembers of a key.
type paced struct {
	last, held       time.Time // its last status write; its first count change not written yet
	hasLast, hasHeld bool
}

// Wait is how long a count-only write of key must wait at now; 0 to write.
// The first call for a change starts its window.
func (p *Pacer) Wait(key string, now time.Time) (wait time.Duration) {
	if p.Window <= 0 {
		return 0
	}
	p.keys.Update(key, func(k paced, _ bool) (paced, bool) {
		if !k.hasHeld || now.Sub(k.held) > 2*p.Window {
			// A change held back whose write never came (the counts went back, or the Job
			// moved on without a write) does not make a new one due at once.
			k.held, k.hasHeld = now, true
		}
		due := k.held.Add(p.Window)
		if k.hasLast && k.last.Add(p.Window).After(due) {
			due = k.last.Add(p.Window)
		}
		wait = max(due.Sub(now), 0)
		return k, true
	})
	return wait
}

// Wrote records a status write of key at now: whatever was held went out.
func (p *Pacer) Wrote(key string, now time.Time) {
	if p.Window <= 0 {
		return
	}
	p.keys.Set(key, paced{last: now, hasLast: true})
	if p.writes.Add(1)%1024 == 0 { // keep only what still bears on a window
		p.keys.Prune(func(_ string, k paced) bool {
			return (!k.hasLast || now.Sub(k.last) >= p.Window) && (!k.hasHeld || now.Sub(k.held) > 2*p.Window)
		})
	}
}

// Forget drops key, whose object is gone.
func (p *Pacer) Forget(key string) { p.keys.Forget(key) }

// ForgetWhere drops the keys drop reports.
func (p *Pacer) ForgetWhere(drop func(key string) bool) { p.keys.ForgetWhere(drop) }
