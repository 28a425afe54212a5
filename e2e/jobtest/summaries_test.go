package jobtest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/e2e/stack"
	"github.com/ringfire/ringfire/e2e/vcjob"
	"github.com/ringfire/ringfire/shard"
)

// A replica keeps in full only the Jobs of the slots it holds, and a summary
// of the others; when it gains the slots of a replica that left, it lists
// their Jobs in full and goes on running them.
func TestJobsOfOtherSlotsAreSummaries(t *testing.T) {
	s := stack.Start(t, stack.Options{Replicas: 2, StandIn: true})
	const jobs = 16
	keys := make([]string, jobs)
	for i := range jobs {
		name := fmt.Sprintf("sum-%02d", i)
		keys[i] = ns + "/" + name
		vcjob.Create(t, s.Volcano, vcjob.New(ns, name, vcjob.Task("w", 2, "1h", "")))
	}
	for i := range jobs {
		s.WaitPhase(ns, fmt.Sprintf("sum-%02d", i), 90*time.Second, batch.Running)
	}

	ids := s.IDs()
	// kept checks that the replica holds in full exactly the Jobs of its slots.
	kept := func(id string) (ok bool, saw string) {
		r := s.Replica(id)
		slots := r.Manager.Slots()
		summaries := 0
		for _, key := range keys {
			_, held := r.Manager.SlotContext(shard.SlotOf(key, slots))
			job, found, err := r.Cache.Job(key)
			switch {
			case held && (err != nil || !found || len(job.Spec.Tasks) == 0):
				return false, fmt.Sprintf("%s holds the slot of %s but has no full Job (found %v, err %v)", id, key, found, err)
			case !held && !errors.Is(err, cache.ErrSummaryOnly):
				return false, fmt.Sprintf("%s does not hold the slot of %s but keeps it in full (err %v)", id, key, err)
			case !held:
				summaries++
			}
		}
		if n := r.Cache.Jobs().Summaries(); n != summaries {
			return false, fmt.Sprintf("%s keeps %d summaries, want %d", id, n, summaries)
		}
		return true, ""
	}
	for _, id := range ids {
		stack.WaitFor(t, id+" keeps only its slots' Jobs in full", 30*time.Second, func() (bool, string) { return kept(id) })
	}
	if s.Replica(ids[0]).Cache.Jobs().Summaries() == 0 && s.Replica(ids[1]).Cache.Jobs().Summaries() == 0 {
		t.Fatal("neither replica keeps a summary: the ring did not split the Jobs")
	}

	// The second replica leaves: the first gains its slots and lists their Jobs in full.
	left, stays := ids[1], ids[0]
	s.StopReplica(left)
	stack.WaitFor(t, stays+" keeps every Job in full", 60*time.Second, func() (bool, string) {
		if n := s.Replica(stays).Cache.Jobs().Summaries(); n != 0 {
			return false, fmt.Sprintf("%d summaries left", n)
		}
		return kept(stays)
	})
	// It runs them: a pod deleted from each Job is made again, which takes the Job's spec.
	ctx := context.Background()
	for i := range jobs {
		name := fmt.Sprintf("sum-%02d", i)
		pod := name + "-w-0"
		old, err := s.Kube.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("pod %s: %v", pod, err)
		}
		zero := int64(0)
		if err := s.Kube.CoreV1().Pods(ns).Delete(ctx, pod, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatalf("delete pod %s: %v", pod, err)
		}
		stack.WaitFor(t, "pod "+pod+" made again", 60*time.Second, func() (bool, string) {
			p, err := s.Kube.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			if p.UID == old.UID {
				return false, "the old pod is still there"
			}
			return p.Status.Phase != corev1.PodFailed, string(p.Status.Phase)
		})
	}
}
