package state

import (
	"testing"

	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

func i32(n int32) *int32 { return &n }

// oneTask is a job of one task with the given replicas and job-level minAvailable.
func oneTask(replicas, minAvailable int32) Spec {
	return Spec{MinAvailable: minAvailable, MaxRetry: 3, Tasks: []Task{{Name: "worker", Replicas: replicas}}}
}

type settleRow struct {
	name    string
	rule    Rule
	current batch.JobPhase
	spec    Spec
	retry   int32
	after   Counts
	want    batch.JobPhase
	wantSet bool
}

func runSettle(t *testing.T, rows []settleRow) {
	t.Helper()
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			got, set := row.rule.Settle(row.current, row.spec, row.retry, row.after)
			if got != row.want || set != row.wantSet {
				t.Errorf("%s.Settle = %s, %v; want %s, %v", row.rule, got, set, row.want, row.wantSet)
			}
		})
	}
}

func TestSettleUnconditionalRules(t *testing.T) {
	busy := Counts{Running: 3, Terminating: 2}
	runSettle(t, []settleRow{
		{"Keep leaves the phase", Keep, batch.Aborted, oneTask(3, 3), 0, busy, batch.Aborted, false},
		{"ToRestarting enters Restarting whatever the pods", ToRestarting, batch.Running, oneTask(3, 3), 1, busy, batch.Restarting, true},
		{"ToAborting enters Aborting whatever the pods", ToAborting, batch.Pending, oneTask(3, 3), 0, busy, batch.Aborting, true},
		{"ToCompleting enters Completing whatever the pods", ToCompleting, batch.Running, oneTask(3, 3), 0, busy, batch.Completing, true},
		{"ToTerminating enters Terminating whatever the pods", ToTerminating, batch.Running, oneTask(3, 3), 0, busy, batch.Terminating, true},
	})
}

func TestSettlePendingRule(t *testing.T) {
	runSettle(t, []settleRow{
		{"Running once minAvailable ≤ running+succeeded+failed", PendingRule, batch.Pending, oneTask(3, 3), 0,
			Counts{Running: 2, Succeeded: 1}, batch.Running, true},
		{"failed pods count as started", PendingRule, batch.Pending, oneTask(3, 3), 0,
			Counts{Running: 1, Succeeded: 1, Failed: 1}, batch.Running, true},
		{"stays Pending below minAvailable", PendingRule, batch.Pending, oneTask(3, 3), 0,
			Counts{Running: 2, Pending: 1}, batch.Pending, false},
		{"pending, unknown and terminating pods do not count", PendingRule, batch.Pending, oneTask(3, 1), 0,
			Counts{Pending: 1, Unknown: 1, Terminating: 1}, batch.Pending, false},
		{"minAvailable 0 runs at once", PendingRule, batch.Pending, oneTask(3, 0), 0,
			Counts{}, batch.Running, true},
	})
}

