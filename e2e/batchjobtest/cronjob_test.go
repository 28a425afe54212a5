package batchjobtest

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/e2e/stack"
)

// TestCronJobHandsItsJobsToRingfire: a batch/v1 CronJob whose jobTemplate names ringfire in
// managedBy gets its Jobs started by kube-controller-manager's CronJob controller and run by
// ringfire; the CronJob controller sees them succeed (lastSuccessfulTime).
func TestCronJobHandsItsJobsToRingfire(t *testing.T) {
	s := stack.Start(t, stack.Options{Replicas: 2, Nodes: 2, BatchJobs: true})
	tmpl := baseJob("unused", "1s", "")
	tmpl.Spec.ManagedBy = ptr.To(cache.BatchJobManager)
	tmpl.Spec.Completions = ptr.To[int32](2)
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "every-minute", Namespace: ns},
		Spec: batchv1.CronJobSpec{
			Schedule:          "* * * * *",
			ConcurrencyPolicy: batchv1.ForbidConcurrent,
			JobTemplate:       batchv1.JobTemplateSpec{Spec: tmpl.Spec},
		},
	}
	if _, err := s.Kube.BatchV1().CronJobs(ns).Create(context.Background(), cj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2*time.Minute + 30*time.Second)
	for {
		got, err := s.Kube.BatchV1().CronJobs(ns).Get(context.Background(), cj.Name, metav1.GetOptions{})
		if err == nil && got.Status.LastSuccessfulTime != nil {
			jobs, err := s.Kube.BatchV1().Jobs(ns).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range jobs.Items {
				if ptr.Deref(j.Spec.ManagedBy, "") != cache.BatchJobManager {
					t.Errorf("job %s of the CronJob: managedBy %v", j.Name, j.Spec.ManagedBy)
				}
				if finished(&j) == batchv1.JobComplete && j.Status.Succeeded != 2 {
					t.Errorf("job %s: Complete with %d succeeded, want 2", j.Name, j.Status.Succeeded)
				}
			}
			t.Logf("CronJob %s: a Job run by ringfire succeeded at %v", cj.Name, got.Status.LastSuccessfulTime.Time.Format(time.TimeOnly))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("CronJob %s: no successful Job after 2.5 min: %+v (%v)", cj.Name, got.Status, err)
		}
		time.Sleep(time.Second)
	}
}
