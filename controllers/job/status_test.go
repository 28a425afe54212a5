package job

import (
	"github.com/ringfire/ringfire/controllers/job/plan"

	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/controllers/job/state"
)

// Inside the window of count-only writes (a write went out just now), every
// change but the counts is written at once and carries the counts of the
// moment with it; a status that would not change is not written, and no later
// look is scheduled for it. (Count-only changes waiting for the window, and a
// phase change going out inside it: TestStatusCoalescing.)
func TestStatusWritesAllButCountsAtOnce(t *testing.T) {
	keep := state.Step{Then: state.Keep}
	for _, tc := range []struct {
		name   string
		edit   func(*batch.Job) // the Job as read, before the reconcile
		step   state.Step
		counts plan.Counts
		// check is run on the written status; nil: nothing must be written.
		check func(t *testing.T, st batch.JobStatus)
	}{
		{name: "nothing changed: no write",
			step: keep, counts: counts(2, 0)},
		{name: "nothing changed but the rule ran: no write",
			step: state.Step{Then: state.RunningRule}, counts: counts(2, 0)},
		{name: "a kill's version bump, with the counts it left",
			step: state.Step{Then: keep.Then, BumpVersion: true}, counts: counts(1, 0),
			check: func(t *testing.T, st batch.JobStatus) {
				if st.Version != 1 || st.Running != 1 || st.TaskStatusCount["w"].Phase["Running"] != 1 {
					t.Fatalf("version %d running %d tasks %v; want version 1 with running 1", st.Version, st.Running, st.TaskStatusCount)
				}
			}},
		{name: "a retry counted",
			step: state.Step{Then: keep.Then, BumpRetry: true}, counts: counts(2, 0),
			check: func(t *testing.T, st batch.JobStatus) {
				if st.RetryCount != 1 || st.State.Phase != batch.Running {
					t.Fatalf("retryCount %d phase %s; want 1, Running", st.RetryCount, st.State.Phase)
				}
			}},
		{name: "minAvailable changed by a scale",
			edit: func(j *batch.Job) { j.Spec.MinAvailable = 1 },
			step: keep, counts: counts(2, 0),
			check: func(t *testing.T, st batch.JobStatus) {
				if st.MinAvailable != 1 {
					t.Fatalf("minAvailable %d, want 1", st.MinAvailable)
				}
			}},
		{name: "Pending to Running: the phase, its condition at a whole second, the counts; a wait's reason gone",
			edit: func(j *batch.Job) {
				j.Status.State = batch.JobState{Phase: batch.Pending, Reason: "InvalidReference", Message: `queue "q" does not exist`}
				j.Status.Running, j.Status.Pending = 0, 2
				j.Status.Conditions = []batch.JobCondition{{Status: batch.Pending}}
				j.Status.TaskStatusCount = nil
			},
			step: state.Step{Then: state.PendingRule}, counts: counts(2, 0),
			check: func(t *testing.T, st batch.JobStatus) {
				if st.State.Phase != batch.Running || st.Running != 2 || st.Pending != 0 || st.State.Reason != "" || st.State.Message != "" {
					t.Fatalf("state %+v running %d pending %d; want Running, no reason, with 2 running", st.State, st.Running, st.Pending)
				}
				last := st.Conditions[len(st.Conditions)-1]
				if len(st.Conditions) != 2 || last.Status != batch.Running || last.LastTransitionTime == nil ||
					last.LastTransitionTime.Nanosecond() != 0 || !last.LastTransitionTime.Equal(&st.State.LastTransitionTime) {
					t.Fatalf("conditions %+v, state %+v; want a Running condition at the transition, at a whole second",
						st.Conditions, st.State)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			job := runningJob()
			job.Status.TaskStatusCount = counts(2, 0).Tasks
			if tc.edit != nil {
				tc.edit(job)
			}
			c, vc := statusWriter(t, time.Hour, job)
			c.memory.pacer.Wrote("ns/a", time.Now()) // a status write just went out
			if err := c.writeStatusOf(ctx, "ns/a", job, nil, tc.step, state.SpecOf(job), tc.counts); err != nil {
				t.Fatal(err)
			}
			writes := statusUpdates(vc)
			if tc.check == nil {
				_, scheduled := c.memory.wakes.At("ns/a")
				if writes != 0 || scheduled {
					t.Fatalf("%d writes, a look scheduled: %v; want neither", writes, scheduled)
				}
				return
			}
			if writes != 1 {
				t.Fatalf("%d status writes inside the window, want 1 at once", writes)
			}
			got, err := vc.BatchV1alpha1().Jobs("ns").Get(ctx, "a", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, got.Status)
		})
	}
}

// The status written is what the next reconcile decides on, even before the
// cache has caught up: the write is remembered against the resourceVersion it
// was computed from, so a second look at the same cached Job writes nothing.
func TestWrittenStatusIsNotWrittenAgainBeforeTheCacheCatchesUp(t *testing.T) {
	ctx := context.Background()
	job := runningJob()
	job.Status.TaskStatusCount = counts(2, 0).Tasks
	c, vc := statusWriter(t, -1, job)
	spec := state.SpecOf(job)
	step := state.Step{Then: state.RunningRule}
	if err := c.writeStatusOf(ctx, "ns/a", job, nil, step, spec, counts(0, 2)); err != nil {
		t.Fatal(err)
	}
	if n := statusUpdates(vc); n != 1 {
		t.Fatalf("%d writes for Running to Completed, want 1", n)
	}
	// The cache still shows the Job as read: the reconcile takes the written one.
	latest := c.written.Latest("ns/a", job)
	if latest.Status.State.Phase != batch.Completed {
		t.Fatalf("latest view: phase %s, want the written Completed", latest.Status.State.Phase)
	}
	if err := c.writeStatusOf(ctx, "ns/a", latest, nil, state.Step{Then: state.Keep}, spec, counts(0, 2)); err != nil {
		t.Fatal(err)
	}
	if n := statusUpdates(vc); n != 1 {
		t.Fatalf("a second look at the written status wrote again: %d writes, want 1", n)
	}
}
