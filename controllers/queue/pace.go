package queue

import (
	"sync"
	"time"
)

// pacer spaces out the status writes of a queue that only refresh its PodGroup counts: at most
// one per interval per queue, the last one carrying the counts of the moment it runs. A busy
// queue sees a phase change every few milliseconds; writing each would put one Queue update per
// PodGroup transition on the API server. State changes are never held back.
type pacer struct {
	interval time.Duration

	mu   sync.Mutex
	last map[string]time.Time // the last status write per queue
	due  map[string]time.Time // when the delayed write of a queue is due, if one is scheduled
}

func newPacer(interval time.Duration) *pacer {
	return &pacer{interval: interval, last: map[string]time.Time{}, due: map[string]time.Time{}}
}

// hold reports how long a counts-only write of queue must wait (zero: write now) and whether
// the caller must schedule the delayed write, none being scheduled yet. A scheduled write that
// never ran (its slot was lost) counts as not scheduled once its time has passed.
func (p *pacer) hold(queue string, now time.Time) (wait time.Duration, schedule bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	next := p.last[queue].Add(p.interval)
	if !now.Before(next) {
		return 0, false
	}
	if due, ok := p.due[queue]; ok && !now.After(due) {
		return next.Sub(now), false
	}
	p.due[queue] = next
	return next.Sub(now), true
}

// wrote records a status write of queue at now.
func (p *pacer) wrote(queue string, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last[queue] = now
	delete(p.due, queue)
}

// forget drops what is known of queue.
func (p *pacer) forget(queue string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.last, queue)
	delete(p.due, queue)
}
