package state

import (
	"testing"

	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
)

// allActions are the actions a Job request can carry, the internal ones included.
var allActions = []bus.Action{
	bus.AbortJobAction, bus.RestartJobAction, bus.RestartTaskAction, bus.RestartPodAction,
	bus.RestartPartitionAction, bus.TerminateJobAction, bus.CompleteJobAction, bus.ResumeJobAction,
	bus.SyncJobAction, bus.EnqueueAction, bus.SyncQueueAction, bus.OpenQueueAction, bus.CloseQueueAction,
}

// syncLike are actions Pending and Running have no case for: they fall through to a sync.
var syncLike = []bus.Action{bus.ResumeJobAction, bus.SyncJobAction, bus.EnqueueAction, bus.SyncQueueAction}

var allPhases = []batch.JobPhase{
	batch.Pending, batch.Running, batch.Restarting, batch.Aborting, batch.Aborted,
	batch.Completing, batch.Completed, batch.Terminating, batch.Terminated, batch.Failed,
}

// notLastRetry is a job far from its retry limit, so a kill-all stays a kill-all.
func notLastRetry(phase batch.JobPhase, action bus.Action) Input {
	return Input{Phase: phase, Action: action, RetryCount: 0, Spec: Spec{MaxRetry: 3}}
}

type planRow struct {
	name   string
	phase  batch.JobPhase
	action bus.Action
	want   Step
}

// transitionTable is VOLCANO-BEHAVIOUR.md's table, one row per phase and action, checked against
// pkg/controllers/job/state/*.go.
func transitionTable() []planRow {
	var rows []planRow
	add := func(name string, phase batch.JobPhase, action bus.Action, want Step) {
		rows = append(rows, planRow{string(phase) + "/" + string(action) + ": " + name, phase, action, want})
	}
	for _, phase := range []batch.JobPhase{batch.Pending, batch.Running} {
		add("kill all → Restarting, retry+1, version+1", phase, bus.RestartJobAction,
			Step{Kill: KillAll, BumpRetry: true, BumpVersion: true, Then: ToRestarting})
		add("kill the task → Restarting, retry+1, version kept", phase, bus.RestartTaskAction,
			Step{Kill: KillTask, BumpRetry: true, Then: ToRestarting})
		add("kill the pod → Restarting, retry+1, version kept", phase, bus.RestartPodAction,
			Step{Kill: KillPod, BumpRetry: true, Then: ToRestarting})
		add("kill the partition → Restarting, retry+1, version kept", phase, bus.RestartPartitionAction,
			Step{Kill: KillPartition, BumpRetry: true, Then: ToRestarting})
		add("soft kill → Aborting", phase, bus.AbortJobAction,
			Step{Kill: KillSoft, BumpVersion: true, Then: ToAborting})
		add("soft kill → Completing", phase, bus.CompleteJobAction,
			Step{Kill: KillSoft, BumpVersion: true, Then: ToCompleting})
		add("soft kill → Terminating", phase, bus.TerminateJobAction,
			Step{Kill: KillSoft, BumpVersion: true, Then: ToTerminating})
	}
	for _, action := range syncLike {
		add("anything else syncs, then the pending rule", batch.Pending, action, Step{Sync: true, Then: PendingRule})
		add("anything else syncs, then the running rules", batch.Running, action, Step{Sync: true, Then: RunningRule})
	}

	add("SyncJob syncs, then the restarting rule", batch.Restarting, bus.SyncJobAction,
		Step{Sync: true, Then: RestartingRule})
	add("kill the task, then the restarting rule", batch.Restarting, bus.RestartTaskAction,
		Step{Kill: KillTask, Then: RestartingRule})
	add("kill the pod, then the restarting rule", batch.Restarting, bus.RestartPodAction,
		Step{Kill: KillPod, Then: RestartingRule})
	add("kill the partition, then the restarting rule", batch.Restarting, bus.RestartPartitionAction,
		Step{Kill: KillPartition, Then: RestartingRule})
	for _, action := range []bus.Action{bus.RestartJobAction, bus.AbortJobAction, bus.TerminateJobAction,
		bus.CompleteJobAction, bus.ResumeJobAction, bus.EnqueueAction} {
		add("anything else kills all (no retry+1), then the restarting rule", batch.Restarting, action,
			Step{Kill: KillAll, BumpVersion: true, Then: RestartingRule})
	}

	for _, phase := range []batch.JobPhase{batch.Aborting, batch.Aborted} {
		add("ResumeJob: soft kill → Restarting, retry+1", phase, bus.ResumeJobAction,
			Step{Kill: KillSoft, BumpRetry: true, BumpVersion: true, Then: ToRestarting})
	}
	for _, action := range allActions {
		if action == bus.ResumeJobAction {
			continue
		}
		add("anything else soft kills, then Aborted once drained", batch.Aborting, action,
			Step{Kill: KillSoft, BumpVersion: true, Then: AbortingRule})
		add("anything else soft kills, phase kept", batch.Aborted, action,
			Step{Kill: KillSoft, BumpVersion: true, Then: Keep})
	}
	for _, action := range allActions {
		add("any action soft kills, then Completed once drained", batch.Completing, action,
			Step{Kill: KillSoft, BumpVersion: true, Then: CompletingRule})
		add("any action soft kills, then Terminated once drained", batch.Terminating, action,
			Step{Kill: KillSoft, BumpVersion: true, Then: TerminatingRule})
		for _, phase := range []batch.JobPhase{batch.Completed, batch.Terminated, batch.Failed} {
			add("finished: any action soft kills, phase kept", phase, action,
				Step{Kill: KillSoft, BumpVersion: true, Then: Keep})
		}
	}
	return rows
}

