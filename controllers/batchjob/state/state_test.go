package state

import (
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func started(j *batchv1.Job) { j.Status.StartTime = ptr.To(metav1.NewTime(t0.Add(-time.Minute))) }

func TestCountingAndCreation(t *testing.T) {
	cases := []struct {
		name                string
		job                 *batchv1.Job
		pods                []*corev1.Pod
		wantCreate          []int
		wantDelete          []string
		wantActive          int32
		wantReady, wantTerm int32
		wantUncountedOK     int
	}{
		{name: "new job creates parallelism pods", job: newJob(), wantCreate: []int{-1, -1}, wantActive: 2},
		{name: "work queue creates parallelism", job: newJob(func(j *batchv1.Job) { j.Spec.Completions = nil; j.Spec.Parallelism = ptr.To[int32](3) }),
			wantCreate: []int{-1, -1, -1}, wantActive: 3},
		{name: "parallelism zero", job: newJob(func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](0) })},
		{name: "counts active ready terminating", job: newJob(started),
			pods:       []*corev1.Pod{newPod("a", ready), newPod("b"), newPod("c", deleting)},
			wantActive: 2, wantReady: 1, wantTerm: 1},
		{name: "terminating pod replaced by default", job: newJob(started),
			pods:       []*corev1.Pod{newPod("a", ready), newPod("c", deleting)},
			wantCreate: []int{-1}, wantActive: 2, wantReady: 1, wantTerm: 1},
		{name: "podReplacementPolicy Failed waits for terminating", job: newJob(started, func(j *batchv1.Job) { j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed) }),
			pods:       []*corev1.Pod{newPod("a", ready), newPod("c", deleting)},
			wantActive: 1, wantReady: 1, wantTerm: 1},
		{name: "wanted active limited by remaining completions", job: newJob(started, func(j *batchv1.Job) { j.Status.Succeeded = 2 }),
			wantCreate: []int{-1}, wantActive: 1},
		{name: "excess deletes not ready first", job: newJob(started, func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](1) }),
			pods:       []*corev1.Pod{newPod("a", ready), newPod("b")},
			wantDelete: []string{"b"}, wantActive: 1, wantReady: 1, wantTerm: 1},
		{name: "excess deletes unscheduled first", job: newJob(started, func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](1) }),
			pods: []*corev1.Pod{newPod("a", func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }),
				newPod("b", func(p *corev1.Pod) { p.Spec.NodeName = "n"; p.Status.Phase = corev1.PodPending })},
			wantDelete: []string{"a"}, wantActive: 1, wantTerm: 1},
		{name: "succeeded pod recorded as uncounted", job: newJob(started),
			pods:       []*corev1.Pod{newPod("a", phase(corev1.PodSucceeded)), newPod("b")},
			wantCreate: []int{-1}, wantActive: 2, wantUncountedOK: 1},
		{name: "indexed creates lowest free indexes", job: newJob(started, indexed, func(j *batchv1.Job) {
			j.Spec.Completions = ptr.To[int32](5)
			j.Spec.Parallelism = ptr.To[int32](3)
			j.Status.CompletedIndexes = "0"
			j.Status.Succeeded = 1
		}),
			pods:       []*corev1.Pod{newPod("p2", index(2))},
			wantCreate: []int{1, 3}, wantActive: 3},
		{name: "indexed duplicate index removed", job: newJob(started, indexed),
			pods:       []*corev1.Pod{newPod("x", index(0), ready), newPod("y", index(0)), newPod("z", index(1))},
			wantDelete: []string{"y"}, wantActive: 2, wantReady: 1, wantTerm: 1},
		{name: "indexed out of range index removed", job: newJob(started, indexed),
			pods:       []*corev1.Pod{newPod("x", index(0)), newPod("y", index(7))},
			wantDelete: []string{"y"}, wantActive: 1, wantTerm: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := decide(t, Input{Job: tc.job, Pods: tc.pods})
			if !slices.Equal(d.Create, tc.wantCreate) {
				t.Errorf("create = %v, want %v", d.Create, tc.wantCreate)
			}
			if got := names(d.Delete); !slices.Equal(got, tc.wantDelete) {
				t.Errorf("delete = %v, want %v", got, tc.wantDelete)
			}
			if len(tc.wantDelete) > 0 && !slices.Equal(names(d.RemoveFinalizers), tc.wantDelete) {
				t.Errorf("excess pods must lose the finalizer, got %v", names(d.RemoveFinalizers))
			}
			if d.Status == nil {
				t.Fatal("no status")
			}
			st := d.Status
			if st.Active != tc.wantActive || *st.Ready != tc.wantReady || *st.Terminating != tc.wantTerm {
				t.Errorf("active/ready/terminating = %d/%d/%d, want %d/%d/%d", st.Active, *st.Ready, *st.Terminating, tc.wantActive, tc.wantReady, tc.wantTerm)
			}
			if len(st.UncountedTerminatedPods.Succeeded) != tc.wantUncountedOK {
				t.Errorf("uncounted succeeded = %v", st.UncountedTerminatedPods.Succeeded)
			}
			if st.StartTime == nil {
				t.Error("startTime not set")
			}
		})
	}
}

