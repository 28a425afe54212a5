package flow

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	flowv1 "volcano.sh/apis/pkg/apis/flow/v1alpha1"
)

var t0 = time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)

func vcjob(name string, phase batch.JobPhase, created time.Time) *batch.Job {
	j := &batch.Job{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)}}
	j.Status.State.Phase = phase
	return j
}

func TestStatusListsJobsByPhase(t *testing.T) {
	a := vcjob("f-a", batch.Completed, t0)
	a.Status.RunningDuration = &metav1.Duration{Duration: 90 * time.Second}
	a.Status.RetryCount = 1
	a.Status.TaskStatusCount = map[string]batch.TaskState{"main": {Phase: map[corev1.PodPhase]int32{corev1.PodSucceeded: 2}}}
	jobs := []*batch.Job{
		vcjob("f-e", batch.Aborted, t0.Add(4*time.Second)),
		vcjob("f-b", batch.Running, t0.Add(time.Second)),
		a,
		vcjob("f-c", batch.Failed, t0.Add(2*time.Second)),
		vcjob("f-d", batch.Terminated, t0.Add(3*time.Second)),
		vcjob("f-f", batch.Pending, t0.Add(5*time.Second)),
		vcjob("f-g", batch.Completing, t0.Add(6*time.Second)),
	}
	st := Status(flowv1.JobFlowStatus{State: flowv1.State{Phase: flowv1.Running}}, jobs, t0.Add(time.Minute))
	for _, tc := range []struct {
		list string
		got  []string
		want []string
	}{
		{"pending", st.PendingJobs, []string{"f-f"}},
		{"running", st.RunningJobs, []string{"f-b"}},
		{"completed", st.CompletedJobs, []string{"f-a"}},
		{"failed", st.FailedJobs, []string{"f-c"}},
		{"terminated", st.TerminatedJobs, []string{"f-d"}},
		{"unknown", st.UnKnowJobs, []string{"f-e"}},
	} {
		if !slices.Equal(tc.got, tc.want) {
			t.Errorf("%s jobs %v, want %v", tc.list, tc.got, tc.want)
		}
	}
	if st.State.Phase != flowv1.Running {
		t.Errorf("phase %q, want it kept (Running)", st.State.Phase)
	}
	if len(st.JobStatusList) != 7 || st.JobStatusList[0].Name != "f-a" || st.JobStatusList[6].Name != "f-g" {
		t.Fatalf("jobStatusList %+v, want the 7 Jobs by creation", st.JobStatusList)
	}
	first := st.JobStatusList[0]
	if first.RestartCount != 1 || !first.EndTimestamp.Equal(&metav1.Time{Time: t0.Add(90 * time.Second)}) || !first.StartTimestamp.Equal(&a.CreationTimestamp) {
		t.Errorf("entry %+v, want restart count 1, start at creation, end 90s later", first)
	}
	if c := st.Conditions["f-a"]; c.Phase != batch.Completed || c.RunningDuration.Duration != 90*time.Second || c.TaskStatusCount["main"].Phase[corev1.PodSucceeded] != 2 {
		t.Errorf("condition %+v, want the Job's phase, running time and task counts", c)
	}
}

