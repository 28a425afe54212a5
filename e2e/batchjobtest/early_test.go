package batchjobtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/e2e/stack"
)

// After a kill, the survivor runs the batch/v1 Jobs of the slots it gained
// while their pods are still being listed, reading each Job's pods from the
// API server: new Jobs get their pods, and a running Job whose parallelism
// grew gets exactly the pods it lacks (its pods, which the survivor has not
// listed, are read; on an empty view it would make them all again). The
// list's answer is held back after the API server made it, so the cache
// starts from a snapshot without the pods made early: once it is in, no pod
// is made that was not due (the Jobs read early keep reading the API server
// until the cache shows their pods, and their creates stay expected), and
// every Job has the pods it asks for.
func TestBatchJobsRunBeforeTheirPodsAreListed(t *testing.T) {
	const newJobs = 3
	hold := stack.NewGainHold("r0")
	s := stack.Start(t, stack.Options{Replicas: 2, BatchJobs: true, WrapKube: hold.Wrap})
	pods := &podLog{created: map[string]int{}, finalizers: map[string]bool{}}
	s.WatchPods(ns, pods.see)
	defer hold.Release()

	// Jobs on the slots r1 holds: one it runs before the kill, the rest made after it.
	names := s.NamesHeldBy("r1", ns, "early", newJobs+1)
	running, after := names[0], names[1:]
	create := func(name string, parallelism int32) {
		job := baseJob(name, "1h", "")
		job.Spec.ManagedBy = ptr.To(cache.BatchJobManager)
		job.Spec.Parallelism, job.Spec.Completions = ptr.To(parallelism), ptr.To[int32](10)
		if _, err := s.Kube.BatchV1().Jobs(ns).Create(context.Background(), job, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
	}
	create(running, 3)
	waitActive(t, s, running, 3, 30*time.Second)

	hold.Hold()
	s.KillReplica("r1")
	for _, name := range after {
		create(name, 2)
	}
	// The Job r1 ran grows once r0 holds its slot with only the pods left to list: a started
	// Job runs early on its own events (an event before the gain is not r0's to see).
	deadline := time.Now().Add(30 * time.Second)
	for !s.Replica("r0").Cache.PodsListing(ns+"/"+running, stack.Slots) {
		if time.Now().After(deadline) {
			t.Fatal("r0 does not hold r1's slots with only their pods left to list 30 s after the kill")
		}
		time.Sleep(50 * time.Millisecond)
	}
	patch := []byte(`{"spec":{"parallelism":4}}`)
	if _, err := s.Kube.BatchV1().Jobs(ns).Patch(context.Background(), running, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range after {
		waitPods(t, s, name, 2, 30*time.Second)
	}
	waitPods(t, s, running, 4, 30*time.Second)
	if !hold.Held() {
		t.Fatal("no list of the gained slots' pods was held back: the test proves nothing")
	}
	for _, name := range names {
		if s.Replica("r0").Cache.Listed(ns+"/"+name, stack.Slots) {
			t.Fatalf("job %s: its slot is listed while its pods' list is held back", name)
		}
	}

	hold.Release()
	deadline = time.Now().Add(time.Minute)
	for !s.Replica("r0").Cache.Listed(ns+"/"+running, stack.Slots) {
		if time.Now().After(deadline) {
			t.Fatal("the gained slots' pods not listed a minute after their list was let through")
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(3 * time.Second) // reconciles on the listed cache would make what is missing, or too much, now
	want := map[string]int{running: 4}
	for _, name := range after {
		want[name] = 2
	}
	for name, n := range want {
		if got := pods.createdFor(name, ""); got != n {
			t.Errorf("job %s: %d pods created, want %d", name, got, n)
		}
		waitActive(t, s, name, int32(n), 30*time.Second)
	}
}

// waitPods waits until the Job named has n pods not being deleted, as the API server has
// them (its status may wait for the cache).
func waitPods(t *testing.T, s *stack.Stack, name string, n int, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		list, err := s.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + name})
		live := 0
		if err == nil {
			for _, p := range list.Items {
				if p.DeletionTimestamp == nil {
					live++
				}
			}
			if live == n {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s: %d pods (%v) after %v, want %d", name, live, err, limit, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitActive waits until the Job's status counts n active pods.
func waitActive(t *testing.T, s *stack.Stack, name string, n int32, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		job, err := s.Kube.BatchV1().Jobs(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil && job.Status.Active == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s: %s after %v, want %d active", name, activeOf(job, err), limit, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func activeOf(job *batchv1.Job, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%d active", job.Status.Active)
}