func TestNoChangeGivesNilStatus(t *testing.T) {
	job := newJob(started, func(j *batchv1.Job) {
		j.Status.Active = 2
		j.Status.Ready = ptr.To[int32](1)
		j.Status.Terminating = ptr.To[int32](0)
	})
	d := decide(t, Input{Job: job, Pods: []*corev1.Pod{newPod("a", ready), newPod("b")}})
	if d.Status != nil || len(d.Create)+len(d.Delete)+len(d.RemoveFinalizers) != 0 {
		t.Fatalf("expected no-op, got %+v", d)
	}
}

func TestTwoPhaseTracking(t *testing.T) {
	uncounted := func(ok []types.UID, failed ...types.UID) func(*batchv1.Job) {
		return func(j *batchv1.Job) {
			j.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{Succeeded: ok, Failed: failed}
		}
	}
	cases := []struct {
		name                 string
		job                  *batchv1.Job
		pods                 []*corev1.Pod
		wantRm               []string
		wantOK, wantFail     []types.UID
		wantSucc, wantFailed int32
	}{
		{name: "new terminal pods only recorded",
			job:    newJob(started),
			pods:   []*corev1.Pod{newPod("a", phase(corev1.PodSucceeded)), newPod("b", phase(corev1.PodFailed))},
			wantOK: []types.UID{"uid-a"}, wantFail: []types.UID{"uid-b"}},
		{name: "recorded pods released, not recounted",
			job:    newJob(started, uncounted([]types.UID{"uid-a"})),
			pods:   []*corev1.Pod{newPod("a", phase(corev1.PodSucceeded))},
			wantRm: []string{"a"}, wantOK: []types.UID{"uid-a"}},
		{name: "recorded pods without finalizer are counted",
			job:      newJob(started, uncounted([]types.UID{"uid-a"}, "uid-b", "uid-gone")),
			pods:     []*corev1.Pod{newPod("a", phase(corev1.PodSucceeded), noFinalizer), newPod("b", phase(corev1.PodFailed), noFinalizer)},
			wantSucc: 1, wantFailed: 2},
		{name: "pods without finalizer and not recorded are ignored",
			job:  newJob(started, func(j *batchv1.Job) { j.Status.Succeeded = 1 }),
			pods: []*corev1.Pod{newPod("a", phase(corev1.PodSucceeded), noFinalizer)}, wantSucc: 1},
		{name: "deleted running pod counts as failed",
			job:  newJob(started),
			pods: []*corev1.Pod{newPod("a", deleting)}, wantFail: []types.UID{"uid-a"}},
		{name: "deleted running pod not failed with policy Failed",
			job:  newJob(started, func(j *batchv1.Job) { j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed) }),
			pods: []*corev1.Pod{newPod("a", deleting)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := decide(t, Input{Job: tc.job, Pods: tc.pods})
			st := &tc.job.Status
			if d.Status != nil {
				st = d.Status
			}
			if got := names(d.RemoveFinalizers); !slices.Equal(got, tc.wantRm) {
				t.Errorf("removeFinalizers = %v, want %v", got, tc.wantRm)
			}
			u := st.UncountedTerminatedPods
			if u == nil {
				u = &batchv1.UncountedTerminatedPods{}
			}
			if !slices.Equal(u.Succeeded, tc.wantOK) || !slices.Equal(u.Failed, tc.wantFail) {
				t.Errorf("uncounted = %v/%v, want %v/%v", u.Succeeded, u.Failed, tc.wantOK, tc.wantFail)
			}
			if st.Succeeded != tc.wantSucc || st.Failed != tc.wantFailed {
				t.Errorf("succeeded/failed = %d/%d, want %d/%d", st.Succeeded, st.Failed, tc.wantSucc, tc.wantFailed)
			}
		})
	}
}

