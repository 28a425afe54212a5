package queue

import (
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// RootQueue is the top of Volcano's queue hierarchy; it can never be closed.
const RootQueue = "root"

// NextState is the state a queue in state current moves to when action runs, as Volcano's queue
// state machine (pkg/controllers/queue/state) decides it. podGroups is the number of PodGroups
// that name the queue, whatever their phase: a queue closes only once all of them are gone.
// Any action other than OpenQueue and CloseQueue is a sync. An empty state is Open.
//
//	state \ action   OpenQueue   CloseQueue                  sync
//	Open, ""         Open        Closed, or Closing if PGs   Open
//	Closing          Open        Closed, or Closing if PGs   Closed, or Closing if PGs
//	Closed           Open        Closed                      Closed
//	Unknown          Open        Closed, or Closing if PGs   Unknown
//
// A state outside the four keeps itself on a sync, as Volcano's controller refuses to touch it.
func NextState(current scheduling.QueueState, action bus.Action, podGroups int) scheduling.QueueState {
	closing := scheduling.QueueStateClosed
	if podGroups > 0 {
		closing = scheduling.QueueStateClosing
	}
	switch current {
	case "", scheduling.QueueStateOpen, scheduling.QueueStateClosing, scheduling.QueueStateUnknown:
	case scheduling.QueueStateClosed:
		if action == bus.CloseQueueAction {
			return scheduling.QueueStateClosed // closing again never reopens to Closing
		}
	default:
		return current
	}
	switch action {
	case bus.OpenQueueAction:
		return scheduling.QueueStateOpen
	case bus.CloseQueueAction:
		return closing
	}
	switch current {
	case "", scheduling.QueueStateOpen:
		return scheduling.QueueStateOpen
	case scheduling.QueueStateClosing:
		return closing
	}
	return current
}

// Refusal says why action may not run on the named queue, or is empty when it may. Volcano
// refuses to close the root queue of its hierarchy. Closing the default queue is allowed, as in
// Volcano (only deleting it is refused, by its admission webhook).
func Refusal(name string, action bus.Action) string {
	if name == RootQueue && action == bus.CloseQueueAction {
		return "root queue can not be closed"
	}
	return ""
}

// Counts are the PodGroups of a queue by phase. Total counts every PodGroup, a phase outside the
// five included (a PodGroup no scheduler has looked at yet has none).
type Counts struct {
	Pending, Running, Unknown, Inqueue, Completed int32
	Total                                         int
}

// Add counts one PodGroup in phase.
func (c *Counts) Add(phase scheduling.PodGroupPhase) { c.add(phase, 1) }

// add counts one PodGroup in phase in (sign +1) or out (sign -1).
func (c *Counts) add(phase scheduling.PodGroupPhase, sign int) {
	c.Total += sign
	n := int32(sign)
	switch phase {
	case scheduling.PodGroupPending:
		c.Pending += n
	case scheduling.PodGroupRunning:
		c.Running += n
	case scheduling.PodGroupUnknown:
		c.Unknown += n
	case scheduling.PodGroupInqueue:
		c.Inqueue += n
	case scheduling.PodGroupCompleted:
		c.Completed += n
	}
}

// DesiredStatus is the status the controller writes: current with state and the PodGroup counts
// replaced. Every other field (allocated, reservation: the scheduler's) is kept as read.
func DesiredStatus(current scheduling.QueueStatus, state scheduling.QueueState, counts Counts) scheduling.QueueStatus {
	status := *current.DeepCopy()
	status.State = state
	status.Pending, status.Running, status.Unknown = counts.Pending, counts.Running, counts.Unknown
	status.Inqueue, status.Completed = counts.Inqueue, counts.Completed
	return status
}
