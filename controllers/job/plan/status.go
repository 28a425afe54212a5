package plan

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/controllers/job/state"
	"github.com/ringfire/ringfire/controllers/kit"
)

// StatusInput is what the next status of a Job is computed from.
type StatusInput struct {
	// Job is the Job as read: its status is the one the next replaces.
	Job *batch.Job
	// Controlled is the next status.controlledResources (the plugins' marks).
	Controlled map[string]string
	Step       state.Step
	Spec       state.Spec
	// Counts are the pods after the step's kill or sync.
	Counts Counts
	Now    time.Time
	// Settled, when set, is the phase the step's rule settles on Counts, settled already (a
	// sync's, for state.Ending): it is not asked again.
	Settled *Settled
}

// Settled is a phase a rule settled (state.Rule.Settle): the phase, and whether the rule set it.
type Settled struct {
	Phase batch.JobPhase
	Set   bool
}

// StatusPlan is the status a reconcile leads to.
type StatusPlan struct {
	// Write reports that Next differs from the status read in more than the running duration
	// (which grows by itself: it goes out with the next write that changes anything else, and
	// at the end it is fixed at the final transition).
	Write bool
	Next  batch.JobStatus
	// CountsOnly reports that Next differs in nothing but the pod counts and the running
	// duration: a change the controller may hold back and merge into a later write.
	CountsOnly bool
	// Transition reports that Next carries a new phase, Phase; At is its time.
	Transition bool
	Phase      batch.JobPhase
	At         time.Time
	// TTL, when set, is how long the finished Job has left before its TTL deletes it (0: now).
	TTL *time.Duration
	// Unreachable, when set, is the MinAvailableUnreachable message to tell once the status
	// is written.
	Unreachable string
}

// Status settles the phase from the counts and computes the status that follows.
func Status(in StatusInput) StatusPlan {
	job, step, counts := in.Job, in.Step, in.Counts
	st := job.Status.DeepCopy()
	if st.State.Reason == kit.ReasonQuarantined {
		// Reconciled again: the quarantine the replica wrote here is over.
		st.State.Reason, st.State.Message = "", ""
	}
	st.ControlledResources = in.Controlled
	// A status is the user's to forge: a count at int32's bound stays there, never wraps.
	if step.BumpRetry {
		st.RetryCount = state.SumInt32(st.RetryCount, 1)
	}
	if step.BumpVersion {
		st.Version = state.SumInt32(st.Version, 1)
	}
	current := state.Normalize(job.Status.State.Phase)
	var phase batch.JobPhase
	var set bool
	if in.Settled != nil && !step.BumpRetry {
		phase, set = in.Settled.Phase, in.Settled.Set
	} else {
		phase, set = step.Then.Settle(current, in.Spec, st.RetryCount, counts.Counts)
	}
	st.Pending, st.Running, st.Succeeded, st.Failed = counts.Pending, counts.Running, counts.Succeeded, counts.Failed
	st.Unknown, st.Terminating = counts.Unknown, counts.Terminating
	st.MinAvailable = job.Spec.MinAvailable
	st.TaskStatusCount = counts.Tasks
	now := nowOf(in.Now) // as the API server stores it: the next look computes the same durations
	transition := job.Status.State.Phase == "" || (set && phase != current)
	if transition {
		st.State = batch.JobState{Phase: phase, LastTransitionTime: now}
		st.Conditions = append(st.Conditions, batch.JobCondition{Status: phase, LastTransitionTime: &now})
	} else if set && phase == current && st.State.Reason != "" {
		st.State.Reason, st.State.Message = "", "" // a reason from a wait is over
	}
	if step.Sync {
		st.State.Reason, st.State.Message = heldState(st.State.Phase, st.State.Reason, st.State.Message, GangProblem(job))
	}
	if start := RunningSince(st); start != nil && (phase == batch.Running || Finished(phase)) {
		end := now.Time
		if Finished(phase) {
			end = st.State.LastTransitionTime.Time
		}
		st.RunningDuration = &metav1.Duration{Duration: end.Sub(start.Time).Round(time.Second)}
	}
	out := StatusPlan{Next: *st, Transition: transition, Phase: phase, At: now.Time}
	if Finished(st.State.Phase) {
		if left, ok := TTLLeft(&batch.Job{Spec: job.Spec, Status: *st}, in.Now); ok {
			left = max(left, 0)
			out.TTL = &left
		}
	}
	if equality.Semantic.DeepEqual(*st, job.Status) || onlyDurationDiffers(st, &job.Status) {
		return out
	}
	out.Write = true
	out.CountsOnly = OnlyCountsDiffer(st, &job.Status)
	if st.State.Reason == ReasonMinAvailableUnreachable && st.State.Message != job.Status.State.Message {
		// Told once per Job: the message stays in its status while it waits.
		out.Unreachable = st.State.Message
	}
	return out
}

// nowOf is t as the API server stores a time: whole seconds.
func nowOf(t time.Time) metav1.Time { return metav1.NewTime(t).Rfc3339Copy() }

// TTLLeft is how long a finished Job with a TTL has left at now; ok is false for a Job that
// has no TTL or has not finished.
func TTLLeft(job *batch.Job, now time.Time) (time.Duration, bool) {
	if job.Spec.TTLSecondsAfterFinished == nil || !Finished(job.Status.State.Phase) {
		return 0, false
	}
	at := job.Status.State.LastTransitionTime.Add(time.Duration(*job.Spec.TTLSecondsAfterFinished) * time.Second)
	return at.Sub(now), true
}

// Finished reports whether phase is one a Job's TTL runs from.
func Finished(phase batch.JobPhase) bool {
	return phase == batch.Completed || phase == batch.Failed || phase == batch.Terminated
}

// OnlyCountsDiffer reports whether two statuses differ in nothing but the pod counts and the
// running duration: a change a later write can carry.
func OnlyCountsDiffer(a, b *batch.JobStatus) bool {
	x, y := *a, *b
	for _, st := range []*batch.JobStatus{&x, &y} {
		st.Pending, st.Running, st.Succeeded, st.Failed, st.Unknown, st.Terminating = 0, 0, 0, 0, 0, 0
		st.TaskStatusCount, st.RunningDuration = nil, nil
	}
	return equality.Semantic.DeepEqual(x, y)
}

// onlyDurationDiffers reports whether two statuses differ in runningDuration alone.
func onlyDurationDiffers(a, b *batch.JobStatus) bool {
	x := *a
	x.RunningDuration = b.RunningDuration
	return equality.Semantic.DeepEqual(x, *b)
}

// RunningSince is when the Job last started Running, from its conditions.
func RunningSince(st *batch.JobStatus) *metav1.Time {
	for i := len(st.Conditions) - 1; i >= 0; i-- {
		if st.Conditions[i].Status == batch.Running {
			return st.Conditions[i].LastTransitionTime
		}
	}
	return nil
}

// TTL decides a TTL check of the Job at now: delete it (its TTL has passed), or look again
// after the time left; ok is false when the Job has no TTL or has not finished.
func TTL(job *batch.Job, now time.Time) (remove bool, after time.Duration, ok bool) {
	left, ok := TTLLeft(job, now)
	if !ok {
		return false, 0, false
	}
	if left > 0 {
		return false, left, true
	}
	return true, 0, true
}
