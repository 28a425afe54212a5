package cronjob

import (
	"context"
	"sync"
	"time"

	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// keyMemory is what the controller remembers per CronJob between reconciles: the wake-up it
// asked the dispatcher for, and the schedule times it has counted as missed. Neither is
// needed for correctness; they keep timers and metrics from multiplying.
type keyMemory struct {
	mu   sync.Mutex
	keys map[string]*memo
}

type memo struct {
	wake  time.Time       // the wake-up asked for
	term  context.Context // the slot context it was asked in: a lost slot drops it
	noted map[string]time.Time
}

func (m *keyMemory) get(key string) *memo {
	if m.keys == nil {
		m.keys = map[string]*memo{}
	}
	e := m.keys[key]
	if e == nil {
		e = &memo{}
		m.keys[key] = e
	}
	return e
}

// claimWake reports whether a wake-up at at must be asked for: false when one asked in the
// same live term comes after now and no later than at.
func (m *keyMemory) claimWake(key string, term context.Context, now, at time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.get(key)
	if e.term == term && term.Err() == nil && e.wake.After(now) && !e.wake.After(at) {
		return false
	}
	e.wake, e.term = at, term
	return true
}

// note notes the schedule time for reason and reports the one noted before; fresh is false
// when it was that one already.
func (m *keyMemory) note(key, reason string, scheduled time.Time) (prev time.Time, fresh bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.get(key)
	if e.noted == nil {
		e.noted = map[string]time.Time{}
	}
	prev = e.noted[reason]
	e.noted[reason] = scheduled
	return prev, !prev.Equal(scheduled)
}

// firstNote reports whether the schedule time has not been noted for reason yet, and notes it.
func (m *keyMemory) firstNote(key, reason string, scheduled time.Time) bool {
	_, fresh := m.note(key, reason, scheduled)
	return fresh
}

func (m *keyMemory) forget(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.keys, key)
}

func (m *keyMemory) forgetWhere(match func(key string) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key := range m.keys {
		if match(key) {
			delete(m.keys, key)
		}
	}
}

// writtenCronJobs remembers the CronJob each status write returned until the informer has
// caught up, so that the next reconcile (often at once, on the event of the Job just made)
// reads the status it just wrote rather than the older cached one: it would not see the new
// Job in status.active, and its own write would only fail on a resourceVersion conflict.
type writtenCronJobs struct {
	mu   sync.Mutex
	jobs map[string]writtenCronJob
}

type writtenCronJob struct {
	from string // the resourceVersion the write replaced
	cj   *batch.CronJob
}

func (w *writtenCronJobs) remember(from string, cj *batch.CronJob) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.jobs == nil {
		w.jobs = map[string]writtenCronJob{}
	}
	w.jobs[cj.Namespace+"/"+cj.Name] = writtenCronJob{from: from, cj: cj}
}

// latest returns the written CronJob if the cache still holds the version it replaced, else
// the cached one.
func (w *writtenCronJobs) latest(cached *batch.CronJob) *batch.CronJob {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := cached.Namespace + "/" + cached.Name
	if wc, ok := w.jobs[key]; ok {
		if wc.from == cached.ResourceVersion {
			return wc.cj
		}
		delete(w.jobs, key)
	}
	return cached
}

func (w *writtenCronJobs) forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.jobs, key)
}