func TestPlanFollowsVolcanosTransitionTable(t *testing.T) {
	for _, row := range transitionTable() {
		t.Run(row.name, func(t *testing.T) {
			if got := Plan(notLastRetry(row.phase, row.action)); got != row.want {
				t.Errorf("Plan = %+v, want %+v", got, row.want)
			}
		})
	}
}

func TestPlanTreatsEmptyAndUnknownPhasesAsPending(t *testing.T) {
	for _, phase := range []batch.JobPhase{"", "Inqueue", "Bogus"} {
		for _, action := range allActions {
			got := Plan(notLastRetry(phase, action))
			want := Plan(notLastRetry(batch.Pending, action))
			if got != want {
				t.Errorf("phase %q, %s: Plan = %+v, want Pending's %+v", phase, action, got, want)
			}
		}
	}
}

func TestPlanKeepsFinishedPodsOnTheLastRetry(t *testing.T) {
	// killJob keeps Succeeded and Failed pods once retryCount >= maxRetry-1, whatever was asked.
	rows := []struct {
		name       string
		phase      batch.JobPhase
		action     bus.Action
		retryCount int32
		maxRetry   int32
		want       Kill
	}{
		{"Running/RestartJob before the last retry kills all", batch.Running, bus.RestartJobAction, 1, 3, KillAll},
		{"Running/RestartJob at the last retry kills soft", batch.Running, bus.RestartJobAction, 2, 3, KillSoft},
		{"Pending/RestartJob past the last retry kills soft", batch.Pending, bus.RestartJobAction, 5, 3, KillSoft},
		{"Restarting/RestartJob at the last retry kills soft", batch.Restarting, bus.RestartJobAction, 3, 3, KillSoft},
		{"maxRetry 1: the first restart is the last", batch.Running, bus.RestartJobAction, 0, 1, KillSoft},
		{"targeted kills ignore the last retry", batch.Running, bus.RestartTaskAction, 2, 3, KillTask},
		{"soft kills stay soft", batch.Running, bus.AbortJobAction, 0, 3, KillSoft},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			got := Plan(Input{Phase: row.phase, Action: row.action, RetryCount: row.retryCount, Spec: Spec{MaxRetry: row.maxRetry}})
			if got.Kill != row.want {
				t.Errorf("Kill = %s, want %s", got.Kill, row.want)
			}
			if got.BumpVersion != got.Kill.Full() {
				t.Errorf("BumpVersion = %v for a %s kill", got.BumpVersion, got.Kill)
			}
		})
	}
}

func TestPlanSyncsADrainedRestartingJobInsteadOfKillingNothing(t *testing.T) {
	for _, action := range []bus.Action{bus.RestartJobAction, bus.AbortJobAction, bus.ResumeJobAction} {
		in := notLastRetry(batch.Restarting, action)
		in.Drained = true
		want := Step{Sync: true, Then: RestartingRule}
		if got := Plan(in); got != want {
			t.Errorf("Restarting/%s, drained: Plan = %+v, want %+v", action, got, want)
		}
	}
	// Drained changes nothing outside the default branch of Restarting.
	for _, phase := range allPhases {
		for _, action := range allActions {
			if phase == batch.Restarting {
				continue
			}
			in := notLastRetry(phase, action)
			plain := Plan(in)
			in.Drained = true
			if got := Plan(in); got != plain {
				t.Errorf("%s/%s: Drained changed the plan from %+v to %+v", phase, action, plain, got)
			}
		}
	}
	in := notLastRetry(batch.Restarting, bus.RestartPodAction)
	in.Drained = true
	if got := Plan(in); got.Kill != KillPod {
		t.Errorf("Restarting/RestartPod, drained: Kill = %s, want pod", got.Kill)
	}
}

