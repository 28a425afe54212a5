package plan

import (
	"strings"
	"testing"

	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/controllers/job/state"
)

// A Job whose minAvailable, or an enforced task minAvailable, counts pods of
// tasks that wait on dependsOn can never start: gangProblem says so, how many
// pods can exist before, and what to change; a Job that can start gets "".
// Rows are given as the user writes them and defaulted as the controller
// defaults them (a Job's minAvailable is the tasks' sum, a task's its
// replicas).
func TestGangProblem(t *testing.T) {
	n := func(v int32) *int32 { return &v }
	tk := func(name string, replicas int32, min *int32, after ...string) batch.TaskSpec {
		ts := task(name, replicas)
		ts.MinAvailable = min
		if len(after) > 0 {
			ts.DependsOn = &batch.DependsOn{Name: after}
		}
		return ts
	}
	for _, tc := range []struct {
		name         string
		minAvailable int32 // 0: left out
		tasks        []batch.TaskSpec
		want         []string // parts of the message; none: no problem
		wantNot      []string // what the message must not say
	}{
		{name: "no dependsOn", tasks: []batch.TaskSpec{tk("a", 2, nil), tk("b", 1, nil)}},
		{name: "b after a, minAvailable 2 explicit: only a's pod can exist",
			minAvailable: 2, tasks: []batch.TaskSpec{tk("a", 1, nil), tk("b", 1, nil, "a")},
			want: []string{"minAvailable 2 counts the pods of task b", "only 1 can exist before then (task a)",
				"lower spec.minAvailable to 1, or set minAvailable: 0 on task b and leave spec.minAvailable out"}},
		{name: "b after a, minAvailable left out: the tasks' sum, 2",
			tasks: []batch.TaskSpec{tk("a", 1, nil), tk("b", 1, nil, "a")},
			want:  []string{"minAvailable 2 counts the pods of task b", "only 1 can exist before then (task a)"}},
		{name: "a chain: c after b after a, three tasks waiting or not",
			tasks: []batch.TaskSpec{tk("a", 2, nil), tk("b", 1, nil, "a"), tk("c", 1, nil, "b")},
			want: []string{"minAvailable 4 counts the pods of tasks b, c", "only 2 can exist before then (task a)",
				"lower spec.minAvailable to 2, or set minAvailable: 0 on tasks b, c"}},
		{name: "minAvailable lowered to what can exist: it starts",
			minAvailable: 1, tasks: []batch.TaskSpec{tk("a", 1, nil), tk("b", 1, nil, "a")}},
		{name: "waiting task's minAvailable 0, Job's left out: it starts",
			tasks: []batch.TaskSpec{tk("a", 1, nil), tk("b", 1, n(0), "a")}},
		{name: "waiting task's minAvailable 0, but the Job's kept at 2",
			minAvailable: 2, tasks: []batch.TaskSpec{tk("a", 1, nil), tk("b", 1, n(0), "a")},
			want: []string{"minAvailable 2 counts the pods of task b", "only 1 can",
				"lower spec.minAvailable to 1, or leave spec.minAvailable out (the tasks' minAvailable, summed, is 1)"}},
		{name: "enough early pods, but b's own minimum is enforced",
			minAvailable: 2, tasks: []batch.TaskSpec{tk("a", 2, n(1)), tk("b", 1, nil, "a")},
			want: []string{"task b's minAvailable 1 must be met", "spec.minAvailable 2 covers every task's",
				"lower spec.minAvailable to 1, or set minAvailable: 0 on task b"}},
		{name: "lowering minAvailable cannot help: the early task's minimum is 0, so b's would be enforced",
			minAvailable: 2, tasks: []batch.TaskSpec{tk("a", 1, n(0)), tk("b", 1, nil, "a")},
			want:    []string{"only 1 can exist", "; set minAvailable: 0 on task b and leave spec.minAvailable out"},
			wantNot: []string{"lower spec.minAvailable"}},
		{name: "enough early pods, tasks' minimums not enforced (Job's below their sum)",
			minAvailable: 2, tasks: []batch.TaskSpec{tk("a", 2, nil), tk("b", 1, nil, "a")}},
		{name: "two roots, one waiting task with minimum 0",
			tasks: []batch.TaskSpec{tk("a", 1, nil), tk("c", 2, nil), tk("b", 3, n(0), "a", "c")}},
		{name: "dependsOn with no names waits for nothing",
			tasks: []batch.TaskSpec{tk("a", 1, nil), func() batch.TaskSpec {
				ts := tk("b", 1, nil)
				ts.DependsOn = &batch.DependsOn{}
				return ts
			}()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := testJob("g", tc.tasks...)
			job.Spec.MinAvailable = tc.minAvailable
			state.Defaults(job)
			got := GangProblem(job)
			if len(tc.want) == 0 {
				if got != "" {
					t.Fatalf("gangProblem = %q, want none", got)
				}
				return
			}
			for _, part := range tc.want {
				if !strings.Contains(got, part) {
					t.Fatalf("gangProblem = %q, want it to say %q", got, part)
				}
			}
			for _, part := range tc.wantNot {
				if strings.Contains(got, part) {
					t.Fatalf("gangProblem = %q, want it not to say %q", got, part)
				}
			}
		})
	}
}

// After a sync, status.state says why a Pending Job can never start; a
// reason ringfire gave for an earlier wait goes once the Job syncs without
// it, in any phase; one Volcano's state machine set stays.
func TestHeldState(t *testing.T) {
	const problem = "minAvailable 2 counts ..."
	for _, tc := range []struct {
		name                     string
		phase                    batch.JobPhase
		reason, message, problem string
		wantReason, wantMessage  string
	}{
		{"Pending, gang cannot start", batch.Pending, "", "", problem, ReasonMinAvailableUnreachable, problem},
		{"Pending, still so", batch.Pending, ReasonMinAvailableUnreachable, problem, problem, ReasonMinAvailableUnreachable, problem},
		{"Pending, after a missing queue", batch.Pending, ReasonInvalidReference, "queue", problem, ReasonMinAvailableUnreachable, problem},
		{"Pending, fixed (minAvailable lowered)", batch.Pending, ReasonMinAvailableUnreachable, problem, "", "", ""},
		{"Pending, the missing queue came", batch.Pending, ReasonInvalidReference, "queue", "", "", ""},
		{"Running (pods of an earlier version): not held", batch.Running, "", "", problem, "", ""},
		{"Running, a reason of Volcano's stays", batch.Running, "SomeReason", "m", "", "SomeReason", "m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, m := heldState(tc.phase, tc.reason, tc.message, tc.problem)
			if r != tc.wantReason || m != tc.wantMessage {
				t.Fatalf("heldState = %q %q, want %q %q", r, m, tc.wantReason, tc.wantMessage)
			}
		})
	}
}
