package batchjobtest

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/e2e/stack"
)

// TestTTLAfterFinished: a Job ringfire runs with ttlSecondsAfterFinished is deleted that long
// after it finished, by kube-controller-manager's TTL-after-finished controller, which deletes
// finished Jobs whoever manages them (ringfire leaves it to it, so nothing deletes twice); its
// pods go with it, none held by the tracking finalizer.
func TestTTLAfterFinished(t *testing.T) {
	s := stack.Start(t, stack.Options{Replicas: 2, Nodes: 2, BatchJobs: true})
	job := baseJob("ttl", "1s", "")
	job.Spec.ManagedBy = ptr.To(cache.BatchJobManager)
	job.Spec.TTLSecondsAfterFinished = ptr.To[int32](2)
	if _, err := s.Kube.BatchV1().Jobs(ns).Create(context.Background(), job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	finishedAt := waitFinished(t, s, job.Name, time.Minute)
	if finished(finishedAt) == "" {
		t.FailNow()
	}
	start := time.Now()
	deadline := start.Add(time.Minute)
	for {
		_, err := s.Kube.BatchV1().Jobs(ns).Get(context.Background(), job.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still there a minute after it finished (ttlSecondsAfterFinished 2): %v", job.Name, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	for {
		pods, err := s.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + job.Name})
		if err == nil && len(pods.Items) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pods of the deleted job %s still there: %d (%v)", job.Name, len(pods.Items), err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("job deleted and its pods gone %v after it was seen finished", time.Since(start).Round(time.Millisecond))
}
