package flow

import (
	"cmp"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	flowv1 "volcano.sh/apis/pkg/apis/flow/v1alpha1"
)

// Status is what a flow reports of its Jobs, as Volcano reports it: the Jobs by phase (those in
// another phase, Aborted say, under unKnowJobs), one entry per Job in jobStatusList with the
// history of its phases, and a condition per Job with its phase, creation time, running time
// and task counts. prev is the status written before: the histories go on from it, and an entry
// of a Job that is gone stays, as Volcano keeps it. now stamps a phase change.
func Status(prev flowv1.JobFlowStatus, jobs []*batch.Job, now time.Time) flowv1.JobFlowStatus {
	jobs = slices.Clone(jobs)
	slices.SortFunc(jobs, func(a, b *batch.Job) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	st := flowv1.JobFlowStatus{State: prev.State}
	for _, job := range jobs {
		name := job.Name
		switch job.Status.State.Phase {
		case batch.Pending:
			st.PendingJobs = append(st.PendingJobs, name)
		case batch.Running:
			st.RunningJobs = append(st.RunningJobs, name)
		case batch.Completed:
			st.CompletedJobs = append(st.CompletedJobs, name)
		case batch.Terminated:
			st.TerminatedJobs = append(st.TerminatedJobs, name)
		case batch.Failed:
			st.FailedJobs = append(st.FailedJobs, name)
		case batch.Completing, batch.Terminating:
			// counted by Volcano, reported in no list
		default:
			st.UnKnowJobs = append(st.UnKnowJobs, name)
		}
		if st.Conditions == nil {
			st.Conditions = map[string]flowv1.Condition{}
		}
		st.Conditions[name] = flowv1.Condition{
			Phase:           job.Status.State.Phase,
			CreateTimestamp: job.CreationTimestamp,
			RunningDuration: job.Status.RunningDuration.DeepCopy(),
			TaskStatusCount: deepCopyTasks(job.Status.TaskStatusCount),
		}
	}
	st.JobStatusList = make([]flowv1.JobStatus, 0, len(prev.JobStatusList)+len(jobs))
	for _, js := range prev.JobStatusList {
		st.JobStatusList = append(st.JobStatusList, *js.DeepCopy())
	}
	for _, job := range jobs {
		entry := flowv1.JobStatus{
			Name:           job.Name,
			State:          job.Status.State.Phase,
			StartTimestamp: job.CreationTimestamp,
			RestartCount:   job.Status.RetryCount,
		}
		if d := job.Status.RunningDuration; d != nil {
			entry.EndTimestamp = metav1.NewTime(job.CreationTimestamp.Add(d.Duration))
		}
		i := slices.IndexFunc(st.JobStatusList, func(js flowv1.JobStatus) bool { return js.Name == job.Name })
		var history []flowv1.JobRunningHistory
		if i >= 0 {
			history = st.JobStatusList[i].RunningHistories
		}
		entry.RunningHistories = nextHistory(history, job.Status.State.Phase, now)
		if i >= 0 {
			st.JobStatusList[i] = entry
		} else {
			st.JobStatusList = append(st.JobStatusList, entry)
		}
	}
	if len(st.JobStatusList) == 0 {
		st.JobStatusList = nil
	}
	return st
}

// nextHistory adds an entry to a Job's phase history when its phase changed: the open entry
// is closed at now and a new one opened.
func nextHistory(h []flowv1.JobRunningHistory, phase batch.JobPhase, now time.Time) []flowv1.JobRunningHistory {
	if phase == "" {
		return h
	}
	if n := len(h); n > 0 {
		if h[n-1].State == phase {
			return h
		}
		h[n-1].EndTimestamp = metav1.NewTime(now)
	}
	return append(h, flowv1.JobRunningHistory{StartTimestamp: metav1.NewTime(now), State: phase})
}

// NextPhase is the flow's phase after a sync, from its phase before, its status st, and how
// many of its steps are done (their Job Completed) out of steps: a Pending flow runs once a Job
// runs or completed; a flow with a Failed or Terminated Job has Failed; one whose every step is
// done has Succeeded. Succeed and Failed are final.
func NextPhase(cur flowv1.Phase, st *flowv1.JobFlowStatus, done, steps int) flowv1.Phase {
	failed := len(st.FailedJobs) > 0 || len(st.TerminatedJobs) > 0
	switch cur {
	case "", flowv1.Pending:
		switch {
		case failed:
			return flowv1.Failed
		case len(st.RunningJobs) > 0 || len(st.CompletedJobs) > 0 || done > 0:
			return flowv1.Running
		}
		return flowv1.Pending
	case flowv1.Running:
		switch {
		case done == steps:
			return flowv1.Succeed
		case failed:
			return flowv1.Failed
		}
	}
	return cur
}

// CompletedBefore reports whether the flow's status shows the Job name Completed: a step whose
// Job Completed and has been deleted since (by its ttlSecondsAfterFinished, or by hand) is done,
// not to be run again.
func CompletedBefore(st *flowv1.JobFlowStatus, name string) bool {
	for _, js := range st.JobStatusList {
		if js.Name == name {
			return js.State == batch.Completed
		}
	}
	return false
}

func deepCopyTasks(in map[string]batch.TaskState) map[string]batch.TaskState {
	if in == nil {
		return nil
	}
	out := make(map[string]batch.TaskState, len(in))
	for k, v := range in {
		out[k] = *v.DeepCopy()
	}
	return out
}
