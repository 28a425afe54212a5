package job

import (
	"time"

	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/ringfire/ringfire/controllers/job/state"
)

// DefaultStatusCoalesce is the default window of count-only status writes;
// docs/benchmarks.md has the measurement behind it.
const DefaultStatusCoalesce = time.Second

// wakeAfter looks at the Job at key again after d, unless a look is already
// due by then.
func (c *Controller) wakeAfter(key string, d time.Duration) {
	c.WakeAfter(key, request{Request: state.Request{Event: bus.OutOfSyncEvent}}, d)
}
