package state

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
)

// phases are the phases a Job may be in after a transition.
var phases = map[batch.JobPhase]bool{
	batch.Pending: true, batch.Running: true, batch.Restarting: true, batch.Aborting: true, batch.Aborted: true,
	batch.Completing: true, batch.Completed: true, batch.Terminating: true, batch.Terminated: true, batch.Failed: true,
}

// FuzzPolicies: whatever a Job's policies say (events, actions and exit codes are free text and
// numbers on Volcano's CRD), and whatever phase, retry count and pod counts its status holds,
// choosing the action and deciding the transition never panic; the action chosen is the
// request's own, a policy's, or SyncJob; the timeout is not negative; the phase after is a
// phase; the retry count never goes down. events is the policy's events joined by ",".
func FuzzPolicies(f *testing.F) {
	f.Add(string(bus.PodFailedEvent), "", string(bus.RestartJobAction), int32(0), int64(0), string(bus.PodFailedEvent), int32(1), "", string(batch.Running), int32(0), int32(3), int32(1), int32(0))
	f.Add("", "*", string(bus.AbortJobAction), int32(0), int64(time.Minute), string(bus.PodPendingEvent), int32(0), "", string(batch.Pending), int32(0), int32(3), int32(0), int32(2))
	f.Add("", "", "NoSuchAction", int32(137), int64(-1), string(bus.PodFailedEvent), int32(137), "", string(batch.Restarting), int32(2), int32(3), int32(0), int32(0))
	f.Add("TaskCompleted", "PodEvicted,*,", string(bus.CompleteJobAction), int32(-1), int64(1<<62), "TaskCompleted", int32(-1), string(bus.ResumeJobAction), "Nonsense", int32(2147483647), int32(-2147483648), int32(-5), int32(2147483647))
	// Kept as a case: at maxRetry -2147483648, maxRetry-1 wrapped in int32 (never the last retry),
	// and a retry count of 2147483647 wrapped to negative once bumped.
	f.Add(string(bus.PodFailedEvent), "", string(bus.RestartJobAction), int32(0), int64(0), string(bus.PodFailedEvent), int32(1), "", string(batch.Running), int32(2147483647), int32(-2147483648), int32(1), int32(0))
	f.Add("", "", string(bus.RestartTaskAction), int32(1), int64(0), string(bus.PodEvictedEvent), int32(0), "", string(batch.Aborting), int32(0), int32(0), int32(1), int32(1))
	f.Fuzz(func(t *testing.T, event, events, action string, exitCode int32, timeout int64, reqEvent string, reqExit int32, reqAction, phase string,
		retry, maxRetry, minAvailable, running int32) {
		p := batch.LifecyclePolicy{Event: bus.Event(event), Action: bus.Action(action), Timeout: &metav1.Duration{Duration: time.Duration(timeout)}}
		for _, e := range strings.Split(events, ",") {
			p.Events = append(p.Events, bus.Event(e))
		}
		if exitCode != 0 {
			p.ExitCode = ptr.To(exitCode)
		}
		job := &batch.Job{
			ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns", UID: "u"},
			Spec: batch.JobSpec{
				MinAvailable: minAvailable, MaxRetry: maxRetry, Policies: []batch.LifecyclePolicy{p},
				Tasks: []batch.TaskSpec{{Name: "t", Replicas: 2, Policies: []batch.LifecyclePolicy{p}}},
			},
			Status: batch.JobStatus{RetryCount: retry, State: batch.JobState{Phase: batch.JobPhase(phase)}},
		}
		req := Request{Event: bus.Event(reqEvent), Action: bus.Action(reqAction), TaskName: "t", ExitCode: reqExit, JobUID: "u"}
		c := ApplyPolicies(job, req)
		switch c.Action {
		case req.Action, p.Action, bus.SyncJobAction:
		default:
			t.Fatalf("action %q is neither the request's %q, the policy's %q nor SyncJob", c.Action, req.Action, p.Action)
		}
		if c.Timeout < 0 {
			t.Fatalf("timeout %v", c.Timeout)
		}
		d := decide(Input{
			Phase: batch.JobPhase(phase), Action: c.Action, Spec: SpecOf(job), RetryCount: retry,
			Counts: Counts{Running: running, Pending: 2 - min(running, 2)},
		})
		if !phases[d.Phase] {
			t.Fatalf("phase %q after %q on %q", d.Phase, c.Action, phase)
		}
		if d.RetryCount < retry {
			t.Fatalf("retry count went from %d to %d", retry, d.RetryCount)
		}
	})
}
