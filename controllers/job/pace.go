package job

import (
	"sync"
	"time"

	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/ringfire/ringfire/controllers/job/state"
)

// DefaultStatusCoalesce is the default window of count-only status writes;
// docs/benchmarks.md has the measurement behind it.
const DefaultStatusCoalesce = time.Second

// pacer merges a Job's count-only status writes over a window. A new phase
// (or reason, retry, version, condition) is written at once and never waits.
// A change of pod counts waits until a window has passed since the first
// change not yet written, and at least a window since the Job's last write,
// then goes out in one write with whatever the counts are by then. So pods
// that are created, bound and started within a window cost no write of their
// own: their counts ride on the phase write that follows (Pending → Running),
// or on the one write at the window's end.
type pacer struct {
	window time.Duration // 0: no merging

	mu     sync.Mutex
	last   map[string]time.Time // Job key → its last status write
	held   map[string]time.Time // Job key → its first count change not written yet
	writes int                  // since the last prune
}

// wait is how long a count-only write of key must wait at now; 0 to write.
// The first call for a change starts its window.
func (p *pacer) wait(key string, now time.Time) time.Duration {
	if p.window <= 0 {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held == nil {
		p.held = map[string]time.Time{}
	}
	since, ok := p.held[key]
	if !ok || now.Sub(since) > 2*p.window {
		// A change held back whose write never came (the counts went back, or the Job
		// moved on without a write) does not make a new one due at once.
		since, p.held[key] = now, now
	}
	due := since.Add(p.window)
	if last, ok := p.last[key]; ok && last.Add(p.window).After(due) {
		due = last.Add(p.window)
	}
	return max(due.Sub(now), 0)
}

// wrote records a status write of key at now: whatever was held went out.
func (p *pacer) wrote(key string, now time.Time) {
	if p.window <= 0 {
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
			if now.Sub(at) >= p.window {
				delete(p.last, k)
			}
		}
		for k, at := range p.held {
			if now.Sub(at) > 2*p.window {
				delete(p.held, k)
			}
		}
	}
}

// forget drops key, a deleted Job.
func (p *pacer) forget(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.last, key)
	delete(p.held, key)
}

func (p *pacer) forgetWhere(drop func(key string) bool) {
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

// wakeAfter looks at the Job at key again after d, unless a look is already
// due by then.
func (c *Controller) wakeAfter(key string, d time.Duration) {
	c.WakeAfter(key, request{Request: state.Request{Event: bus.OutOfSyncEvent}}, d)
}