func TestSettleRunningRules(t *testing.T) {
	twoTasks := func(minAvailable int32, masterMin, workerMin *int32) Spec {
		return Spec{MinAvailable: minAvailable, MaxRetry: 3, Tasks: []Task{
			{Name: "master", Replicas: 1, MinAvailable: masterMin},
			{Name: "worker", Replicas: 2, MinAvailable: workerMin},
		}}
	}
	withMinSuccess := func(s Spec, n int32) Spec { s.MinSuccess = i32(n); return s }
	runSettle(t, []settleRow{
		{"total replicas 0 keeps the phase (scaled to zero)", RunningRule, batch.Running,
			Spec{MinAvailable: 0, Tasks: []Task{{Name: "worker", Replicas: 0}}}, 0, Counts{}, batch.Running, false},
		{"succeeded ≥ minSuccess completes early", RunningRule, batch.Running,
			withMinSuccess(oneTask(5, 1), 3), 0, Counts{Succeeded: 3, Running: 2}, batch.Completed, true},
		{"minSuccess is checked before the all-finished verdict", RunningRule, batch.Running,
			withMinSuccess(twoTasks(3, i32(1), i32(2)), 1), 0,
			Counts{Succeeded: 1, Failed: 2, TaskSucceeded: map[string]int32{"master": 1, "worker": 0}}, batch.Completed, true},
		{"all finished, a task below its minAvailable fails the job", RunningRule, batch.Running,
			twoTasks(3, i32(1), i32(2)), 0,
			Counts{Succeeded: 2, Failed: 1, TaskSucceeded: map[string]int32{"master": 1, "worker": 1}}, batch.Failed, true},
		{"all finished, task minAvailable ignored when job minAvailable < their sum", RunningRule, batch.Running,
			twoTasks(2, i32(1), i32(2)), 0,
			Counts{Succeeded: 2, Failed: 1, TaskSucceeded: map[string]int32{"master": 1, "worker": 1}}, batch.Completed, true},
		{"all finished, a task without minAvailable is not checked", RunningRule, batch.Running,
			twoTasks(3, i32(1), nil), 0,
			Counts{Succeeded: 3, TaskSucceeded: map[string]int32{"master": 1, "worker": 2}}, batch.Completed, true},
		{"all finished, a task with no counted pods is not checked", RunningRule, batch.Running,
			twoTasks(3, i32(1), i32(2)), 0,
			Counts{Succeeded: 3, TaskSucceeded: map[string]int32{"worker": 2}}, batch.Completed, true},
		{"all finished, succeeded < minSuccess fails", RunningRule, batch.Running,
			withMinSuccess(oneTask(5, 5), 3), 0, Counts{Succeeded: 2, Failed: 3}, batch.Failed, true},
		{"all finished, succeeded ≥ minAvailable completes", RunningRule, batch.Running,
			oneTask(3, 2), 0, Counts{Succeeded: 2, Failed: 1}, batch.Completed, true},
		{"all finished, succeeded < minAvailable fails", RunningRule, batch.Running,
			oneTask(3, 3), 0, Counts{Succeeded: 1, Failed: 2}, batch.Failed, true},
		{"finished means succeeded+failed = replicas exactly", RunningRule, batch.Running,
			oneTask(3, 1), 0, Counts{Succeeded: 4}, batch.Running, false},
		{"pending > replicas − minAvailable falls back to Pending", RunningRule, batch.Running,
			oneTask(5, 3), 0, Counts{Pending: 3}, batch.Pending, true},
		{"pending = replicas − minAvailable keeps Running", RunningRule, batch.Running,
			oneTask(5, 3), 0, Counts{Running: 3, Pending: 2}, batch.Running, false},
		{"still running keeps Running", RunningRule, batch.Running,
			oneTask(5, 3), 0, Counts{Running: 4, Succeeded: 1}, batch.Running, false},
	})
}

func TestSettleRestartingRule(t *testing.T) {
	spec := Spec{MinAvailable: 2, MaxRetry: 3, Tasks: []Task{{Name: "worker", Replicas: 3}}}
	runSettle(t, []settleRow{
		{"retryCount ≥ maxRetry fails", RestartingRule, batch.Restarting, spec, 3, Counts{}, batch.Failed, true},
		{"retries are checked before the pods", RestartingRule, batch.Restarting, spec, 4, Counts{Terminating: 3}, batch.Failed, true},
		{"replicas − terminating ≥ minAvailable returns to Pending", RestartingRule, batch.Restarting, spec, 1,
			Counts{Terminating: 1}, batch.Pending, true},
		{"too many pods still terminating stays Restarting", RestartingRule, batch.Restarting, spec, 1,
			Counts{Terminating: 2}, batch.Restarting, false},
	})
}

func TestSettleDrainRules(t *testing.T) {
	spec := oneTask(3, 3)
	rules := []struct {
		rule    Rule
		current batch.JobPhase
		final   batch.JobPhase
	}{
		{AbortingRule, batch.Aborting, batch.Aborted},
		{CompletingRule, batch.Completing, batch.Completed},
		{TerminatingRule, batch.Terminating, batch.Terminated},
	}
	for _, r := range rules {
		runSettle(t, []settleRow{
			{string(r.current) + " stays while pods terminate", r.rule, r.current, spec, 0, Counts{Terminating: 2}, r.current, false},
			{string(r.current) + " stays while pods pend", r.rule, r.current, spec, 0, Counts{Pending: 1}, r.current, false},
			{string(r.current) + " stays while pods run", r.rule, r.current, spec, 0, Counts{Running: 1}, r.current, false},
			{string(r.current) + " ends once drained, finished pods kept", r.rule, r.current, spec, 0,
				Counts{Succeeded: 2, Failed: 1}, r.final, true},
			{string(r.current) + " ends despite unknown pods", r.rule, r.current, spec, 0, Counts{Unknown: 1}, r.final, true},
		})
	}
}
