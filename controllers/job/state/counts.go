package state

import (
	corev1 "k8s.io/api/core/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// Counts are a Job's pods by phase, as the kill or sync that just ran counted them: a pod with a
// deletion timestamp, or one deleted by this kill, counts as Terminating and nowhere else.
type Counts struct {
	Pending     int32
	Running     int32
	Succeeded   int32
	Failed      int32
	Unknown     int32
	Terminating int32

	// TaskSucceeded holds, for every task that has at least one counted pod, how many of its pods
	// succeeded. The per-task minAvailable check skips a task missing from the map, as Volcano's
	// does when the task is absent from status.taskStatusCount.
	TaskSucceeded map[string]int32
}

// countsOf reads the counts a Volcano-shaped JobStatus carries.
func countsOf(status batch.JobStatus) Counts {
	c := Counts{
		Pending:     status.Pending,
		Running:     status.Running,
		Succeeded:   status.Succeeded,
		Failed:      status.Failed,
		Unknown:     status.Unknown,
		Terminating: status.Terminating,
	}
	if len(status.TaskStatusCount) > 0 {
		c.TaskSucceeded = make(map[string]int32, len(status.TaskStatusCount))
		for task, state := range status.TaskStatusCount {
			c.TaskSucceeded[task] = state.Phase[corev1.PodSucceeded]
		}
	}
	return c
}

// Task is what the completion rules need of one task spec.
type Task struct {
	Name     string
	Replicas int32
	// MinAvailable is nil when the spec leaves it unset (Defaults sets it to Replicas).
	MinAvailable *int32
}

// Spec is what the decision needs of a Job's spec.
type Spec struct {
	MinAvailable int32
	MinSuccess   *int32
	MaxRetry     int32
	Tasks        []Task
}

// SpecOf reads the fields of job's spec that the decision uses. It shares the pointers.
func SpecOf(job *batch.Job) Spec {
	s := Spec{
		MinAvailable: job.Spec.MinAvailable,
		MinSuccess:   job.Spec.MinSuccess,
		MaxRetry:     job.Spec.MaxRetry,
		Tasks:        make([]Task, 0, len(job.Spec.Tasks)),
	}
	for _, t := range job.Spec.Tasks {
		s.Tasks = append(s.Tasks, Task{Name: t.Name, Replicas: t.Replicas, MinAvailable: t.MinAvailable})
	}
	return s
}

// Replicas is the number of pods the spec asks for, over all tasks, saturated at the largest
// int32 (a spec beyond the limits is refused before it runs, but it must not read as negative).
func (s Spec) Replicas() int32 {
	var n int64
	for _, t := range s.Tasks {
		n += int64(t.Replicas)
	}
	return ClampInt32(n)
}

// taskMinAvailable sums the tasks' minAvailable, counting a task without one as all its replicas.
func (s Spec) taskMinAvailable() int32 {
	var n int64
	for _, t := range s.Tasks {
		if t.MinAvailable != nil {
			n += int64(*t.MinAvailable)
		} else {
			n += int64(t.Replicas)
		}
	}
	return ClampInt32(n)
}
