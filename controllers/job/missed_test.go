package job

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/controllers/job/state"
)

// retryJob is TestSwitchFromVolcanoAndBack's "retry" Job mid-retry: Running at
// version 2 after one restart, its one pod restarted on failure up to 4 times.
func retryJob() *batch.Job {
	job := testJob("a", task("work", 1))
	job.Spec.MaxRetry = 4
	job.Spec.Policies = []batch.LifecyclePolicy{{Event: bus.PodFailedEvent, Action: bus.RestartJobAction}}
	job.Status.State.Phase = batch.Running
	job.Status.RetryCount = 1
	return job
}

// allSlots is every slot of the fixture's ownership.
func allSlots(f *fixture) []int {
	slots := make([]int, f.c.cfg.Ownership.Slots())
	for i := range slots {
		slots[i] = i
	}
	return slots
}

// A pod that failed while its slot had no ready owner (vc-controller-manager
// stopped, the adopting replica's slot not ready yet) reaches the replica only
// by the slot's list. SlotsReady tells its PodFailed, with its exit code,
// before the slot's OutOfSync: the Job restarts as its policy says, with its
// retry counted, instead of the sync ending it Failed with retries left
// (TestSwitchFromVolcanoAndBack: retry-13, -19, -26 Failed at retryCount 1).
func TestSlotsReadyTellsAFailureNoControllerSaw(t *testing.T) {
	ctx := context.Background()
	job := retryJob()
	f := newFixture(t, nil, job)
	f.admit(t, job)
	pod := podOf(job, "work", 0, corev1.PodFailed)
	exited(3)(pod)
	if _, err := f.kube.CoreV1().Pods("ns").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.cacheOwned(t, cache.Pods, pod)

	got := f.requestsOf(t, func() { f.c.SlotsReady(allSlots(f)) })
	failed := enqueued{"ns/a", request{Request: state.Request{
		Event: bus.PodFailedEvent, TaskName: "work", PodName: "a-work-0", ExitCode: 3, JobVersion: 2, JobUID: "uid-a",
	}}}
	sync := enqueued{"ns/a", request{Request: state.Request{Event: bus.OutOfSyncEvent}}}
	assertRequests(t, got, []enqueued{failed, sync})

	for _, e := range got {
		if err := f.c.reconcile(ctx, e.key, e.req); err != nil {
			t.Fatal(err)
		}
	}
	written, err := f.vc.BatchV1alpha1().Jobs("ns").Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if written.Status.State.Phase == batch.Failed || written.Status.RetryCount != 2 {
		t.Fatalf("after the slot's requests the Job is %s at retryCount %d, want restarting at retryCount 2",
			written.Status.State.Phase, written.Status.RetryCount)
	}
}

// Without it, the same Job and pod seen by a sync alone end Failed at
// retryCount 1: the failure the policy would have restarted is lost.
func TestASyncAloneEndsAMidRetryJobFailed(t *testing.T) {
	ctx := context.Background()
	job := retryJob()
	f := newFixture(t, nil, job)
	f.admit(t, job)
	pod := podOf(job, "work", 0, corev1.PodFailed)
	exited(3)(pod)
	f.cacheOwned(t, cache.Pods, pod)
	if err := f.c.reconcile(ctx, "ns/a", request{Request: state.Request{Event: bus.OutOfSyncEvent}}); err != nil {
		t.Fatal(err)
	}
	written, err := f.vc.BatchV1alpha1().Jobs("ns").Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if written.Status.State.Phase != batch.Failed || written.Status.RetryCount != 1 {
		t.Fatalf("Job %s at retryCount %d, want Failed at 1", written.Status.State.Phase, written.Status.RetryCount)
	}
}

// Only a failure no controller can have acted on is told again, and only when
// a policy acts on it: not a pod of an earlier version (a restart made it
// old), not one being deleted (a kill took it), not a Job ending or ended,
// not a failure no policy names (the OutOfSync is the same).
func TestSlotsReadyTellsNoFailureAlreadyActedOn(t *testing.T) {
	for _, tc := range []struct {
		name string
		job  func(*batch.Job)
		pod  func(*corev1.Pod)
	}{
		{name: "pod of an earlier version", pod: func(p *corev1.Pod) { p.Annotations[batch.JobVersion] = "1" }},
		{name: "pod being deleted", pod: func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }},
		{name: "Job aborting", job: func(j *batch.Job) { j.Status.State.Phase = batch.Aborting }},
		{name: "Job failed", job: func(j *batch.Job) { j.Status.State.Phase = batch.Failed }},
		{name: "no policy", job: func(j *batch.Job) { j.Spec.Policies = nil }},
		{name: "pod running", pod: func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := retryJob()
			if tc.job != nil {
				tc.job(job)
			}
			f := newFixture(t, nil, job)
			pod := podOf(job, "work", 0, corev1.PodFailed)
			exited(3)(pod)
			if tc.pod != nil {
				tc.pod(pod)
			}
			f.cacheOwned(t, cache.Pods, pod)
			got := f.requestsOf(t, func() { f.c.SlotsReady(allSlots(f)) })
			assertRequests(t, got, []enqueued{{"ns/a", request{Request: state.Request{Event: bus.OutOfSyncEvent}}}})
		})
	}
}

// A Job left Restarting (vc-controller-manager stopped after creating the
// restart's pod, before writing Pending) whose new pod failed meanwhile is told
// the failure too: its policy restarts it again, where a sync would take it
// Pending, Running and Failed with retries left (TestSwitchFromVolcanoAndBack
// with a 10 s gap before the replicas start: retry-27).
func TestSlotsReadyTellsAFailureOfARestartingJob(t *testing.T) {
	ctx := context.Background()
	job := retryJob()
	job.Status.State.Phase = batch.Restarting
	f := newFixture(t, nil, job)
	f.admit(t, job)
	pod := podOf(job, "work", 0, corev1.PodFailed)
	exited(3)(pod)
	if _, err := f.kube.CoreV1().Pods("ns").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.cacheOwned(t, cache.Pods, pod)
	got := f.requestsOf(t, func() { f.c.SlotsReady(allSlots(f)) })
	if len(got) != 2 || got[0].req.Event != bus.PodFailedEvent {
		t.Fatalf("requests %+v, want PodFailed then OutOfSync", got)
	}
	for _, e := range got {
		if err := f.c.reconcile(ctx, e.key, e.req); err != nil {
			t.Fatal(err)
		}
	}
	written, err := f.vc.BatchV1alpha1().Jobs("ns").Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if written.Status.State.Phase == batch.Failed || written.Status.Version != 3 {
		t.Fatalf("Job %s at version %d, want restarted again (version 3), not Failed",
			written.Status.State.Phase, written.Status.Version)
	}
	if !hasEvent(f.recorded(), "Normal ExecuteAction Start to execute action RestartJob") {
		t.Fatal("no RestartJob executed")
	}
}
