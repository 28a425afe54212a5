package state

import (
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
)

// Input is everything one transition depends on.
type Input struct {
	// Phase is the Job's status.state.phase; empty or unknown means Pending.
	Phase batch.JobPhase
	// Action is the action to run, after policies (see ApplyPolicies).
	Action bus.Action
	Spec   Spec
	// RetryCount is status.retryCount before this transition.
	RetryCount int32
	// Drained reports that, before acting, the Job had no pod left other than pods already being
	// deleted. Only Restarting reads it; the zero value gives Volcano v1.15's table.
	Drained bool
	// Unfinished reports that a full kill the Job's earlier reconciles began, cut short by the
	// most deletes one reconcile sends, left live pods of an earlier version that it targets:
	// Restarting kills them before anything else, a SyncJob included, rather than syncing
	// around them. Only Restarting reads it.
	Unfinished bool
	// Counts are the pods as the kill or sync left them. Plan ignores them; the Step's rule
	// settles the phase from them.
	Counts Counts
}

// Decision is a whole transition: the Step and the phase it settles in.
type Decision struct {
	Step
	// Phase is the phase after the transition; the current (normalised) phase when unchanged.
	Phase batch.JobPhase
	// PhaseSet reports that the rule set a phase. Volcano then stamps lastTransitionTime and
	// appends a condition.
	PhaseSet bool
	// RetryCount is status.retryCount after the transition.
	RetryCount int32
}

// decide runs Plan and then settles the phase from in.Counts, taken as the counts after the Step.
// A controller that must act between the two calls Plan, acts, then calls Step.Then.Settle with the
// counts its kill or sync produced; decide is the same two calls when those counts are known.
func decide(in Input) Decision {
	step := Plan(in)
	retry := in.RetryCount
	if step.BumpRetry {
		retry = SumInt32(retry, 1) // saturated: a status that says 2147483647 stays there
	}
	phase, set := step.Then.Settle(Normalize(in.Phase), in.Spec, retry, in.Counts)
	return Decision{Step: step, Phase: phase, PhaseSet: set, RetryCount: retry}
}
