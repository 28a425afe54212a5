package scheduler

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	vcv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/controllers/scheduler/core"
)

// scheduledReason is the reason of the Scheduled condition, as Volcano's
// gang plugin words it.
const scheduledReason = "tasks in gang are ready to be scheduled"

// nextStatus is the PodGroup status a cycle would write: the phase the
// cycle decided with Volcano's two refinements (Unknown, Completed), the pods
// counted by phase, and the conditions. A condition whose type, status,
// reason and message are unchanged keeps its time and transition ID; whether
// the status is written at all is for compare and quiet.due to say.
func nextStatus(g *groupView, gs core.GroupStatus, transitionID string, now metav1.Time) vcv1beta1.PodGroupStatus {
	st := *g.pg.Status.DeepCopy()
	st.Phase = phaseOf(g, gs)
	st.Running, st.Succeeded, st.Failed = g.running, g.succeeded, g.failed
	switch {
	case gs.Unschedulable != nil:
		st.Conditions = setCondition(st.Conditions, vcv1beta1.PodGroupCondition{
			Type: vcv1beta1.PodGroupUnschedulableType, Status: corev1.ConditionTrue,
			Reason: gs.Unschedulable.Reason, Message: gs.Unschedulable.Message,
		}, transitionID, now)
	case gs.Phase == vcv1beta1.PodGroupRunning:
		st.Conditions = removeCondition(st.Conditions, vcv1beta1.PodGroupUnschedulableType)
		st.Conditions = setCondition(st.Conditions, vcv1beta1.PodGroupCondition{
			Type: vcv1beta1.PodGroupScheduled, Status: corev1.ConditionTrue, Reason: scheduledReason,
		}, transitionID, now)
	default: // admitted and waiting for its pods: nothing holds it back
		st.Conditions = removeCondition(st.Conditions, vcv1beta1.PodGroupUnschedulableType)
	}
	return st
}

// phaseOf refines the cycle's phase as Volcano's session does: a gang that
// cannot be completed while some of its pods run is Unknown; a running gang
// whose placed pods have all finished is Completed.
func phaseOf(g *groupView, gs core.GroupStatus) vcv1beta1.PodGroupPhase {
	switch {
	case gs.Unschedulable != nil && g.running > 0:
		return vcv1beta1.PodGroupUnknown
	case gs.Phase == vcv1beta1.PodGroupRunning && gs.Bound == 0 && g.pending == 0 &&
		g.scheduled > 0 && g.scheduled == g.completed:
		return vcv1beta1.PodGroupCompleted
	}
	return gs.Phase
}

// setCondition puts c in place of the condition of its type, stamped with
// now and transitionID, unless an equal one is there already.
func setCondition(conds []vcv1beta1.PodGroupCondition, c vcv1beta1.PodGroupCondition, transitionID string, now metav1.Time) []vcv1beta1.PodGroupCondition {
	c.TransitionID, c.LastTransitionTime = transitionID, now
	for i := range conds {
		if conds[i].Type != c.Type {
			continue
		}
		old := conds[i]
		if old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message {
			return conds
		}
		conds[i] = c
		return conds
	}
	return append(conds, c)
}

func removeCondition(conds []vcv1beta1.PodGroupCondition, t vcv1beta1.PodGroupConditionType) []vcv1beta1.PodGroupCondition {
	out := conds[:0]
	for _, c := range conds {
		if c.Type != t {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
