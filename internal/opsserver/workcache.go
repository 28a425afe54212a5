package opsserver

import (
	"sync"
	"sync/atomic"
	"time"
)

// gatherEvery is how often at most the status page gathers the registry:
// a gather reads every series, and the Jobs gauge has one per phase and
// Queue, so its cost grows with the cluster; polling the page must not cost
// that per request. The ring and the readiness, in memory and of a fixed
// size, are read fresh for every request, so that the page shows a handover
// as it happens.
const gatherEvery = time.Second

// workGathers counts the gathers of the status page since the process
// started, for tests to check that requests share them.
var workGathers atomic.Int64

// workCache hands out the controllers' work and the Jobs by phase,
// gathering the registry at most once per gatherEvery. Requests that arrive
// while a gather is under way wait for it and share its result; none starts
// a second one.
type workCache struct {
	sample func(time.Time) (workSample, time.Duration) // workRates.sample, or a test's
	now    func() time.Time                            // time.Now, or a test's clock

	mu     sync.Mutex // held while gathering: later requests wait for the gather in flight
	last   workSample
	window time.Duration
	at     time.Time // when last was finished; zero before the first
}

// get returns a sample at most gatherEvery old, and the window of its rates.
func (c *workCache) get() (workSample, time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && c.now().Sub(c.at) < gatherEvery {
		return c.last, c.window
	}
	c.last, c.window = c.sample(c.now())
	workGathers.Add(1)
	// Measured after the gather, so that one slower than gatherEvery still
	// leaves a second between two.
	c.at = c.now()
	return c.last, c.window
}