func TestMaxUncountedPerSync(t *testing.T) {
	var pods []*corev1.Pod
	for i := 0; i < MaxUncountedPods+20; i++ {
		pods = append(pods, newPod("p"+time.Duration(i).String(), phase(corev1.PodFailed)))
	}
	job := newJob(started, func(j *batchv1.Job) { j.Spec.BackoffLimit = ptr.To[int32](100000) })
	d := decide(t, Input{Job: job, Pods: pods})
	if n := len(d.Status.UncountedTerminatedPods.Failed); n != MaxUncountedPods {
		t.Fatalf("uncounted = %d, want %d", n, MaxUncountedPods)
	}
}

func TestNonIndexedSequenceCompletes(t *testing.T) {
	c := newCluster(t, newJob())
	c.step() // creates 2
	if got := len(c.activeNames()); got != 2 {
		t.Fatalf("active = %d", got)
	}
	for _, n := range c.activeNames() {
		c.finish(n, corev1.PodSucceeded)
	}
	c.settle()
	// One more pod is needed for 3 completions.
	if got := c.activeNames(); len(got) != 1 {
		t.Fatalf("active = %v", got)
	}
	if c.job.Status.Succeeded != 2 || len(c.job.Status.UncountedTerminatedPods.Succeeded) != 0 {
		t.Fatalf("status = %+v", c.job.Status)
	}
	c.finish(c.activeNames()[0], corev1.PodSucceeded)
	c.settle()
	st := c.job.Status
	if !hasCond(&st, batchv1.JobSuccessCriteriaMet) || !hasCond(&st, batchv1.JobComplete) || st.CompletionTime == nil {
		t.Fatalf("not complete: %+v", st)
	}
	if st.Succeeded != 3 || st.Failed != 0 || len(c.pods) != 3 {
		t.Fatalf("succeeded=%d failed=%d pods=%d", st.Succeeded, st.Failed, len(c.pods))
	}
	for _, p := range c.pods {
		if hasFinalizer(p) {
			t.Errorf("pod %s keeps finalizer", p.Name)
		}
	}
	if !slices.Contains(c.events, Event{corev1.EventTypeNormal, "Completed", "Job completed"}) {
		t.Errorf("events = %v", c.events)
	}
}

func TestIndexedSequenceCompletes(t *testing.T) {
	c := newCluster(t, newJob(indexed))
	d := c.step()
	if !slices.Equal(d.Create, []int{0, 1}) {
		t.Fatalf("create = %v", d.Create)
	}
	c.finish("job-1-1", corev1.PodSucceeded)
	d = c.step()
	if d.Status.CompletedIndexes != "1" || d.Status.Succeeded != 1 || len(d.RemoveFinalizers) != 0 {
		t.Fatalf("first phase: %+v rm=%v", d.Status, names(d.RemoveFinalizers))
	}
	if !slices.Equal(d.Create, []int{2}) {
		t.Fatalf("create = %v", d.Create)
	}
	d = c.step()
	if !slices.Equal(names(d.RemoveFinalizers), []string{"job-1-1"}) {
		t.Fatalf("second phase rm = %v", names(d.RemoveFinalizers))
	}
	c.finish("job-0-0", corev1.PodSucceeded)
	c.finish("job-2-2", corev1.PodSucceeded)
	c.settle()
	st := c.job.Status
	if st.CompletedIndexes != "0-2" || st.Succeeded != 3 || !hasCond(&st, batchv1.JobComplete) {
		t.Fatalf("status = %+v", st)
	}
}

