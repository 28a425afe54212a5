package plan

import (
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/controllers/job/build"
	"github.com/ringfire/ringfire/controllers/job/plugins"
)

// PodCreates are the pods a plan creates, in the order of their names. A pod is built only when
// its create is about to be sent (Build) and is dropped once sent, so that a reconcile holds at
// most as many built pods as it has creates in flight (the controller's PodParallelism), not a
// whole batch: 256 pods built ahead held 256 copies of the task's template, and a template's
// spec is bounded only by the API server's limit on an object (docs/jobs.md, Limits).
//
// Build may be called from several goroutines: the plugins change the pods one at a time, as
// they did when the plan built them.
type PodCreates struct {
	pods []podCreate
	job  *batch.Job // the Job as the sync saw it
	slot int
	set  plugins.Set

	mu    sync.Mutex // the plugins run on one pod at a time
	built atomic.Int64
}

// podCreate is one pod to create: its name and its index in a task of the Job.
type podCreate struct {
	name        string
	task, index int
}

// newPodCreates returns the creates of pods, built from job as it is now: the rest of the plan
// goes on changing the Job's status (a kill's plugins take their marks off), and the pods are
// the sync's. The status is copied; the spec, which no plan changes, is shared.
func newPodCreates(job *batch.Job, slot int, set plugins.Set, pods []podCreate) *PodCreates {
	frozen := *job
	frozen.Status = *job.Status.DeepCopy()
	return &PodCreates{pods: pods, job: &frozen, slot: slot, set: set}
}

// Len is the number of pods to create; 0 for nil.
func (c *PodCreates) Len() int {
	if c == nil {
		return 0
	}
	return len(c.pods)
}

// Name is the name of the i-th pod.
func (c *PodCreates) Name(i int) string { return c.pods[i].name }

// Names are the names of the pods to create, in order; nil for nil.
func (c *PodCreates) Names() []string {
	if c == nil {
		return nil
	}
	out := make([]string, len(c.pods))
	for i, p := range c.pods {
		out[i] = p.name
	}
	return out
}

// Build builds the i-th pod, as build.Pod makes it and the Job's plugins change it. The plan
// tried each task's first pod already; an error here is a plugin's that refuses only some
// indexes.
func (c *PodCreates) Build(i int) (*corev1.Pod, error) {
	p := c.pods[i]
	c.mu.Lock()
	defer c.mu.Unlock()
	pod := build.Pod(c.job, &c.job.Spec.Tasks[p.task], p.index, c.slot)
	if err := c.set.OnPodCreate(pod, c.job); err != nil {
		return nil, err
	}
	c.built.Add(1)
	return pod, nil
}

// Built is how many pods Build has made so far.
func (c *PodCreates) Built() int {
	if c == nil {
		return 0
	}
	return int(c.built.Load())
}
