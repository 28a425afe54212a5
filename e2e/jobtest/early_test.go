package jobtest

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/ringfire/ringfire/e2e/stack"
	"github.com/ringfire/ringfire/e2e/vcjob"
)

// A replica that takes over a dead one's slots runs their new Jobs before
// its list of the slots' pods is in, reading each Job's own pods from the API
// server: on a large cluster that list is the longest part of a failover.
// Here the survivor's lists of the slots' pods are held back until the new
// Jobs have all their pods; once let through, every Job completes and no pod
// is created twice. A Job that ran before the kill and is aborted by a Command
// meanwhile has its pods deleted: they are read, not guessed.
func TestGainRunsJobsBeforeItsPodsAreListed(t *testing.T) {
	const jobs = 4
	hold := stack.NewGainHold("r0")
	s := stack.Start(t, stack.Options{Replicas: 2, StandIn: true, WrapKube: hold.Wrap})
	creations := stack.WatchPodCreations(t, s.Kube, ns)
	defer hold.Release()

	// Jobs on the slots r1 holds: one made before the kill, which r1 runs, and
	// the rest after it.
	names := s.NamesHeldBy("r1", ns, "early", jobs+1)
	before, after := names[0], names[1:]
	vcjob.Create(t, s.Volcano, vcjob.New(ns, before, vcjob.Task("worker", 3, "1h", "")))
	running := s.WaitPhase(ns, before, 30*time.Second, batch.Running)
	waitPods(t, s, before, 3, 30*time.Second)

	hold.Hold()
	killed := time.Now()
	s.KillReplica("r1")
	for _, name := range after {
		vcjob.Create(t, s.Volcano, vcjob.New(ns, name, vcjob.Task("worker", 2, "1h", "")))
	}
	// The Job r1 ran is aborted: its pods, which r0 has not listed, must be read to be deleted.
	command(t, s, running, "abort-early", bus.AbortJobAction)
	for _, name := range after {
		waitPods(t, s, name, 2, 30*time.Second)
	}
	waitPods(t, s, before, 0, 30*time.Second)
	if !hold.Held() {
		t.Fatal("no list of the gained slots' pods was held back: the test proves nothing")
	}
	for _, name := range names {
		if s.Replica("r0").Cache.Listed(ns+"/"+name, stack.Slots) {
			t.Fatalf("job %s: its slot is listed while its pods' list is held back", name)
		}
	}

	hold.Release()
	for _, name := range after {
		s.WaitPhase(ns, name, time.Minute, batch.Running)
	}
	s.WaitPhase(ns, before, time.Minute, batch.Aborted)
	twice, total := creations.Twice()
	if len(twice) > 0 {
		t.Errorf("pods created more than once: %v", twice)
	}
	if want := 3 + 2*len(after); total != want {
		t.Errorf("%d pods created, want %d", total, want)
	}
	for _, r := range s.RefusedCreates() {
		if r.At.After(killed) {
			t.Errorf("a create after the kill was refused as AlreadyExists: %s", r.What)
		}
	}
}

// waitPods waits until the Job named has n pods (not being deleted).
func waitPods(t *testing.T, s *stack.Stack, name string, n int, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for live(s.Pods(ns, name)) != n {
		if time.Now().After(deadline) {
			t.Fatalf("job %s has %d pods after %v, want %d\n%s", name, live(s.Pods(ns, name)), limit, n, s.Describe(ns, name))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// live counts the pods not being deleted.
func live(pods []corev1.Pod) int {
	n := 0
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}