func TestBackoffLimitSequenceFails(t *testing.T) {
	c := newCluster(t, newJob(func(j *batchv1.Job) { j.Spec.BackoffLimit = ptr.To[int32](0) }))
	c.step()
	c.finish("job-0", corev1.PodFailed)
	d := c.step()
	if !hasCond(d.Status, batchv1.JobFailureTarget) || hasCond(d.Status, batchv1.JobFailed) {
		t.Fatalf("want FailureTarget only: %+v", d.Status.Conditions)
	}
	if got := names(d.Delete); !slices.Equal(got, []string{"job-1"}) {
		t.Fatalf("delete = %v", got)
	}
	if len(d.Create) != 0 {
		t.Fatalf("created %v", d.Create)
	}
	if got := d.Status.UncountedTerminatedPods.Failed; !slices.Equal(got, []types.UID{"uid-job-0", "uid-job-1"}) {
		t.Fatalf("uncounted failed = %v", got)
	}
	c.kubeletStops()
	c.settle()
	st := c.job.Status
	if !hasCond(&st, batchv1.JobFailed) || st.Failed != 2 || st.Active != 0 || *st.Terminating != 0 {
		t.Fatalf("status = %+v", st)
	}
	if findCondition(st.Conditions, batchv1.JobFailed).Reason != batchv1.JobReasonBackoffLimitExceeded {
		t.Fatal("wrong reason")
	}
	if !slices.Contains(c.events, Event{corev1.EventTypeWarning, batchv1.JobReasonBackoffLimitExceeded, msgBackoffLimit}) {
		t.Errorf("events = %v", c.events)
	}
	if c.backoff != (Backoff{}) {
		t.Errorf("backoff not cleared: %+v", c.backoff)
	}
}

func TestFailedWaitsForTerminating(t *testing.T) {
	job := newJob(started, func(j *batchv1.Job) {
		j.Status.Conditions = []batchv1.JobCondition{*newCondition(batchv1.JobFailureTarget, "BackoffLimitExceeded", msgBackoffLimit, t0)}
		j.Status.Failed = 7
	})
	d := decide(t, Input{Job: job, Pods: []*corev1.Pod{newPod("a", deleting, noFinalizer)}})
	if hasCond(d.Status, batchv1.JobFailed) {
		t.Fatal("Failed while a pod terminates")
	}
	d = decide(t, Input{Job: job})
	if !hasCond(d.Status, batchv1.JobFailed) || d.Status.CompletionTime != nil {
		t.Fatalf("status = %+v", d.Status)
	}
}

func TestActiveDeadline(t *testing.T) {
	job := newJob(func(j *batchv1.Job) {
		j.Spec.ActiveDeadlineSeconds = ptr.To[int64](100)
		j.Status.StartTime = ptr.To(metav1.NewTime(t0.Add(-40 * time.Second)))
		j.Status.Active = 2
		j.Status.Ready = ptr.To[int32](0)
		j.Status.Terminating = ptr.To[int32](0)
	})
	pods := []*corev1.Pod{newPod("a"), newPod("b")}
	d := decide(t, Input{Job: job, Pods: pods})
	if d.RequeueAfter != 60*time.Second || d.Status != nil {
		t.Fatalf("requeue = %v status=%v", d.RequeueAfter, d.Status)
	}
	d = decide(t, Input{Job: job, Pods: pods, Now: t0.Add(60 * time.Second)})
	c := findCondition(d.Status.Conditions, batchv1.JobFailureTarget)
	if c == nil || c.Reason != batchv1.JobReasonDeadlineExceeded || len(d.Delete) != 2 {
		t.Fatalf("status=%+v delete=%v", d.Status, names(d.Delete))
	}
	// Suspended: the deadline does not run.
	job.Spec.Suspend = ptr.To(true)
	d = decide(t, Input{Job: job, Pods: pods, Now: t0.Add(time.Hour)})
	if d.Status != nil && hasCond(d.Status, batchv1.JobFailureTarget) {
		t.Fatal("deadline while suspended")
	}
}

