package queue

import (
	"sync"
	"time"
)

// pacer spaces out the status writes of a queue that only refresh its PodGroup counts: at most
// one per interval per queue, the last one carrying the counts of the moment it runs. A busy
// queue sees a phase change every few milliseconds; writing each would put one Queue update per
// PodGroup transition on the API server. State changes are never held back. The delayed write
// is the controller's wake-up (kit.Base.WakeAfter): one per queue, however many changes wait.
type pacer struct {
	interval time.Duration

	mu   sync.Mutex
	last map[string]time.Time // the last status write per queue
}

func newPacer(interval time.Duration) *pacer {
	return &pacer{interval: interval, last: map[string]time.Time{}}
}

// hold reports how long a counts-only write of queue must wait; zero: write now.
func (p *pacer) hold(queue string, now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return max(p.last[queue].Add(p.interval).Sub(now), 0)
}

// wrote records a status write of queue at now.
func (p *pacer) wrote(queue string, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last[queue] = now
}

// forget drops what is known of queue.
func (p *pacer) forget(queue string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.last, queue)
}
