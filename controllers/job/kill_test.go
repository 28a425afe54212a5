package job

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/controllers/job/state"
)

// A restart whose deletes went out but whose status write failed is retried.
// The retry finds the pods already going, issues no delete, and must still
// start a new version: else the late events of the pods the restart deleted
// carry the current version and restart the Job a second time.
func TestRestartRetriedAfterAFailedStatusWriteStartsANewVersion(t *testing.T) {
	f, job, pods := runningWithEvictionPolicy(t, "r")
	failed := false
	f.vc.PrependReactor("update", "jobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" && !failed {
			failed = true
			return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "batch.volcano.sh", Resource: "jobs"}, "r", nil)
		}
		return false, nil, nil
	})
	req := request{Request: state.Request{Event: bus.PodEvictedEvent, TaskName: "main", PodName: "r-main-0", JobVersion: 0, JobUID: job.UID}}
	if err := f.c.reconcile(context.Background(), "ns/r", req); err == nil {
		t.Fatal("the first try succeeded, though its status write was refused")
	}
	if err := f.c.reconcile(context.Background(), "ns/r", req); err != nil {
		t.Fatalf("the retry: %v", err)
	}
	got, _ := f.vc.BatchV1alpha1().Jobs("ns").Get(context.Background(), "r", metav1.GetOptions{})
	if got.Status.Version != 1 {
		t.Errorf("version %d after a restart whose first status write failed, want 1", got.Status.Version)
	}
	// The old pods are gone; the Job goes Pending and makes new pods.
	for _, p := range pods {
		if err := f.cache.Owned(cache.Pods).Indexer().Delete(p); err != nil {
			t.Fatal(err)
		}
	}
	f.cacheJob(t, got)
	if err := f.c.reconcile(context.Background(), "ns/r", request{Request: state.Request{Event: bus.OutOfSyncEvent}}); err != nil {
		t.Fatal(err)
	}
	got, _ = f.vc.BatchV1alpha1().Jobs("ns").Get(context.Background(), "r", metav1.GetOptions{})
	f.cacheJob(t, got)
	// The delete event of the second old pod, deleted by the restart, arrives late.
	late := request{Request: state.Request{Event: bus.PodEvictedEvent, TaskName: "main", PodName: "r-main-1", JobVersion: 0, JobUID: job.UID}}
	if err := f.c.reconcile(context.Background(), "ns/r", late); err != nil {
		t.Fatal(err)
	}
	got, _ = f.vc.BatchV1alpha1().Jobs("ns").Get(context.Background(), "r", metav1.GetOptions{})
	if got.Status.RetryCount != 1 || got.Status.State.Phase != batch.Pending {
		t.Errorf("%s, retry %d: the restart's own pod deletion restarted the Job again (events %q)", got.Status.State.Phase, got.Status.RetryCount, f.recorded())
	}
}

// A kill whose pod delete meets a changed resource version because another
// hand is deleting the pod (an eviction) has what it wanted: no error, no
// Warning, no second try of the action.
func TestKillOfAPodBeingDeletedElsewhereIsDone(t *testing.T) {
	f, job, pods := runningWithEvictionPolicy(t, "e")
	// The API server has e-main-1 terminating already; the cache does not yet.
	evicted := pods[1].(*corev1.Pod).DeepCopy()
	now := metav1.Now()
	evicted.DeletionTimestamp = &now
	if _, err := f.kube.CoreV1().Pods("ns").Update(context.Background(), evicted, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.kube.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.DeleteAction).GetName() == "e-main-1" {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "e-main-1", nil)
		}
		return false, nil, nil
	})
	req := request{Request: state.Request{Event: bus.PodEvictedEvent, TaskName: "main", PodName: "e-main-0", JobVersion: 0, JobUID: job.UID}}
	if err := f.c.reconcile(context.Background(), "ns/e", req); err != nil {
		t.Fatalf("the kill failed: %v", err)
	}
	for _, e := range f.recorded() {
		if strings.Contains(e, "FailedDeletePod") {
			t.Errorf("recorded %q for a pod being deleted anyway", e)
		}
	}
	got, _ := f.vc.BatchV1alpha1().Jobs("ns").Get(context.Background(), "e", metav1.GetOptions{})
	if got.Status.State.Phase != batch.Restarting || got.Status.Version != 1 {
		t.Errorf("%s version %d, want Restarting version 1", got.Status.State.Phase, got.Status.Version)
	}
}

// runningWithEvictionPolicy is a Running Job of two pods of version 0 (in the
// API and the cache) whose PodEvicted policy is RestartJob.
func runningWithEvictionPolicy(t *testing.T, name string) (*fixture, *batch.Job, []runtime.Object) {
	t.Helper()
	job := testJob(name, task("main", 2))
	job.Spec.MinAvailable = 2
	job.Spec.MaxRetry = 3
	job.Spec.Policies = []batch.LifecyclePolicy{{Event: bus.PodEvictedEvent, Action: bus.RestartJobAction}}
	job.Status = batch.JobStatus{State: batch.JobState{Phase: batch.Running}}
	f := newFixture(t, nil, job)
	f.admit(t, job)
	var pods []runtime.Object
	for i := 0; i < 2; i++ {
		p := podOf(job, "main", i, corev1.PodRunning)
		p.Annotations[batch.JobVersion] = "0"
		if _, err := f.kube.CoreV1().Pods("ns").Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pods = append(pods, p)
	}
	f.cacheOwned(t, cache.Pods, pods...)
	return f, job, pods
}