func TestSuspendResume(t *testing.T) {
	c := newCluster(t, newJob())
	c.step()
	c.job.Spec.Suspend = ptr.To(true)
	d := c.step()
	if got := names(d.Delete); len(got) != 2 || len(d.RemoveFinalizers) != 2 {
		t.Fatalf("delete=%v rm=%v", got, names(d.RemoveFinalizers))
	}
	cond := findCondition(d.Status.Conditions, batchv1.JobSuspended)
	if cond == nil || cond.Status != corev1.ConditionTrue || cond.Reason != "JobSuspended" || d.Status.StartTime != nil {
		t.Fatalf("status = %+v", d.Status)
	}
	c.kubeletStops()
	c.settle()
	if c.job.Status.Failed != 0 {
		t.Fatalf("suspension counted failures: %+v", c.job.Status)
	}
	c.now = t0.Add(time.Minute)
	c.job.Spec.Suspend = ptr.To(false)
	d = c.step()
	cond = findCondition(d.Status.Conditions, batchv1.JobSuspended)
	if cond.Status != corev1.ConditionFalse || cond.Reason != "JobResumed" || !d.Status.StartTime.Time.Equal(c.now) || len(d.Create) != 2 {
		t.Fatalf("status = %+v create=%v", d.Status, d.Create)
	}
	want := []Event{{corev1.EventTypeNormal, "Suspended", "Job suspended"}, {corev1.EventTypeNormal, "Resumed", "Job resumed"}}
	if !slices.Equal(c.events, want) {
		t.Fatalf("events = %v", c.events)
	}
}

func TestFinishedJob(t *testing.T) {
	job := newJob(started, func(j *batchv1.Job) {
		j.Status.Conditions = []batchv1.JobCondition{
			*newCondition(batchv1.JobSuccessCriteriaMet, "CompletionsReached", msgCompletions, t0),
			*newCondition(batchv1.JobComplete, "CompletionsReached", msgCompletions, t0)}
		j.Status.CompletionTime = ptr.To(metav1.NewTime(t0))
	})
	d := decide(t, Input{Job: job, Pods: []*corev1.Pod{newPod("b", phase(corev1.PodSucceeded)), newPod("a"), newPod("c", noFinalizer)}, Backoff: Backoff{FailuresAfterLastSuccess: 2}})
	if d.Status != nil || len(d.Create)+len(d.Delete) != 0 || !slices.Equal(names(d.RemoveFinalizers), []string{"a", "b"}) || d.Backoff != (Backoff{}) {
		t.Fatalf("decision = %+v", d)
	}
}

