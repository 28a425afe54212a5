package cronjob

import (
	"sync"
	"time"
)

// keyMemory is what the controller remembers per CronJob between reconciles: the schedule
// times it has counted as missed. It is not needed for correctness; it keeps metrics from
// multiplying. (The wake-ups are the Base's, kit.Wakeups.)
type keyMemory struct {
	mu   sync.Mutex
	keys map[string]*memo
}

type memo struct {
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
