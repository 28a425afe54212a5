package plan

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/controllers/job/build"
	"github.com/ringfire/ringfire/controllers/job/state"
)

func task(name string, replicas int32) batch.TaskSpec {
	return batch.TaskSpec{Name: name, Replicas: replicas, Template: corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}}
}

// newJob is a defaulted Job of tasks in phase, at version 2.
func newJob(phase batch.JobPhase, tasks ...batch.TaskSpec) *batch.Job {
	job := &batch.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "j", UID: "uid-j", ResourceVersion: "10", Generation: 1},
		Spec:       batch.JobSpec{Tasks: tasks},
		Status:     batch.JobStatus{Version: 2, State: batch.JobState{Phase: phase}},
	}
	state.Defaults(job)
	return job
}

// podOf is the pod at index of the named task of job, as the controller makes it, in phase.
func podOf(job *batch.Job, taskName string, index int, phase corev1.PodPhase) *corev1.Pod {
	for i := range job.Spec.Tasks {
		if t := &job.Spec.Tasks[i]; t.Name == taskName {
			pod := build.Pod(job, t, index, 0)
			pod.UID = types.UID("uid-" + pod.Name)
			pod.ResourceVersion = "1"
			pod.Status.Phase = phase
			return pod
		}
	}
	panic("no task " + taskName)
}

// podsOf files pods by task and name, as the cache's JobInfo does.
func podsOf(pods ...*corev1.Pod) map[string]map[string]*corev1.Pod {
	out := map[string]map[string]*corev1.Pod{}
	for _, p := range pods {
		t := p.Annotations[batch.TaskSpecKey]
		if out[t] == nil {
			out[t] = map[string]*corev1.Pod{}
		}
		out[t][p.Name] = p
	}
	return out
}

// flight is an InFlight of names being created and UIDs being deleted.
type flight struct {
	creating map[string]bool
	deleting map[types.UID]bool
}

func (f flight) Creating(_ cache.Resource, _, name string) (time.Duration, bool) {
	if f.creating[name] {
		return time.Minute, true
	}
	return 0, false
}

func (f flight) Deleting(_ cache.Resource, _, _ string, uid types.UID) (time.Duration, bool) {
	if f.deleting[uid] {
		return time.Minute, true
	}
	return 0, false
}

func testJob(name string, tasks ...batch.TaskSpec) *batch.Job {
	return &batch.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), ResourceVersion: "10", Generation: 1},
		Spec:       batch.JobSpec{Tasks: tasks},
		Status:     batch.JobStatus{Version: 2},
	}
}