func TestPodFailureBackoff(t *testing.T) {
	job := newJob(started, func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](1) })
	failedPod := newPod("a", phase(corev1.PodFailed), finishedAt(t0.Add(-3*time.Second)))
	d := decide(t, Input{Job: job, Pods: []*corev1.Pod{failedPod}})
	if len(d.Create) != 0 || d.RequeueAfter != 7*time.Second {
		t.Fatalf("create=%v requeue=%v", d.Create, d.RequeueAfter)
	}
	if d.Backoff.FailuresAfterLastSuccess != 1 || !d.Backoff.LastFailure.Equal(t0.Add(-3*time.Second)) {
		t.Fatalf("backoff = %+v", d.Backoff)
	}
	job.Status = *d.Status
	d2 := decide(t, Input{Job: job, Pods: []*corev1.Pod{failedPod}, Backoff: d.Backoff, Now: t0.Add(7 * time.Second)})
	if !slices.Equal(d2.Create, []int{-1}) || d2.Backoff != d.Backoff {
		t.Fatalf("after backoff: create=%v backoff=%+v", d2.Create, d2.Backoff)
	}
	// Third failure: 40s, capped at 10m for many.
	if got := backoffLeft(Backoff{3, t0}, t0); got != 40*time.Second {
		t.Errorf("3 failures: %v", got)
	}
	if got := backoffLeft(Backoff{30, t0}, t0.Add(time.Minute)); got != 9*time.Minute {
		t.Errorf("30 failures: %v", got)
	}
	// A success resets the record, keeping failures after it.
	okPod := newPod("s", phase(corev1.PodSucceeded), finishedAt(t0.Add(-10*time.Second)))
	later := newPod("f", phase(corev1.PodFailed), finishedAt(t0.Add(-5*time.Second)))
	if got := nextBackoff(Backoff{4, t0.Add(-time.Hour)}, []*corev1.Pod{okPod}, []*corev1.Pod{later}); got != (Backoff{1, t0.Add(-5 * time.Second)}) {
		t.Errorf("after success: %+v", got)
	}
	if got := nextBackoff(Backoff{4, t0}, []*corev1.Pod{okPod}, nil); got != (Backoff{}) {
		t.Errorf("success only: %+v", got)
	}
}

func TestRestartOnFailureCountsRestarts(t *testing.T) {
	job := newJob(started, func(j *batchv1.Job) {
		j.Spec.BackoffLimit = ptr.To[int32](2)
		j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	})
	restarting := func(n int32) podOpt {
		return func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: n}}
		}
	}
	d := decide(t, Input{Job: job, Pods: []*corev1.Pod{newPod("a", restarting(1)), newPod("b")}})
	if hasCond(d.Status, batchv1.JobFailureTarget) {
		t.Fatal("failed too early")
	}
	d = decide(t, Input{Job: job, Pods: []*corev1.Pod{newPod("a", restarting(1)), newPod("b", restarting(1))}})
	if !hasCond(d.Status, batchv1.JobFailureTarget) {
		t.Fatal("restarts not counted")
	}
}

func TestWorkQueueCompletes(t *testing.T) {
	c := newCluster(t, newJob(func(j *batchv1.Job) { j.Spec.Completions = nil }))
	c.step()
	c.finish("job-0", corev1.PodSucceeded)
	d := c.step()
	if len(d.Create) != 0 || hasCond(d.Status, batchv1.JobSuccessCriteriaMet) {
		t.Fatalf("decision = %+v", d)
	}
	c.finish("job-1", corev1.PodFailed)
	c.settle()
	st := c.job.Status
	if !hasCond(&st, batchv1.JobComplete) || st.Succeeded != 1 || st.Failed != 1 {
		t.Fatalf("status = %+v", st)
	}
}

func TestSuccessDeletesRemainingPods(t *testing.T) {
	job := newJob(started, func(j *batchv1.Job) {
		j.Spec.Completions = ptr.To[int32](1)
		j.Status.Succeeded = 1
	})
	d := decide(t, Input{Job: job, Pods: []*corev1.Pod{newPod("a", noFinalizer, phase(corev1.PodSucceeded))}})
	if !hasCond(d.Status, batchv1.JobSuccessCriteriaMet) || !hasCond(d.Status, batchv1.JobComplete) {
		t.Fatalf("status = %+v", d.Status)
	}
}

func TestIndexSet(t *testing.T) {
	cases := []struct {
		in    string
		limit int
		add   []int
		want  string
		count int
	}{
		{"", 5, nil, "", 0},
		{"1,3-5", 10, nil, "1,3-5", 4},
		{"1,3-5", 5, nil, "1,3,4", 3},
		{"1", 10, []int{2, 0, 7}, "0-2,7", 4},
		{"0,1", 10, []int{3}, "0,1,3", 3},
		{"x,2", 10, nil, "2", 1},
	}
	for _, tc := range cases {
		s := parseIndexSet(tc.in, tc.limit).with(tc.add...)
		if s.String() != tc.want || s.count() != tc.count {
			t.Errorf("%q+%v = %q (%d), want %q (%d)", tc.in, tc.add, s.String(), s.count(), tc.want, tc.count)
		}
	}
	if got := parseIndexSet("0,2-3", 10).lowestMissing(3, 6); !slices.Equal(got, []int{1, 4, 5}) {
		t.Errorf("lowestMissing = %v", got)
	}
}

