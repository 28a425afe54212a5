package job

import (
	"github.com/ringfire/ringfire/controllers/job/plan"

	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/controllers/job/state"
	"github.com/ringfire/ringfire/shard"
)

func TestOnlyCountsDiffer(t *testing.T) {
	base := batch.JobStatus{
		State:   batch.JobState{Phase: batch.Running},
		Running: 2, Pending: 1, MinAvailable: 3,
		Conditions: []batch.JobCondition{{Status: batch.Running}},
	}
	for _, tc := range []struct {
		name   string
		change func(*batch.JobStatus)
		want   bool
	}{
		{"counts", func(s *batch.JobStatus) { s.Running, s.Succeeded, s.Pending = 1, 2, 0 }, true},
		{"task counts and duration", func(s *batch.JobStatus) {
			s.TaskStatusCount = map[string]batch.TaskState{"w": {Phase: map[corev1.PodPhase]int32{corev1.PodRunning: 2}}}
			s.RunningDuration = &metav1.Duration{Duration: time.Second}
		}, true},
		{"phase", func(s *batch.JobStatus) { s.State.Phase = batch.Completed }, false},
		{"condition", func(s *batch.JobStatus) {
			s.Conditions = append(s.Conditions, batch.JobCondition{Status: batch.Completed})
		}, false},
		{"retry", func(s *batch.JobStatus) { s.RetryCount++ }, false},
		{"version", func(s *batch.JobStatus) { s.Version++ }, false},
		{"reason", func(s *batch.JobStatus) { s.State.Reason = "InvalidReference" }, false},
		{"minAvailable", func(s *batch.JobStatus) { s.MinAvailable = 2 }, false},
	} {
		changed := *base.DeepCopy()
		tc.change(&changed)
		if got := plan.OnlyCountsDiffer(&changed, &base); got != tc.want {
			t.Errorf("%s: onlyCountsDiffer = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// statusWriter is a Job controller over fake clients, for its status writing alone.
func statusWriter(t *testing.T, window time.Duration, job *batch.Job) (*Controller, *vcfake.Clientset) {
	t.Helper()
	kube, vc := kubefake.NewClientset(), vcfake.NewSimpleClientset(job)
	cfg := DefaultConfig()
	cfg.Kube, cfg.Volcano, cfg.Cache = kube, vc, cache.New(cache.Config{Kube: kube, Volcano: vc})
	cfg.Ownership, cfg.StatusCoalesce = shard.HoldAll{}, window
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, vc
}

func statusUpdates(vc *vcfake.Clientset) int {
	n := 0
	for _, a := range vc.Actions() {
		if u, ok := a.(k8stesting.UpdateAction); ok && u.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

func runningJob() *batch.Job {
	return &batch.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "1"},
		Spec: batch.JobSpec{MinAvailable: 2, Tasks: []batch.TaskSpec{{Name: "w", Replicas: 2,
			MinAvailable: func() *int32 { n := int32(2); return &n }()}}},
		Status: batch.JobStatus{
			State: batch.JobState{Phase: batch.Running}, Running: 2, MinAvailable: 2,
			Conditions: []batch.JobCondition{{Status: batch.Running}},
		},
	}
}

func counts(running, succeeded int32) plan.Counts {
	var pc plan.Counts
	for range running {
		pc.Add("w", corev1.PodRunning)
	}
	for range succeeded {
		pc.Add("w", corev1.PodSucceeded)
	}
	return pc
}

// Within the window a count-only change waits, a look is scheduled for the window's end, and
// a new phase goes out at once; after the window the latest counts are written: coalescing
// delays counts, never a phase, and never loses the last state.
func TestStatusCoalescing(t *testing.T) {
	ctx := context.Background()
	job := runningJob()
	c, vc := statusWriter(t, time.Hour, job)
	spec := state.SpecOf(job)
	keep := state.Step{Then: state.Keep}
	c.memory.pacer.Wrote("ns/a", time.Now()) // a status write just went out

	if err := c.writeStatusOf(ctx, "ns/a", job, nil, keep, spec, counts(1, 1)); err != nil {
		t.Fatal(err)
	}
	if n := statusUpdates(vc); n != 0 {
		t.Fatalf("a count-only change inside the window was written (%d writes)", n)
	}
	due, ok := c.memory.wakes.At("ns/a")
	if !ok || time.Until(due) < 59*time.Minute {
		t.Fatalf("no look scheduled for the window's end (due %v, scheduled %v)", due, ok)
	}

	// All pods succeeded: Running → Completed is a new phase, written inside the window.
	if err := c.writeStatusOf(ctx, "ns/a", job, nil, state.Step{Then: state.RunningRule}, spec, counts(0, 2)); err != nil {
		t.Fatal(err)
	}
	if n := statusUpdates(vc); n != 1 {
		t.Fatalf("a phase change inside the window: %d writes, want 1 at once", n)
	}
	got, _ := vc.BatchV1alpha1().Jobs("ns").Get(ctx, "a", metav1.GetOptions{})
	if got.Status.State.Phase != batch.Completed || got.Status.Succeeded != 2 {
		t.Fatalf("written: phase %s succeeded %d, want Completed with 2", got.Status.State.Phase, got.Status.Succeeded)
	}

	// The window over, the deferred counts of a Job still Running go out.
	c2, vc2 := statusWriter(t, 20*time.Millisecond, runningJob())
	c2.memory.pacer.Wrote("ns/a", time.Now())
	if err := c2.writeStatusOf(ctx, "ns/a", runningJob(), nil, keep, spec, counts(1, 1)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond)
	if err := c2.writeStatusOf(ctx, "ns/a", runningJob(), nil, keep, spec, counts(1, 1)); err != nil {
		t.Fatal(err)
	}
	got, _ = vc2.BatchV1alpha1().Jobs("ns").Get(ctx, "a", metav1.GetOptions{})
	if statusUpdates(vc2) != 1 || got.Status.Running != 1 || got.Status.Succeeded != 1 {
		t.Fatalf("after the window: %d writes, running %d succeeded %d; want the last counts written once",
			statusUpdates(vc2), got.Status.Running, got.Status.Succeeded)
	}
}

// A running Job's duration grows on its own: a look that finds nothing else
// changed writes nothing, and the duration goes out with the next change.
func TestDurationAloneIsNotWritten(t *testing.T) {
	ctx := context.Background()
	job := runningJob()
	started := metav1.NewTime(time.Now().Add(-10 * time.Second).Truncate(time.Second))
	job.Status.Conditions[0].LastTransitionTime = &started
	job.Status.TaskStatusCount = counts(2, 0).Tasks
	c, vc := statusWriter(t, -1, job) // no merging of count changes
	spec := state.SpecOf(job)
	keep := state.Step{Then: state.Keep}
	if err := c.writeStatusOf(ctx, "ns/a", job, nil, keep, spec, counts(2, 0)); err != nil {
		t.Fatal(err)
	}
	if n := statusUpdates(vc); n != 0 {
		t.Fatalf("a change of runningDuration alone was written (%d writes)", n)
	}
	if err := c.writeStatusOf(ctx, "ns/a", job, nil, keep, spec, counts(1, 1)); err != nil {
		t.Fatal(err)
	}
	got, _ := vc.BatchV1alpha1().Jobs("ns").Get(ctx, "a", metav1.GetOptions{})
	if statusUpdates(vc) != 1 || got.Status.RunningDuration == nil || got.Status.RunningDuration.Duration < 10*time.Second {
		t.Fatalf("%d writes, runningDuration %v; want one write carrying the duration (≥ 10s)", statusUpdates(vc), got.Status.RunningDuration)
	}
}
