package state

import (
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
)

// Step is the first half of a transition: what to do to the Job's pods, decided from its phase and
// the action alone, before anything is known of how the pods will end up.
type Step struct {
	Kill Kill
	// Sync creates the missing pods and deletes the surplus ones (Volcano's syncJob).
	Sync bool
	// BumpRetry increments status.retryCount in the status write that follows the kill.
	BumpRetry bool
	// BumpVersion increments status.version: every full kill does, and nothing else.
	BumpVersion bool
	// Then is the rule that settles the phase from the counts after the kill or sync.
	Then Rule
}

// Plan decides the Step for in.Phase and in.Action: Volcano's transition table. It reads
// in.RetryCount and in.Spec.MaxRetry for the last-retry rule and in.Drained for Restarting;
// it ignores in.Counts.
func Plan(in Input) Step {
	s := planFor(Normalize(in.Phase), in.Action, in.Drained, in.Unfinished)
	if s.Kill == KillAll && LastRetry(in.RetryCount, in.Spec.MaxRetry) {
		s.Kill = KillSoft
	}
	s.BumpVersion = s.Kill.Full()
	return s
}

// Ending is the step that ends a Job within the reconcile whose sync settled it. Volcano writes
// Completed or Failed, and on its next look at the Job runs the kill of that final phase
// (finished pods kept, the others and the PodGroup deleted) and writes the status again for the
// version the kill bumps. Ending is that kill with the settled phase fixed, so that the phase
// and the version go out in one status write; the status at rest is the same. ok is false
// unless the sync moved the Job into Completed or Failed.
func Ending(current, settled batch.JobPhase, set bool) (step Step, ok bool) {
	if !set || settled == current {
		return Step{}, false
	}
	switch settled {
	case batch.Completed:
		step.Then = ToCompleted
	case batch.Failed:
		step.Then = ToFailed
	default:
		return Step{}, false
	}
	final := planFor(settled, bus.SyncJobAction, false, false)
	step.Kill, step.BumpVersion = final.Kill, final.Kill.Full()
	return step, true
}

func planFor(phase batch.JobPhase, action bus.Action, drained, unfinished bool) Step {
	switch phase {
	case batch.Pending, batch.Running:
		return planActive(phase, action)
	case batch.Restarting:
		switch action {
		case bus.SyncJobAction:
			if unfinished {
				return Step{Kill: KillAll, Then: RestartingRule}
			}
			return Step{Sync: true, Then: RestartingRule}
		case bus.RestartTaskAction, bus.RestartPodAction, bus.RestartPartitionAction:
			return Step{Kill: targetOf(action), Then: RestartingRule}
		}
		if drained {
			// Nothing is left to kill; a full kill would only bump the version and delete the
			// PodGroup the restart just recreated, which wedges the job. Volcano's newest source
			// syncs here too.
			return Step{Sync: true, Then: RestartingRule}
		}
		// Every other action, AbortJob and TerminateJob included, restarts the job again: a
		// restart in progress is not interrupted.
		return Step{Kill: KillAll, Then: RestartingRule}
	case batch.Aborting:
		if action == bus.ResumeJobAction {
			return Step{Kill: KillSoft, BumpRetry: true, Then: ToRestarting}
		}
		return Step{Kill: KillSoft, Then: AbortingRule}
	case batch.Aborted:
		if action == bus.ResumeJobAction {
			return Step{Kill: KillSoft, BumpRetry: true, Then: ToRestarting}
		}
		return Step{Kill: KillSoft, Then: Keep}
	case batch.Completing:
		return Step{Kill: KillSoft, Then: CompletingRule}
	case batch.Terminating:
		return Step{Kill: KillSoft, Then: TerminatingRule}
	}
	// Completed, Terminated and Failed are final: whatever comes, only stray pods are cleaned up.
	return Step{Kill: KillSoft, Then: Keep}
}

// planActive is the table for Pending and Running, which differ only in the rule after a sync.
func planActive(phase batch.JobPhase, action bus.Action) Step {
	switch action {
	case bus.RestartJobAction:
		return Step{Kill: KillAll, BumpRetry: true, Then: ToRestarting}
	case bus.RestartTaskAction, bus.RestartPodAction, bus.RestartPartitionAction:
		return Step{Kill: targetOf(action), BumpRetry: true, Then: ToRestarting}
	case bus.AbortJobAction:
		return Step{Kill: KillSoft, Then: ToAborting}
	case bus.CompleteJobAction:
		return Step{Kill: KillSoft, Then: ToCompleting}
	case bus.TerminateJobAction:
		return Step{Kill: KillSoft, Then: ToTerminating}
	}
	if phase == batch.Running {
		return Step{Sync: true, Then: RunningRule}
	}
	return Step{Sync: true, Then: PendingRule}
}

func targetOf(action bus.Action) Kill {
	switch action {
	case bus.RestartTaskAction:
		return KillTask
	case bus.RestartPodAction:
		return KillPod
	case bus.RestartPartitionAction:
		return KillPartition
	}
	return KillNone
}

// Normalize maps a Job's phase to the state Volcano runs it in: an empty or unknown phase is
// Pending.
func Normalize(phase batch.JobPhase) batch.JobPhase {
	switch phase {
	case batch.Pending, batch.Running, batch.Restarting, batch.Aborting, batch.Aborted,
		batch.Completing, batch.Completed, batch.Terminating, batch.Terminated, batch.Failed:
		return phase
	}
	return batch.Pending
}
