package job

import (
	"slices"

	"github.com/cespare/xxhash/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/ringfire/ringfire/controllers/job/state"
	"github.com/ringfire/ringfire/controllers/kit"
)

// seePod makes the event of a request a pod's change made (request.seen),
// from the Job's cached pods as they are now and the pod as its change showed
// it: TaskCompleted when the pod's success leaves every pod of its task
// succeeded, TaskFailed when the task's live pods have restarted maxRetry
// times (state.TaskFailed). Then it cancels the pod's postponed action that
// the change ends (cancels). A success is for good, so a later look at the
// cache sees at least what the handler saw; two pods that finish together
// both find their task done, and TaskCompleted is raised once for that set
// of pods (completions).
//
// A postponed action is also checked against its pod as the cache shows it
// when it is due (choose, movedOn): a pod that recovered while the action
// waited behind other requests cancels it even if its own request has not
// been seen yet.
func (c *Controller) seePod(key string, job *batch.Job, pods map[string]map[string]*corev1.Pod, req request) request {
	if req.seen == podUnseen {
		return req
	}
	if task := taskNamed(job, req.TaskName); task != nil {
		switch req.seen {
		case podSucceeded:
			if c.memory.completions.news(key, req.TaskName, task.Replicas, pods[req.TaskName], req.PodName, req.podUID) {
				req.Event = bus.TaskCompletedEvent
			}
		case podRestarted:
			if state.TaskFailed(task, state.TaskRestarts(pods[req.TaskName], req.PodName)+req.restarts) {
				req.Event = bus.TaskFailedEvent
			}
		}
	}
	c.memory.delays.cancelPod(key, req.PodName, req.Event, req.pending)
	return req
}

// taskNamed is the Job's task of that name, or nil.
func taskNamed(job *batch.Job, name string) *batch.TaskSpec {
	for i := range job.Spec.Tasks {
		if t := &job.Spec.Tasks[i]; state.TaskName(t, i) == name {
			return t
		}
	}
	return nil
}

// completions remembers, per Job and task, the pods whose successes last
// completed the task (a hash of their names and UIDs) and the pod whose
// request found them, so that TaskCompleted is raised once for them: again
// for that request if it is retried (a write of its reconcile failed), not
// for the request of another of those pods. A task whose pods were made
// again (a restart) is completed by other UIDs, and raises it again.
type completions struct {
	kit.Keyed[map[string]completion] // key → task → the last completion told
}

// completion is one completion told: the completing pods' hash, and the pod
// whose request told it.
type completion struct {
	pods uint64
	by   string
}

// news reports whether the task of that many replicas is completed by the
// succeeded pods among pods, with the pod named succeeded (of UID uid)
// counted whatever the cache shows of it, and not yet told for those pods by
// another request; it records them.
func (c *completions) news(key, task string, replicas int32, pods map[string]*corev1.Pod, succeeded string, uid types.UID) (news bool) {
	if replicas <= 0 {
		return false
	}
	count := int64(1) // the pod named succeeded
	for name, p := range pods {
		if name != succeeded && p.Status.Phase == corev1.PodSucceeded {
			count++
		}
	}
	if count < int64(replicas) {
		return false // counted without allocating: most successes are not the last
	}
	done := make([]string, 0, count)
	done = append(done, succeeded+"/"+string(uid))
	for name, p := range pods {
		if name != succeeded && p.Status.Phase == corev1.PodSucceeded {
			done = append(done, name+"/"+string(p.UID))
		}
	}
	slices.Sort(done)
	h := xxhash.New()
	for _, d := range done {
		_, _ = h.WriteString(d)
		_, _ = h.Write([]byte{0})
	}
	sum := h.Sum64()
	c.Update(key, func(tasks map[string]completion, _ bool) (map[string]completion, bool) {
		if tasks == nil {
			tasks = map[string]completion{}
		}
		last, told := tasks[task]
		news = !told || last.pods != sum || last.by == succeeded
		if news {
			tasks[task] = completion{pods: sum, by: succeeded}
		}
		return tasks, true
	})
	return news
}

// movedOn reports whether the pod of a postponed action (req.PodName, asked
// for by req.Event) has, as the cache shows it now, moved on the way that
// cancels the action (cancels): running again, or no longer pending.
func movedOn(pods map[string]map[string]*corev1.Pod, req request) bool {
	if req.PodName == "" {
		return false
	}
	pod := pods[req.TaskName][req.PodName]
	now, stillPending := bus.OutOfSyncEvent, false
	if pod != nil && pod.DeletionTimestamp == nil {
		if pod.Status.Phase == corev1.PodRunning {
			now = bus.PodRunningEvent
		}
		stillPending = pending(pod)
	}
	return cancels(req.Event, now, stillPending)
}
