package cronjob

import (
	"time"

	"github.com/ringfire/ringfire/controllers/kit"
)

// keyMemory is what the controller remembers per CronJob between reconciles: the schedule
// times it has counted as missed, by reason. It is not needed for correctness; it keeps
// metrics from multiplying. (The wake-ups are the Base's, kit.Wakeups.)
type keyMemory struct {
	kit.Keyed[map[string]time.Time]
}

// note notes the schedule time for reason and reports the one noted before; fresh is false
// when it was that one already.
func (m *keyMemory) note(key, reason string, scheduled time.Time) (prev time.Time, fresh bool) {
	m.Update(key, func(noted map[string]time.Time, _ bool) (map[string]time.Time, bool) {
		if noted == nil {
			noted = map[string]time.Time{}
		}
		prev = noted[reason]
		noted[reason] = scheduled
		return noted, true
	})
	return prev, !prev.Equal(scheduled)
}

// firstNote reports whether the schedule time has not been noted for reason yet, and notes it.
func (m *keyMemory) firstNote(key, reason string, scheduled time.Time) bool {
	_, fresh := m.note(key, reason, scheduled)
	return fresh
}
