package batchjobtest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/e2e/stack"
)

// loadJob is Job i of the mixed load, with what the built-in controller ends it with: a
// NonIndexed Job of 3 completions 2 at a time, an Indexed one of 2, or one whose only pod
// fails with backoffLimit 0.
func loadJob(i int) (job *batchv1.Job, wantPods int, wantCondition batchv1.JobConditionType) {
	name := fmt.Sprintf("load-%03d", i)
	switch i % 3 {
	case 0:
		job = baseJob(name, "1s", "")
		job.Spec.Completions, job.Spec.Parallelism = ptr.To[int32](3), ptr.To[int32](2)
		wantPods, wantCondition = 3, batchv1.JobComplete
	case 1:
		job = baseJob(name, "1s", "")
		job.Spec.Completions, job.Spec.Parallelism = ptr.To[int32](2), ptr.To[int32](2)
		job.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		wantPods, wantCondition = 2, batchv1.JobComplete
	default:
		job = baseJob(name, "1s", "1")
		job.Spec.BackoffLimit = ptr.To[int32](0)
		wantPods, wantCondition = 1, batchv1.JobFailed
	}
	job.Spec.ManagedBy = ptr.To(cache.BatchJobManager)
	return job, wantPods, wantCondition
}

// TestBatchJobsReplicaKilled runs 300 mixed Jobs on three replicas and kills one a third of
// the way in: every Job ends as the built-in controller ends it, with exactly the pods it
// makes (none twice), and no pod keeps the tracking finalizer.
func TestBatchJobsReplicaKilled(t *testing.T) {
	s := stack.Start(t, stack.Options{Replicas: 3, Nodes: 4, BatchJobs: true, NodePods: "200"})
	pods := &podLog{created: map[string]int{}, finalizers: map[string]bool{}}
	s.WatchPods(ns, pods.see)

	const n = 300
	start := time.Now()
	var wg sync.WaitGroup
	work := make(chan int)
	for range 4 {
		wg.Go(func() {
			for i := range work {
				job, _, _ := loadJob(i)
				if _, err := s.Kube.BatchV1().Jobs(ns).Create(context.Background(), job, metav1.CreateOptions{}); err != nil {
					t.Errorf("create %s: %v", job.Name, err)
				}
			}
		})
	}
	for i := range n {
		if i == n/3 {
			victim := s.IDs()[0]
			s.KillReplica(victim)
			t.Logf("killed replica %s after %d Jobs", victim, i)
		}
		work <- i
		time.Sleep(50 * time.Millisecond)
	}
	close(work)
	wg.Wait()

	deadline := time.Now().Add(4 * time.Minute)
	for {
		list, err := s.Kube.BatchV1().Jobs(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var left []string
		for _, j := range list.Items {
			if finished(&j) == "" {
				left = append(left, j.Name)
			}
		}
		if len(list.Items) == n && len(left) == 0 {
			for i := range n {
				job, wantPods, wantCond := loadJob(i)
				var got *batchv1.Job
				for k := range list.Items {
					if list.Items[k].Name == job.Name {
						got = &list.Items[k]
					}
				}
				if c := finished(got); c != wantCond {
					t.Errorf("%s ended %s, want %s", job.Name, c, wantCond)
				}
				if p := pods.createdFor(job.Name, ""); p != wantPods {
					t.Errorf("%s: %d pods created, want %d", job.Name, p, wantPods)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d Jobs not finished after 4 min, e.g. %v", len(left), n, left[:min(10, len(left))])
		}
		time.Sleep(time.Second)
	}
	took := time.Since(start)
	time.Sleep(2 * time.Second)
	left := 0
	for i := range n {
		job, _, _ := loadJob(i)
		left += pods.withFinalizer(job.Name)
	}
	if left > 0 {
		t.Errorf("%d pods still carry the tracking finalizer", left)
	}
	t.Logf("%d Jobs finished %v after the first was created, one replica killed; pods as the built-in controller makes them, none left with the finalizer", n, took.Round(time.Millisecond))
}

// finished returns the Job's Complete or Failed condition type, or "".
func finished(j *batchv1.Job) batchv1.JobConditionType {
	if j == nil {
		return ""
	}
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.Type
		}
	}
	return ""
}
