package jobtest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/e2e/stack"
	"github.com/ringfire/ringfire/e2e/vcjob"
)

// Three replicas share 300 Jobs; one is killed mid-run. Every Job still
// completes, no pod is created twice, no Job was reconciled by two replicas
// at once, and no create is refused as AlreadyExists (a create issued again
// before the cache saw the first) but around the kill, where a create of the
// dead replica may land after the new owner listed its slot.
func TestKillReplicaUnderLoad(t *testing.T) {
	const jobs = 300
	s := stack.Start(t, stack.Options{Replicas: 3, Nodes: 8, StandIn: true})
	creations := stack.WatchPodCreations(t, s.Kube, ns)

	var wg sync.WaitGroup
	work := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				vcjob.Create(t, s.Volcano, vcjob.New(ns, fmt.Sprintf("load-%03d", i), vcjob.Task("worker", 2, "3s", "")))
			}
		}()
	}
	var killed time.Time
	for i := range jobs {
		if i == jobs/3 {
			killed = time.Now()
			s.KillReplica("r1")
			t.Logf("killed replica r1 after %d jobs were created", i)
		}
		work <- i
	}
	close(work)
	wg.Wait()

	deadline := time.Now().Add(4 * time.Minute)
	for i := range jobs {
		s.WaitPhase(ns, fmt.Sprintf("load-%03d", i), time.Until(deadline), batch.Completed)
	}
	twice, total := creations.Twice()
	if len(twice) > 0 {
		t.Errorf("%d pod names were created more than once, e.g. %v", len(twice), twice[:min(5, len(twice))])
	}
	if total != 2*jobs {
		t.Errorf("%d pods created, want %d", total, 2*jobs)
	}
	// The kill's moment: from just before it until its slots have been re-held (a lease TTL,
	// 2 s here) and listed, with room for a busy machine.
	var refused []stack.RefusedCreate
	for _, r := range s.RefusedCreates() {
		if r.At.Before(killed.Add(-time.Second)) || r.At.After(killed.Add(10*time.Second)) {
			refused = append(refused, r)
		}
	}
	for _, r := range refused[:min(len(refused), 5)] {
		t.Logf("refused at kill%+v: %s", r.At.Sub(killed).Round(time.Millisecond), r.What)
	}
	if len(refused) > 0 {
		t.Errorf("%d creates refused as AlreadyExists outside the kill's moment, e.g. %s at %s",
			len(refused), refused[0].What, refused[0].At.Sub(killed).Round(time.Millisecond))
	}
	if bad := s.Runs.Overlaps(); len(bad) > 0 {
		t.Errorf("%d Jobs were reconciled by two replicas at once, e.g. %s", len(bad), bad[0])
	}
	t.Logf("%d jobs completed, %d pods created once each, %d reconciles with no overlap, %d creates refused (%d around the kill)",
		jobs, total, s.Runs.Count(), len(s.RefusedCreates()), len(s.RefusedCreates())-len(refused))
}