func TestStatusKeepsPhaseHistories(t *testing.T) {
	job := vcjob("f-a", batch.Pending, t0)
	st := Status(flowv1.JobFlowStatus{}, []*batch.Job{job}, t0.Add(time.Second))
	job.Status.State.Phase = batch.Pending
	st = Status(st, []*batch.Job{job}, t0.Add(2*time.Second)) // no change
	job.Status.State.Phase = batch.Running
	st = Status(st, []*batch.Job{job}, t0.Add(3*time.Second))
	// The Job is gone (deleted by hand): its entry stays, as Volcano keeps it.
	st = Status(st, nil, t0.Add(4*time.Second))
	if len(st.JobStatusList) != 1 {
		t.Fatalf("jobStatusList %+v, want the one entry kept", st.JobStatusList)
	}
	h := st.JobStatusList[0].RunningHistories
	if len(h) != 2 || h[0].State != batch.Pending || h[1].State != batch.Running ||
		!h[0].StartTimestamp.Time.Equal(t0.Add(time.Second)) || !h[0].EndTimestamp.Time.Equal(t0.Add(3*time.Second)) ||
		!h[1].StartTimestamp.Time.Equal(t0.Add(3*time.Second)) || !h[1].EndTimestamp.IsZero() {
		t.Errorf("histories %+v, want Pending from 1s to 3s, then Running from 3s", h)
	}
	if st.Conditions != nil || st.RunningJobs != nil {
		t.Errorf("conditions %v running %v, want none for a flow with no Job", st.Conditions, st.RunningJobs)
	}
}

func TestNextPhase(t *testing.T) {
	for _, tc := range []struct {
		name        string
		cur         flowv1.Phase
		st          flowv1.JobFlowStatus
		done, steps int
		want        flowv1.Phase
	}{
		{"new, nothing running", "", flowv1.JobFlowStatus{PendingJobs: []string{"a"}}, 0, 2, flowv1.Pending},
		{"new, one running", "", flowv1.JobFlowStatus{RunningJobs: []string{"a"}}, 0, 2, flowv1.Running},
		{"pending, one completed", flowv1.Pending, flowv1.JobFlowStatus{CompletedJobs: []string{"a"}}, 1, 2, flowv1.Running},
		{"pending, one failed", flowv1.Pending, flowv1.JobFlowStatus{FailedJobs: []string{"a"}}, 0, 2, flowv1.Failed},
		{"pending, one terminated", flowv1.Pending, flowv1.JobFlowStatus{TerminatedJobs: []string{"a"}}, 0, 2, flowv1.Failed},
		{"running, not all done", flowv1.Running, flowv1.JobFlowStatus{CompletedJobs: []string{"a"}}, 1, 2, flowv1.Running},
		{"running, all done", flowv1.Running, flowv1.JobFlowStatus{CompletedJobs: []string{"a", "b"}}, 2, 2, flowv1.Succeed},
		{"running, all done, one Job deleted since it completed", flowv1.Running, flowv1.JobFlowStatus{CompletedJobs: []string{"b"}}, 2, 2, flowv1.Succeed},
		{"running, a removed step's Job completed, a new step not run", flowv1.Running, flowv1.JobFlowStatus{CompletedJobs: []string{"a", "b"}}, 1, 2, flowv1.Running},
		{"running, one failed", flowv1.Running, flowv1.JobFlowStatus{CompletedJobs: []string{"a"}, FailedJobs: []string{"b"}}, 1, 3, flowv1.Failed},
		{"running, one terminated", flowv1.Running, flowv1.JobFlowStatus{TerminatedJobs: []string{"b"}}, 0, 3, flowv1.Failed},
		{"succeeded is final", flowv1.Succeed, flowv1.JobFlowStatus{FailedJobs: []string{"a"}}, 0, 1, flowv1.Succeed},
		{"failed is final", flowv1.Failed, flowv1.JobFlowStatus{CompletedJobs: []string{"a"}}, 1, 1, flowv1.Failed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NextPhase(tc.cur, &tc.st, tc.done, tc.steps); got != tc.want {
				t.Errorf("NextPhase = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCompletedBefore(t *testing.T) {
	st := &flowv1.JobFlowStatus{JobStatusList: []flowv1.JobStatus{
		{Name: "f-a", State: batch.Completed}, {Name: "f-b", State: batch.Running},
	}}
	for name, want := range map[string]bool{"f-a": true, "f-b": false, "f-c": false} {
		if got := CompletedBefore(st, name); got != want {
			t.Errorf("CompletedBefore(%s) = %v, want %v", name, got, want)
		}
	}
}
