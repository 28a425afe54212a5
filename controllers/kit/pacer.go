package kit

import (
	"sync"
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

	mu     sync.Mutex
	last   map[string]time.Time // key → its last status write
	held   map[string]time.Time // key → its first count change not written yet
	writes int                  // since the last prune
}

// Wait is how long a count-only write of key must wait at now; 0 to write.
// The first call for a change starts its window.
func (p *Pacer) Wait(key string, now time.Time) time.Duration {
	if p.Window <= 0 {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held == nil {
		p.held = map[string]time.Time{}
	}
	since, ok := p.held[key]
	if !ok || now.Sub(since) > 2*p.Window {
		// A change held back whose write never came (the counts went back, or the Job
		// moved on without a write) does not make a new one due at once.
		since, p.held[key] = now, now
	}
	due := since.Add(p.Window)
	if last, ok := p.last[key]; ok && last.Add(p.Window).After(due) {
		due = last.Add(p.Window)
	}
	return max(due.Sub(now), 0)
}

// Wrote records a status write of key at now: whatever was held went out.
func (p *Pacer) Wrote(key string, now time.Time) {
	if p.Window <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last == nil {
		p.last = map[string]time.Time{}
	}
	p.last[key] = now
	delete(p.held, key)
	if p.writes++; p.writes >= 1024 { // keep only what still bears on a window
		p.writes = 0
		for k, at := range p.last {
			if now.Sub(at) >= p.Window {
				delete(p.last, k)
			}
		}
		for k, at := range p.held {
			if now.Sub(at) > 2*p.Window {
				delete(p.held, k)
			}
		}
	}
}

// Forget drops key, whose object is gone.
func (p *Pacer) Forget(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.last, key)
	delete(p.held, key)
}

// ForgetWhere drops the keys drop reports.
func (p *Pacer) ForgetWhere(drop func(key string) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for key := range p.last {
		if drop(key) {
			delete(p.last, key)
		}
	}
	for key := range p.held {
		if drop(key) {
			delete(p.held, key)
		}
	}
}
