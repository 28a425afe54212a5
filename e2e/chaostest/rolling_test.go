package chaostest

import (
	"testing"
	"time"
)

// Three replicas run Jobs while each is stopped gracefully and started again
// under the same id, highest ordinal first, as a StatefulSet rolling update
// does. After every stop and every start each slot is held by its assigned
// member within TTL + 1 s (plus a CI margin); every Job completes, no pod is
// created twice, no Job is reconciled by two replicas at once.
func TestRollingRestart(t *testing.T) {
	const ttl = 5 * time.Second // the default of `ringfire run`
	s, pods, l := startUnderLoad(t, "roll", ttl)

	var total time.Duration
	for _, id := range []string{"r2", "r1", "r0"} {
		begin := time.Now()
		s.StopReplica(id)
		stopped := time.Since(begin)
		left := settle(t, s, ttl)
		s.StartReplica(id)
		joined := settle(t, s, ttl)
		total += time.Since(begin)
		t.Logf("rolling %s: graceful stop took %v, its slots held by the others %v later; restarted, it held its slots again after %v",
			id, stopped.Round(time.Millisecond), left.Round(time.Millisecond), joined.Round(time.Millisecond))
		time.Sleep(time.Second) // the new replica works for a while before the next goes
	}
	t.Logf("rolling restart of 3 replicas: %v in all (stop, settle, start, settle; without the pauses between steps)", total.Round(time.Millisecond))
	l.finish(pods, 3*time.Minute)
}
