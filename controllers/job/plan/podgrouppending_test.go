package plan

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/controllers/job/state"
)

// The Job is short of pods when those pending, running or succeeded (the
// ones being created count as pending) are fewer than minAvailable, or than
// a task's minAvailable when the scheduler enforces those (minAvailable at
// least their sum).
func TestPodsShort(t *testing.T) {
	n := func(v int32) *int32 { return &v }
	withMin := func(ts batch.TaskSpec, m *int32) batch.TaskSpec { ts.MinAvailable = m; return ts }
	have := func(byTask map[string][]corev1.PodPhase) Counts {
		var pc Counts
		for name, phases := range byTask {
			for _, p := range phases {
				pc.Add(name, p)
			}
		}
		return pc
	}
	const (
		pend = corev1.PodPending
		run  = corev1.PodRunning
		done = corev1.PodSucceeded
		fail = corev1.PodFailed
	)
	for _, tc := range []struct {
		name         string
		minAvailable int32
		tasks        []batch.TaskSpec
		pods         map[string][]corev1.PodPhase
		want         bool
	}{
		{"all made", 2, []batch.TaskSpec{task("w", 2)}, map[string][]corev1.PodPhase{"w": {pend, run}}, false},
		{"one made of two", 2, []batch.TaskSpec{task("w", 2)}, map[string][]corev1.PodPhase{"w": {pend}}, true},
		{"a failed pod does not count", 2, []batch.TaskSpec{task("w", 2)}, map[string][]corev1.PodPhase{"w": {done, fail}}, true},
		{"enough overall, a task short of its enforced minimum", 2,
			[]batch.TaskSpec{withMin(task("a", 2), n(1)), withMin(task("b", 1), n(1))},
			map[string][]corev1.PodPhase{"a": {pend, pend}}, true},
		{"enough overall, task minimums not enforced", 2,
			[]batch.TaskSpec{task("a", 2), task("b", 1)},
			map[string][]corev1.PodPhase{"a": {pend, pend}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := testJob("s", tc.tasks...)
			job.Spec.MinAvailable = tc.minAvailable
			state.Defaults(job)
			if got := podsShort(job, have(tc.pods)); got != tc.want {
				t.Fatalf("podsShort = %v, want %v", got, tc.want)
			}
		})
	}
}
