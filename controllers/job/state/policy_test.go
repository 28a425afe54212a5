package state

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
)

func onEvents(action bus.Action, events ...bus.Event) batch.LifecyclePolicy {
	return batch.LifecyclePolicy{Action: action, Events: events}
}

func onEvent(action bus.Action, event bus.Event) batch.LifecyclePolicy {
	return batch.LifecyclePolicy{Action: action, Event: event}
}

func onExit(action bus.Action, code int32) batch.LifecyclePolicy {
	return batch.LifecyclePolicy{Action: action, ExitCode: i32(code)}
}

func after(p batch.LifecyclePolicy, d time.Duration) batch.LifecyclePolicy {
	p.Timeout = &metav1.Duration{Duration: d}
	return p
}

// policyJob is a job at version 2 whose "worker" task restarts itself on failure and whose job
// policies restart the whole job on failure or eviction and abort on exit code 3.
func policyJob() *batch.Job {
	return &batch.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "j", UID: "uid-1"},
		Spec: batch.JobSpec{
			Policies: []batch.LifecyclePolicy{
				onEvents(bus.RestartJobAction, bus.PodFailedEvent, bus.PodEvictedEvent),
				onExit(bus.AbortJobAction, 3),
			},
			Tasks: []batch.TaskSpec{
				{Name: "master", Replicas: 1},
				{Name: "worker", Replicas: 2, Policies: []batch.LifecyclePolicy{onEvent(bus.RestartTaskAction, bus.PodFailedEvent)}},
			},
		},
		Status: batch.JobStatus{Version: 2},
	}
}

func withJobPolicies(job *batch.Job, policies ...batch.LifecyclePolicy) *batch.Job {
	job.Spec.Policies = policies
	return job
}

func withTaskPolicies(job *batch.Job, task int, policies ...batch.LifecyclePolicy) *batch.Job {
	job.Spec.Tasks[task].Policies = policies
	return job
}

