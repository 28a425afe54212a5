package cronjob

import (
	"context"
	"sync"
	"time"
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