// A restart's full kill cut short (Unfinished) goes on at the next SyncJob in Restarting, where
// a Job whose kill is done syncs; Unfinished changes nothing else.
func TestPlanFinishesACutShortRestart(t *testing.T) {
	in := notLastRetry(batch.Restarting, bus.SyncJobAction)
	in.Unfinished = true
	if got, want := Plan(in), (Step{Kill: KillAll, BumpVersion: true, Then: RestartingRule}); got != want {
		t.Errorf("Restarting/SyncJob, unfinished: Plan = %+v, want %+v", got, want)
	}
	for _, phase := range allPhases {
		for _, action := range allActions {
			if phase == batch.Restarting && action == bus.SyncJobAction {
				continue
			}
			in := notLastRetry(phase, action)
			plain := Plan(in)
			in.Unfinished = true
			if got := Plan(in); got != plain {
				t.Errorf("%s/%s: Unfinished changed the plan from %+v to %+v", phase, action, plain, got)
			}
		}
	}
}

func TestPlanInvariants(t *testing.T) {
	for _, phase := range append(allPhases, "") {
		for _, action := range allActions {
			for _, retry := range []int32{0, 2, 3} {
				s := Plan(Input{Phase: phase, Action: action, RetryCount: retry, Spec: Spec{MaxRetry: 3}})
				if s.Sync && s.Kill != KillNone {
					t.Errorf("%s/%s: both syncs and kills (%s)", phase, action, s.Kill)
				}
				if !s.Sync && s.Kill == KillNone {
					t.Errorf("%s/%s: does nothing to the pods", phase, action)
				}
				if s.BumpVersion != s.Kill.Full() {
					t.Errorf("%s/%s: BumpVersion %v with a %s kill", phase, action, s.BumpVersion, s.Kill)
				}
				if s.BumpRetry && s.Then != ToRestarting {
					t.Errorf("%s/%s: retry+1 without entering Restarting", phase, action)
				}
			}
		}
	}
}

// A sync that ends a Job runs the final phase's kill at once, with the phase
// fixed: the same kill and version bump Plan gives that phase on the next
// look, and nothing for any other settlement.
func TestEnding(t *testing.T) {
	for _, tc := range []struct {
		current, settled batch.JobPhase
		set              bool
		want             Step
		ok               bool
	}{
		{batch.Running, batch.Completed, true, Step{Kill: KillSoft, BumpVersion: true, Then: ToCompleted}, true},
		{batch.Running, batch.Failed, true, Step{Kill: KillSoft, BumpVersion: true, Then: ToFailed}, true},
		{batch.Restarting, batch.Failed, true, Step{Kill: KillSoft, BumpVersion: true, Then: ToFailed}, true},
		{batch.Pending, batch.Running, true, Step{}, false},
		{batch.Running, batch.Pending, true, Step{}, false},
		{batch.Completed, batch.Completed, true, Step{}, false},
		{batch.Running, batch.Running, false, Step{}, false},
	} {
		got, ok := Ending(tc.current, tc.settled, tc.set)
		if ok != tc.ok || got != tc.want {
			t.Errorf("Ending(%s, %s, %v) = %+v, %v; want %+v, %v", tc.current, tc.settled, tc.set, got, ok, tc.want, tc.ok)
		}
		if !ok {
			continue
		}
		next := Plan(Input{Phase: tc.settled, Action: bus.SyncJobAction})
		if got.Kill != next.Kill || got.BumpVersion != next.BumpVersion {
			t.Errorf("Ending into %s kills %v (version %v); the phase's own plan kills %v (version %v)",
				tc.settled, got.Kill, got.BumpVersion, next.Kill, next.BumpVersion)
		}
		if phase, set := got.Then.Settle(tc.current, Spec{}, 0, Counts{}); !set || phase != tc.settled {
			t.Errorf("Ending's rule settles %s (%v), want %s", phase, set, tc.settled)
		}
	}
}
