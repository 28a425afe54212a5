package chaostest

import (
	"fmt"
	"testing"
	"time"
)

// Three replicas run Jobs while the ring grows to five, one replica at a
// time, and then shrinks to one by graceful stops. After each step every
// slot is held by its assigned member within TTL + 1 s (plus a CI margin);
// every Job completes, no pod is created twice, no Job is reconciled by two
// replicas at once.
func TestScaleUnderLoad(t *testing.T) {
	const ttl = 5 * time.Second // the default of `ringfire run`
	s, pods, l := startUnderLoad(t, "scale", ttl)

	step := func(what string, change func()) {
		begin := time.Now()
		change()
		changed := time.Since(begin)
		settled := settle(t, s, ttl)
		t.Logf("%s: change took %v, ring settled %v later (%d replicas)",
			what, changed.Round(time.Millisecond), settled.Round(time.Millisecond), len(s.IDs()))
		time.Sleep(time.Second) // work goes on between steps
	}
	for _, id := range []string{"r3", "r4"} {
		step(fmt.Sprintf("scale up: start %s", id), func() { s.StartReplica(id) })
	}
	for _, id := range []string{"r4", "r3", "r2", "r1"} {
		step(fmt.Sprintf("scale down: stop %s", id), func() { s.StopReplica(id) })
	}
	if ids := s.IDs(); len(ids) != 1 || ids[0] != "r0" {
		t.Fatalf("replicas after scaling down: %v, want [r0]", ids)
	}
	l.finish(pods, 3*time.Minute)
}
