package plan

import (
	corev1 "k8s.io/api/core/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/controllers/job/state"
)

// Counts are a Job's pods by phase after the plan's kill or sync, overall and per task: a pod
// the plan deletes, or one being deleted, counts as Terminating; a pod it creates as Pending.
type Counts struct {
	state.Counts
	Tasks map[string]batch.TaskState
}

// Add counts one pod of task in phase.
func (pc *Counts) Add(task string, phase corev1.PodPhase) {
	switch phase {
	case corev1.PodPending:
		pc.Pending++
	case corev1.PodRunning:
		pc.Running++
	case corev1.PodSucceeded:
		pc.Succeeded++
	case corev1.PodFailed:
		pc.Failed++
	default:
		pc.Unknown++
	}
	if pc.Tasks == nil {
		pc.Tasks = map[string]batch.TaskState{}
	}
	ts := pc.Tasks[task]
	if ts.Phase == nil {
		ts.Phase = map[corev1.PodPhase]int32{}
	}
	ts.Phase[phase]++
	pc.Tasks[task] = ts
	if pc.TaskSucceeded == nil {
		pc.TaskSucceeded = map[string]int32{}
	}
	if phase == corev1.PodSucceeded {
		pc.TaskSucceeded[task]++
	} else if _, ok := pc.TaskSucceeded[task]; !ok {
		pc.TaskSucceeded[task] = 0
	}
}

// CountPods counts pods (by task, then name) as they are.
func CountPods(pods map[string]map[string]*corev1.Pod) Counts {
	var pc Counts
	for task, byName := range pods {
		for _, p := range byName {
			if p.DeletionTimestamp != nil {
				pc.Terminating++
				continue
			}
			pc.Add(task, p.Status.Phase)
		}
	}
	return pc
}
