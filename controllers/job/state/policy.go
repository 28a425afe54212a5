package state

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
)

// Request is one thing that happened to a Job, as the controller's handlers report it.
type Request struct {
	Event bus.Event
	// Action is set when the request names its action itself, as a Command does.
	Action   bus.Action
	TaskName string
	PodName  string
	// ExitCode is the exit code of the pod's first container, set for PodFailed.
	ExitCode int32
	// JobVersion is the job version the pod was created for (its volcano.sh/job-version).
	JobVersion int32
	// JobUID is the UID of the Job the pod belongs to; empty when not known.
	JobUID types.UID
}

// Reason says which of Volcano's policy rules chose an action.
type Reason uint8

const (
	// ReasonExplicit: the request named its action (a Command).
	ReasonExplicit Reason = iota
	// ReasonInternalEvent: OutOfSync, CommandIssued and PodRunning never trigger a policy.
	ReasonInternalEvent
	// ReasonOtherJob: the request is for an earlier Job of the same name (another UID).
	ReasonOtherJob
	// ReasonStaleVersion: the request comes from a pod of an older job version.
	ReasonStaleVersion
	// ReasonTaskPolicy: a policy of the request's task matched.
	ReasonTaskPolicy
	// ReasonJobPolicy: a job-level policy matched.
	ReasonJobPolicy
	// ReasonNoPolicy: nothing matched.
	ReasonNoPolicy
)

// Choice is the action a request leads to.
type Choice struct {
	Action bus.Action
	// Timeout is the matched policy's timeout: wait this long before running the action. Volcano
	// drops the waiting action when the pod recovers (runs again, or stops pending) or when an
	// action of the same scope (job, task, pod, partition) runs first. Zero: run it now.
	Timeout time.Duration
	Reason  Reason
}

// ApplyPolicies chooses the action for req, with Volcano's precedence: the request's own action;
// SyncJob for internal events, for another Job's UID and for an older job version; then the
// policies of the request's task, then the Job's, first match winning; else SyncJob.
func ApplyPolicies(job *batch.Job, req Request) Choice {
	if req.Action != "" {
		return Choice{Action: req.Action, Reason: ReasonExplicit}
	}
	if internalEvent(req.Event) {
		return Choice{Action: bus.SyncJobAction, Reason: ReasonInternalEvent}
	}
	if job == nil {
		return Choice{Action: bus.SyncJobAction, Reason: ReasonNoPolicy}
	}
	if req.JobUID != "" && req.JobUID != job.UID {
		return Choice{Action: bus.SyncJobAction, Reason: ReasonOtherJob}
	}
	if req.JobVersion < job.Status.Version {
		return Choice{Action: bus.SyncJobAction, Reason: ReasonStaleVersion}
	}
	if req.TaskName != "" {
		for _, task := range job.Spec.Tasks {
			if task.Name != req.TaskName {
				continue
			}
			if p, ok := firstMatch(task.Policies, req); ok {
				return Choice{Action: p.Action, Timeout: timeoutOf(p), Reason: ReasonTaskPolicy}
			}
			break
		}
	}
	if p, ok := firstMatch(job.Spec.Policies, req); ok {
		return Choice{Action: p.Action, Timeout: timeoutOf(p), Reason: ReasonJobPolicy}
	}
	return Choice{Action: bus.SyncJobAction, Reason: ReasonNoPolicy}
}

// internalEvent reports events the controller raises for itself, which users may not write
// policies for. JobUpdated is not among them: Volcano lets policies name it.
func internalEvent(e bus.Event) bool {
	switch e {
	case bus.OutOfSyncEvent, bus.CommandIssuedEvent, bus.PodRunningEvent:
		return true
	}
	return false
}

func firstMatch(policies []batch.LifecyclePolicy, req Request) (batch.LifecyclePolicy, bool) {
	for _, p := range policies {
		if matchesEvent(p, req.Event) || matchesExitCode(p, req.ExitCode) {
			return p, true
		}
	}
	return batch.LifecyclePolicy{}, false
}

// matchesEvent matches the request's event against the policy's events: the deprecated singular
// Event counts as one more entry of Events, and * matches any event. A pod merely pending is no
// failure: PodPending matches only a policy that says how long to wait.
func matchesEvent(p batch.LifecyclePolicy, event bus.Event) bool {
	if event == "" {
		return false
	}
	if event == bus.PodPendingEvent && p.Timeout == nil {
		return false
	}
	if p.Event != "" && (p.Event == event || p.Event == bus.AnyEvent) {
		return true
	}
	for _, e := range p.Events {
		if e == event || e == bus.AnyEvent {
			return true
		}
	}
	return false
}

// matchesExitCode matches a failed container's exit code. Exit code 0 is success, not a failure
// to act on: a policy naming it never matches (Volcano's webhook refuses such a policy).
func matchesExitCode(p batch.LifecyclePolicy, code int32) bool {
	return p.ExitCode != nil && *p.ExitCode != 0 && *p.ExitCode == code
}

func timeoutOf(p batch.LifecyclePolicy) time.Duration {
	if p.Timeout == nil || p.Timeout.Duration < 0 {
		return 0
	}
	return p.Timeout.Duration
}

func (r Reason) String() string {
	switch r {
	case ReasonExplicit:
		return "explicit action"
	case ReasonInternalEvent:
		return "internal event"
	case ReasonOtherJob:
		return "another job's UID"
	case ReasonStaleVersion:
		return "older job version"
	case ReasonTaskPolicy:
		return "task policy"
	case ReasonJobPolicy:
		return "job policy"
	case ReasonNoPolicy:
		return "no policy"
	}
	return "invalid"
}