func TestApplyPolicies(t *testing.T) {
	const v = 2 // policyJob's version
	rows := []struct {
		name    string
		job     *batch.Job
		req     Request
		want    bus.Action
		timeout time.Duration
		reason  Reason
	}{
		// Precedence.
		{"explicit action wins over a matching policy", policyJob(),
			Request{Event: bus.PodFailedEvent, Action: bus.AbortJobAction, TaskName: "worker", JobVersion: v},
			bus.AbortJobAction, 0, ReasonExplicit},
		{"explicit action wins over a stale version and another UID", policyJob(),
			Request{Event: bus.CommandIssuedEvent, Action: bus.ResumeJobAction, JobUID: "uid-0"},
			bus.ResumeJobAction, 0, ReasonExplicit},
		{"OutOfSync is internal: SyncJob", withJobPolicies(policyJob(), onEvents(bus.RestartJobAction, bus.AnyEvent)),
			Request{Event: bus.OutOfSyncEvent, JobVersion: v}, bus.SyncJobAction, 0, ReasonInternalEvent},
		{"CommandIssued without an action is internal: SyncJob", withJobPolicies(policyJob(), onEvents(bus.RestartJobAction, bus.AnyEvent)),
			Request{Event: bus.CommandIssuedEvent, JobVersion: v}, bus.SyncJobAction, 0, ReasonInternalEvent},
		{"PodRunning is internal, even under *: SyncJob", withJobPolicies(policyJob(), onEvents(bus.RestartJobAction, bus.AnyEvent)),
			Request{Event: bus.PodRunningEvent, TaskName: "worker", JobVersion: v}, bus.SyncJobAction, 0, ReasonInternalEvent},
		{"JobUpdated is not internal: a * policy takes it", withJobPolicies(policyJob(), onEvents(bus.RestartJobAction, bus.AnyEvent)),
			Request{Event: bus.JobUpdatedEvent, JobVersion: v}, bus.RestartJobAction, 0, ReasonJobPolicy},
		{"another job UID: SyncJob", policyJob(),
			Request{Event: bus.PodFailedEvent, TaskName: "worker", JobVersion: v, JobUID: "uid-0"},
			bus.SyncJobAction, 0, ReasonOtherJob},
		{"same UID is matched normally", policyJob(),
			Request{Event: bus.PodFailedEvent, TaskName: "worker", JobVersion: v, JobUID: "uid-1"},
			bus.RestartTaskAction, 0, ReasonTaskPolicy},
		{"no UID on the request is not checked", policyJob(),
			Request{Event: bus.PodFailedEvent, TaskName: "worker", JobVersion: v},
			bus.RestartTaskAction, 0, ReasonTaskPolicy},
		{"older job version: SyncJob", policyJob(),
			Request{Event: bus.PodFailedEvent, TaskName: "worker", JobVersion: v - 1},
			bus.SyncJobAction, 0, ReasonStaleVersion},
		{"no job version (PodGroup event) is stale once the job was killed", withJobPolicies(policyJob(), onEvent(bus.AbortJobAction, bus.JobUnknownEvent)),
			Request{Event: bus.JobUnknownEvent}, bus.SyncJobAction, 0, ReasonStaleVersion},
		{"a newer job version is matched normally", policyJob(),
			Request{Event: bus.PodEvictedEvent, TaskName: "master", JobVersion: v + 1},
			bus.RestartJobAction, 0, ReasonJobPolicy},

		// Task before job.
		{"task policy before job policy", policyJob(),
			Request{Event: bus.PodFailedEvent, TaskName: "worker", JobVersion: v}, bus.RestartTaskAction, 0, ReasonTaskPolicy},
		{"another task's policies do not apply", policyJob(),
			Request{Event: bus.PodFailedEvent, TaskName: "master", JobVersion: v}, bus.RestartJobAction, 0, ReasonJobPolicy},
		{"task policies that do not match fall through to the job's", policyJob(),
			Request{Event: bus.PodEvictedEvent, TaskName: "worker", JobVersion: v}, bus.RestartJobAction, 0, ReasonJobPolicy},
		{"a request without a task uses the job's policies", policyJob(),
			Request{Event: bus.PodFailedEvent, JobVersion: v}, bus.RestartJobAction, 0, ReasonJobPolicy},
		{"an unknown task uses the job's policies", policyJob(),
			Request{Event: bus.PodFailedEvent, TaskName: "gone", JobVersion: v}, bus.RestartJobAction, 0, ReasonJobPolicy},

		// Matching.
		{"first matching policy wins", withJobPolicies(policyJob(),
			onEvents(bus.TerminateJobAction, bus.PodFailedEvent), onEvents(bus.RestartJobAction, bus.PodFailedEvent)),
			Request{Event: bus.PodFailedEvent, JobVersion: v}, bus.TerminateJobAction, 0, ReasonJobPolicy},
		{"* in events matches any event", withJobPolicies(policyJob(), onEvents(bus.CompleteJobAction, bus.AnyEvent)),
			Request{Event: bus.TaskCompletedEvent, JobVersion: v}, bus.CompleteJobAction, 0, ReasonJobPolicy},
		{"* as the singular event matches any event", withTaskPolicies(policyJob(), 1, onEvent(bus.CompleteJobAction, bus.AnyEvent)),
			Request{Event: bus.TaskFailedEvent, TaskName: "worker", JobVersion: v}, bus.CompleteJobAction, 0, ReasonTaskPolicy},
		{"the deprecated event and the events list both match", withJobPolicies(policyJob(),
			batch.LifecyclePolicy{Action: bus.AbortJobAction, Event: bus.PodEvictedEvent, Events: []bus.Event{bus.TaskFailedEvent}}),
			Request{Event: bus.PodEvictedEvent, JobVersion: v}, bus.AbortJobAction, 0, ReasonJobPolicy},
		{"the events list still matches beside the deprecated event", withJobPolicies(policyJob(),
			batch.LifecyclePolicy{Action: bus.AbortJobAction, Event: bus.PodEvictedEvent, Events: []bus.Event{bus.TaskFailedEvent}}),
			Request{Event: bus.TaskFailedEvent, JobVersion: v}, bus.AbortJobAction, 0, ReasonJobPolicy},
		{"an event policy listed before an exit code policy wins", policyJob(),
			Request{Event: bus.PodFailedEvent, TaskName: "master", ExitCode: 3, JobVersion: v}, bus.RestartJobAction, 0, ReasonJobPolicy},
		{"exit code matches when no event policy does", withJobPolicies(policyJob(), onExit(bus.AbortJobAction, 3)),
			Request{Event: bus.PodFailedEvent, TaskName: "master", ExitCode: 3, JobVersion: v}, bus.AbortJobAction, 0, ReasonJobPolicy},
		{"another exit code does not match", withJobPolicies(policyJob(), onExit(bus.AbortJobAction, 3)),
			Request{Event: bus.PodFailedEvent, ExitCode: 4, JobVersion: v}, bus.SyncJobAction, 0, ReasonNoPolicy},
		{"ringfire: an exitCode 0 policy never matches", withJobPolicies(policyJob(), onExit(bus.AbortJobAction, 0)),
			Request{Event: bus.TaskCompletedEvent, JobVersion: v}, bus.SyncJobAction, 0, ReasonNoPolicy},
		{"a request without an event matches no event policy", withJobPolicies(policyJob(), onEvents(bus.RestartJobAction, bus.AnyEvent)),
			Request{JobVersion: v}, bus.SyncJobAction, 0, ReasonNoPolicy},

		// PodPending and timeouts.
		{"PodPending skips a policy without timeout, even *", withJobPolicies(policyJob(), onEvents(bus.RestartJobAction, bus.AnyEvent)),
			Request{Event: bus.PodPendingEvent, TaskName: "worker", JobVersion: v}, bus.SyncJobAction, 0, ReasonNoPolicy},
		{"PodPending skips a task policy without timeout", withTaskPolicies(policyJob(), 1, onEvent(bus.RestartPodAction, bus.PodPendingEvent)),
			Request{Event: bus.PodPendingEvent, TaskName: "worker", JobVersion: v}, bus.SyncJobAction, 0, ReasonNoPolicy},
		{"PodPending matches a policy with timeout, and returns it",
			withJobPolicies(policyJob(), after(onEvent(bus.RestartPodAction, bus.PodPendingEvent), 10*time.Second)),
			Request{Event: bus.PodPendingEvent, TaskName: "worker", JobVersion: v}, bus.RestartPodAction, 10 * time.Second, ReasonJobPolicy},
		{"PodPending falls through a timeout-less policy to one with a timeout", withJobPolicies(policyJob(),
			onEvents(bus.AbortJobAction, bus.AnyEvent), after(onEvents(bus.RestartJobAction, bus.PodPendingEvent), time.Minute)),
			Request{Event: bus.PodPendingEvent, JobVersion: v}, bus.RestartJobAction, time.Minute, ReasonJobPolicy},
		{"a task policy with timeout on PodPending", withTaskPolicies(policyJob(), 1, after(onEvent(bus.RestartTaskAction, bus.PodPendingEvent), time.Second)),
			Request{Event: bus.PodPendingEvent, TaskName: "worker", JobVersion: v}, bus.RestartTaskAction, time.Second, ReasonTaskPolicy},
		{"any matched policy's timeout is returned, not only PodPending's", withJobPolicies(policyJob(),
			after(onEvent(bus.RestartJobAction, bus.PodFailedEvent), 30*time.Second)),
			Request{Event: bus.PodFailedEvent, JobVersion: v}, bus.RestartJobAction, 30 * time.Second, ReasonJobPolicy},
		{"an exit code policy's timeout is returned", withJobPolicies(policyJob(), after(onExit(bus.AbortJobAction, 3), 5*time.Second)),
			Request{Event: bus.PodFailedEvent, ExitCode: 3, JobVersion: v}, bus.AbortJobAction, 5 * time.Second, ReasonJobPolicy},
		{"a negative timeout means now", withJobPolicies(policyJob(), after(onEvent(bus.RestartJobAction, bus.PodFailedEvent), -time.Second)),
			Request{Event: bus.PodFailedEvent, JobVersion: v}, bus.RestartJobAction, 0, ReasonJobPolicy},

		// Nothing matches.
		{"no match: SyncJob", policyJob(),
			Request{Event: bus.TaskCompletedEvent, TaskName: "worker", JobVersion: v}, bus.SyncJobAction, 0, ReasonNoPolicy},
		{"no policies at all: SyncJob", withJobPolicies(policyJob()),
			Request{Event: bus.PodEvictedEvent, TaskName: "master", JobVersion: v}, bus.SyncJobAction, 0, ReasonNoPolicy},
		{"no job: SyncJob", nil, Request{Event: bus.PodFailedEvent}, bus.SyncJobAction, 0, ReasonNoPolicy},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			got := ApplyPolicies(row.job, row.req)
			want := Choice{Action: row.want, Timeout: row.timeout, Reason: row.reason}
			if got != want {
				t.Errorf("ApplyPolicies = {%s %s %s}, want {%s %s %s}",
					got.Action, got.Timeout, got.Reason, want.Action, want.Timeout, want.Reason)
			}
		})
	}
}
