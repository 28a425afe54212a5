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

// pacer spaces a Job's count-only status writes at least a window apart.
// A new phase (or reason, retry, version, condition) is written at once and
// never waits; pod counts that change meanwhile wait for the window to end
// and go out in one write, with whatever the counts are by then. So a Job
// whose ten pods start and finish within a few seconds costs a write per
// phase and a few for the counts, not one per pod event.
type pacer struct {
	window time.Duration // 0: no spacing

	mu     sync.Mutex
	last   map[string]time.Time // Job key → its last status write
	writes int                  // since the last prune
}

// wait is how long a count-only write of key must wait at now; 0 to write.
func (p *pacer) wait(key string, now time.Time) time.Duration {
	if p.window <= 0 {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	last, ok := p.last[key]
	if !ok {
		return 0
	}
	return max(last.Add(p.window).Sub(now), 0)
}

// wrote records a status write of key at now.
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
	if p.writes++; p.writes >= 1024 { // keep only the writes still inside a window
		p.writes = 0
		for k, at := range p.last {
			if now.Sub(at) >= p.window {
				delete(p.last, k)
			}
		}
	}
}

// forget drops key, a deleted Job.
func (p *pacer) forget(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.last, key)
}

// wakeups keeps one delayed look per Job at a time: the earliest asked for.
// Waiting for a window to end or for an expectation to lapse asks for one
// on every reconcile that meets it; without this each would add a timer.
type wakeups struct {
	mu sync.Mutex
	at map[string]time.Time
}

// wakeAfter looks at the Job at key again after d, unless a look is already
// due by then.
func (c *Controller) wakeAfter(key string, d time.Duration) {
	now := time.Now()
	at := now.Add(d)
	w := &c.wakes
	w.mu.Lock()
	if due, ok := w.at[key]; ok && due.After(now) && !due.After(at) {
		w.mu.Unlock()
		return
	}
	if w.at == nil {
		w.at = map[string]time.Time{}
	}
	w.at[key] = at
	w.mu.Unlock()
	c.disp.EnqueueAfter(key, request{Request: state.Request{Event: bus.OutOfSyncEvent}}, d)
}

// woken drops key's due look once it has passed, and a deleted Job's.
func (c *Controller) woken(key string, gone bool) {
	w := &c.wakes
	w.mu.Lock()
	defer w.mu.Unlock()
	if due, ok := w.at[key]; ok && (gone || !due.After(time.Now())) {
		delete(w.at, key)
	}
}
