package scheduler

import (
	corev1 "k8s.io/api/core/v1"
	vcv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/controllers/kit"
)

// podGroupEvent is an Event the scheduler records on a PodGroup.
type podGroupEvent struct {
	kind, reason, message string
}

// podGroupEvents are the Events of a PodGroup status write, from old (as
// read) to pg (as written). Volcano's scheduler records on every PodGroup,
// every session, Warning Unschedulable while it is Pending, Inqueue or
// Unknown and Normal Scheduled otherwise (RecordJobStatusEvent), and leaves
// the repeats to client-go's correlator. ringfire records the same Events
// once each instead:
//   - Warning Unschedulable when the condition appears, when its reason
//     changes, or when its message says something else, not just other
//     amounts (a waiting gang's message moves with every pod that starts or
//     ends: "cpu idle 15200m" then "cpu idle 14400m" is one story);
//   - Normal Scheduled when the PodGroup starts running.
//
// An admitted gang waiting for its pods has no condition and gets no Event
// (Volcano's says "0/0 tasks in gang unschedulable" every second).
func podGroupEvents(old, pg *vcv1beta1.PodGroup) []podGroupEvent {
	if c := conditionIn(pg.Status.Conditions, vcv1beta1.PodGroupUnschedulableType); c != nil {
		prev := conditionIn(old.Status.Conditions, vcv1beta1.PodGroupUnschedulableType)
		if prev == nil || prev.Reason != c.Reason || kit.Wording(prev.Message) != kit.Wording(c.Message) {
			return []podGroupEvent{{corev1.EventTypeWarning, string(vcv1beta1.PodGroupUnschedulableType), c.Message}}
		}
		return nil
	}
	switch old.Status.Phase {
	case "", vcv1beta1.PodGroupPending, vcv1beta1.PodGroupInqueue:
	default:
		return nil // it ran before
	}
	if pg.Status.Phase == vcv1beta1.PodGroupRunning {
		return []podGroupEvent{{corev1.EventTypeNormal, string(vcv1beta1.PodGroupScheduled), string(vcv1beta1.PodGroupReady)}}
	}
	return nil
}

// announce records the Events of a PodGroup status write.
func (s *shift) announce(old, pg *vcv1beta1.PodGroup) {
	for _, e := range podGroupEvents(old, pg) {
		s.recorder.Event(pg, e.kind, e.reason, e.message)
	}
}
