package state

import (
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// Rule names how a Job's phase settles once its kill or sync has run. Volcano writes each as the
// status callback it hands to killJob or syncJob; here each is a pure function of the counts
// that kill or sync produced.
type Rule uint8

const (
	// Keep leaves the phase as it is.
	Keep Rule = iota
	// ToRestarting, ToAborting, ToCompleting and ToTerminating move the Job at once.
	ToRestarting
	ToAborting
	ToCompleting
	ToTerminating
	// PendingRule moves a Pending Job to Running once minAvailable pods have started.
	PendingRule
	// RunningRule decides whether a Running Job has completed, failed, or fallen back to Pending.
	RunningRule
	// RestartingRule fails a Job out of retries, else returns it to Pending once enough of its
	// old pods are gone.
	RestartingRule
	// AbortingRule, CompletingRule and TerminatingRule end the Job in Aborted, Completed or
	// Terminated once it has no pending, running or terminating pod left.
	AbortingRule
	CompletingRule
	TerminatingRule
	// ToCompleted and ToFailed end the Job at once: the rules of the step Ending returns.
	ToCompleted
	ToFailed
)

// Settle applies the rule to the counts after the kill or sync. current is the phase the Job was
// in (normalised), retryCount the count after any increment of this step. It returns the next
// phase and whether the rule set one; when it did not, next is current. Volcano stamps
// lastTransitionTime and appends a condition only when a phase was set.
func (r Rule) Settle(current batch.JobPhase, spec Spec, retryCount int32, after Counts) (next batch.JobPhase, set bool) {
	switch r {
	case ToRestarting:
		return batch.Restarting, true
	case ToAborting:
		return batch.Aborting, true
	case ToCompleting:
		return batch.Completing, true
	case ToTerminating:
		return batch.Terminating, true
	case ToCompleted:
		return batch.Completed, true
	case ToFailed:
		return batch.Failed, true
	case PendingRule:
		if spec.MinAvailable <= after.Running+after.Succeeded+after.Failed {
			return batch.Running, true
		}
	case RunningRule:
		if p, ok := settleRunning(spec, after); ok {
			return p, true
		}
	case RestartingRule:
		if retryCount >= spec.MaxRetry {
			return batch.Failed, true
		}
		// Volcano compares with status.minAvailable, which every sync copies from the spec.
		if spec.Replicas()-after.Terminating >= spec.MinAvailable {
			return batch.Pending, true
		}
	case AbortingRule:
		if drained(after) {
			return batch.Aborted, true
		}
	case CompletingRule:
		if drained(after) {
			return batch.Completed, true
		}
	case TerminatingRule:
		if drained(after) {
			return batch.Terminated, true
		}
	}
	return current, false
}

// drained reports that no pod is left pending, running or terminating. Unknown pods do not hold
// the Job back, as in Volcano.
func drained(c Counts) bool { return c.Terminating == 0 && c.Pending == 0 && c.Running == 0 }

// settleRunning is Volcano's running-state callback. Its order matters: minSuccess first, then
// the all-finished verdict, then the fall back to Pending.
func settleRunning(spec Spec, c Counts) (batch.JobPhase, bool) {
	replicas := spec.Replicas()
	if replicas == 0 {
		// Scaled to zero: keep the phase rather than call an empty job finished.
		return "", false
	}
	if spec.MinSuccess != nil && c.Succeeded >= *spec.MinSuccess {
		return batch.Completed, true
	}
	if c.Succeeded+c.Failed == replicas {
		// Per-task minAvailable only counts when the job-level minAvailable covers them all;
		// otherwise the user asked for less than every task's minimum and the tasks may fall short.
		if spec.MinAvailable >= spec.taskMinAvailable() {
			for _, t := range spec.Tasks {
				if t.MinAvailable == nil {
					continue
				}
				if succeeded, counted := c.TaskSucceeded[t.Name]; counted && succeeded < *t.MinAvailable {
					return batch.Failed, true
				}
			}
		}
		switch {
		case spec.MinSuccess != nil && c.Succeeded < *spec.MinSuccess:
			return batch.Failed, true
		case c.Succeeded >= spec.MinAvailable:
			return batch.Completed, true
		default:
			return batch.Failed, true
		}
	}
	// Too few pods could still start to reach minAvailable: the gang is waiting again.
	if c.Pending > replicas-spec.MinAvailable {
		return batch.Pending, true
	}
	return "", false
}

func (r Rule) String() string {
	switch r {
	case Keep:
		return "keep"
	case ToRestarting:
		return "to Restarting"
	case ToAborting:
		return "to Aborting"
	case ToCompleting:
		return "to Completing"
	case ToTerminating:
		return "to Terminating"
	case ToCompleted:
		return "to Completed"
	case ToFailed:
		return "to Failed"
	case PendingRule:
		return "pending rule"
	case RunningRule:
		return "running rule"
	case RestartingRule:
		return "restarting rule"
	case AbortingRule:
		return "aborting rule"
	case CompletingRule:
		return "completing rule"
	case TerminatingRule:
		return "terminating rule"
	}
	return "invalid"
}
