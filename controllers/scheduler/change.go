package scheduler

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	vcv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// Whether a PodGroup's next status is worth a write. Every write of a
// PodGroup is a PUT of the whole object (the CRD has no status subresource)
// that every PodGroup informer in the cluster receives, so the scheduler
// writes at once what users and controllers act on, and lets the details
// that move with every pod wait.

// change is how a PodGroup's next status differs from the one read.
type change struct {
	// decisive: the phase (but for Completed), or a condition's type,
	// status or reason. Written at once: the Job controller makes pods on
	// Inqueue and reacts to Unknown, the Queue controller counts phases,
	// users watch them.
	decisive bool
	// completed: Running to Completed, every pod placed has ended. Nothing
	// acts on it: the Job controller deletes a Job's PodGroup as the Job
	// completes (as Volcano's killJob does), and the scheduler reads
	// Completed as Running. So it waits as the counts it comes with do, and
	// most often the PodGroup is gone before it would be written.
	completed bool
	// message: a condition's message alone (a waiting gang's amounts move
	// with every pod that starts or ends). messageSince is the oldest
	// lastTransitionTime of the conditions so changed.
	message      bool
	messageSince time.Time
	// awaitingPods: an Unschedulable condition saying that the gang has too
	// few pods (NotEnoughTasks, NotEnoughPodsOfTask) appeared on a PodGroup
	// that had none. Its pods are most often being made right now: the
	// Job controller creates them once the gang is admitted, and a cycle
	// that runs meanwhile sees some of them (under load, for tens of
	// seconds). Volcano's scheduler never writes this condition (it sets it
	// on a session copy of the job, which it then drops); ringfire writes it
	// once it has held for a while.
	awaitingPods bool
	// counts: running, succeeded or failed, which move with every pod.
	counts bool
}

func (c change) any() bool {
	return c.decisive || c.completed || c.message || c.awaitingPods || c.counts
}

// cause names the weightiest part of the change, for the status writes
// metric: decisive, completed, message, awaiting_pods or counts.
func (c change) cause() string {
	switch {
	case c.decisive:
		return "decisive"
	case c.completed:
		return "completed"
	case c.message:
		return "message"
	case c.awaitingPods:
		return "awaiting_pods"
	}
	return "counts"
}

// compare tells how next differs from old, ignoring the conditions' times
// and transition IDs as Volcano's scheduler does (isPodGroupStatusUpdated,
// pkg/scheduler/framework/job_updater.go): a status that differs in those
// alone is the same status, and is not written. PodGroupStatus has no field
// beyond the five compared.
func compare(old, next vcv1beta1.PodGroupStatus) change {
	c := change{counts: old.Running != next.Running || old.Succeeded != next.Succeeded || old.Failed != next.Failed}
	switch {
	case old.Phase == next.Phase:
	case old.Phase == vcv1beta1.PodGroupRunning && next.Phase == vcv1beta1.PodGroupCompleted:
		c.completed = true
	default:
		c.decisive = true
	}
	for i := range old.Conditions {
		if conditionIn(next.Conditions, old.Conditions[i].Type) == nil {
			c.decisive = true // a condition went
		}
	}
	for i := range next.Conditions {
		n := &next.Conditions[i]
		o := conditionIn(old.Conditions, n.Type)
		switch {
		case o == nil && tooFewPods(n):
			c.awaitingPods = true
		case o == nil || o.Status != n.Status || o.Reason != n.Reason:
			c.decisive = true
		case o.Message != n.Message:
			if !c.message || o.LastTransitionTime.Time.Before(c.messageSince) {
				c.messageSince = o.LastTransitionTime.Time
			}
			c.message = true
		}
	}
	return c
}

// quiet is how long the details of a status are left as written.
type quiet struct {
	// message: a condition whose message alone changed, since its last
	// transition (which the object carries, so it holds across shifts).
	message time.Duration
	// pods: what moves with the gang's pods (its counts, its want of pods,
	// its end) is written once the status has stood still this long: a
	// gang's counts settle once its pods have started, and a Job's
	// PodGroup is deleted soon after its pods have ended.
	pods time.Duration
	// podsAtMost bounds how long it waits after the PodGroup's last write,
	// for a gang whose pods never stand still.
	podsAtMost time.Duration
}

// due reports whether a status that differs from the one read by c is
// written now: a decisive change at once, the details once they have waited
// long enough. lastWrite is when this shift last wrote the PodGroup (or
// began), standing since when the status has been as it is now. A write
// that is due carries every detail as it is now.
func (q quiet) due(c change, now metav1.Time, lastWrite, standing time.Time) bool {
	switch {
	case c.decisive:
		return true
	case c.message && now.Sub(c.messageSince) >= q.message:
		return true
	}
	return (c.completed || c.awaitingPods || c.counts) &&
		(now.Sub(standing) >= q.pods || now.Sub(lastWrite) >= q.podsAtMost)
}

// fingerprint is a status without its conditions' times and transition
// IDs: two statuses of one fingerprint are the same status.
func fingerprint(st vcv1beta1.PodGroupStatus) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d %d %d", st.Phase, st.Running, st.Succeeded, st.Failed)
	for _, c := range st.Conditions {
		fmt.Fprintf(&b, "|%s %s %s %s", c.Type, c.Status, c.Reason, c.Message)
	}
	return b.String()
}

// tooFewPods: the condition says that the gang has too few pods to ever
// be placed whole.
func tooFewPods(c *vcv1beta1.PodGroupCondition) bool {
	return c.Type == vcv1beta1.PodGroupUnschedulableType &&
		(c.Reason == vcv1beta1.NotEnoughPodsReason || c.Reason == vcv1beta1.NotEnoughPodsOfTaskReason)
}

func conditionIn(conds []vcv1beta1.PodGroupCondition, t vcv1beta1.PodGroupConditionType) *vcv1beta1.PodGroupCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}