func TestPodFor(t *testing.T) {
	job := newJob(indexed, func(j *batchv1.Job) {
		j.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "i"}}
	})
	p := PodFor(job, 2)
	if p.GenerateName != "job-2-" || p.Spec.Hostname != "job-2" || p.Annotations[batchv1.JobCompletionIndexAnnotation] != "2" ||
		p.Labels[batchv1.JobCompletionIndexAnnotation] != "2" || p.Labels[batchv1.JobNameLabel] != "job" ||
		p.Labels[batchv1.ControllerUidLabel] != "job-uid" || p.Labels["job-name"] != "job" || p.Labels["app"] != "x" {
		t.Fatalf("pod meta = %+v", p.ObjectMeta)
	}
	if !hasFinalizer(p) || len(p.OwnerReferences) != 1 || !*p.OwnerReferences[0].Controller || !*p.OwnerReferences[0].BlockOwnerDeletion {
		t.Fatalf("finalizer/owner = %v %v", p.Finalizers, p.OwnerReferences)
	}
	for _, c := range append(p.Spec.InitContainers, p.Spec.Containers...) {
		if len(c.Env) != 1 || c.Env[0].Name != "JOB_COMPLETION_INDEX" ||
			c.Env[0].ValueFrom.FieldRef.FieldPath != "metadata.labels['batch.kubernetes.io/job-completion-index']" {
			t.Fatalf("env = %+v", c.Env)
		}
	}
	if job.Spec.Template.Spec.Containers[0].Env != nil {
		t.Fatal("template modified")
	}
	np := PodFor(newJob(), -1)
	if np.GenerateName != "job-" || np.Spec.Hostname != "" || np.Annotations[batchv1.JobCompletionIndexAnnotation] != "" {
		t.Fatalf("nonindexed pod = %+v", np.ObjectMeta)
	}
}

func TestValidateHelperRejects(t *testing.T) {
	ft := *newCondition(batchv1.JobFailureTarget, "r", "m", t0)
	failed := *newCondition(batchv1.JobFailed, "r", "m", t0)
	complete := *newCondition(batchv1.JobComplete, "r", "m", t0)
	start := ptr.To(metav1.NewTime(t0))
	bad := map[string]batchv1.JobStatus{
		"ready > active":       {Active: 1, Ready: ptr.To[int32](2)},
		"failed without FT":    {StartTime: start, Conditions: []batchv1.JobCondition{failed}},
		"complete no SCM":      {StartTime: start, CompletionTime: start, Conditions: []batchv1.JobCondition{complete}},
		"finished uncounted":   {StartTime: start, Conditions: []batchv1.JobCondition{ft, failed}, UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{Failed: []types.UID{"x"}}},
		"finished terminating": {StartTime: start, Conditions: []batchv1.JobCondition{ft, failed}, Terminating: ptr.To[int32](1)},
		"completionTime alone": {StartTime: start, CompletionTime: start},
		"duplicate uid":        {UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{Failed: []types.UID{"x"}, Succeeded: []types.UID{"x"}}},
	}
	for name, st := range bad {
		if validate(&batchv1.JobStatus{}, &st) == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if validate(&batchv1.JobStatus{Failed: 2}, &batchv1.JobStatus{Failed: 1}) == nil {
		t.Error("decreasing counter accepted")
	}
	if checkIndexesFormat("1,1", 3) == nil || checkIndexesFormat("0-3", 3) == nil || checkIndexesFormat("0,2", 3) != nil {
		t.Error("index format check wrong")
	}
}
