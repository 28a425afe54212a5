package job

import (
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/controllers/job/state"

	"github.com/ringfire/ringfire/controllers/kit"
)

// eventJob is the Job of the event tables: "ns/a", task w of 2 pods and task
// ps of 1, at version 2.
func eventJob() *batch.Job { return testJob("a", task("w", 2), task("ps", 1)) }

// changed is a copy of pod at the next resourceVersion, changed by edit.
func changed(pod *corev1.Pod, edit func(*corev1.Pod)) *corev1.Pod {
	p := pod.DeepCopy()
	p.ResourceVersion = "2"
	edit(p)
	return p
}

func inPhase(phase corev1.PodPhase) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Status.Phase = phase }
}

// restarts sets the restart count of the pod's only container.
func restarts(n int32) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", RestartCount: n}}
	}
}

func exited(code int32) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodFailed
		p.Status.ContainerStatuses = []corev1.ContainerStatus{
			{Name: "main", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}},
			{Name: "side", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 9}}},
		}
	}
}

// podReq is the request a pod of eventJob makes with event.
func podReq(event bus.Event, taskName, pod string) enqueued {
	return enqueued{"ns/a", request{Request: state.Request{
		Event: event, TaskName: taskName, PodName: pod, JobVersion: 2, JobUID: "uid-a",
	}}}
}

// Every pod event maps to the one request docs/jobs.md ("One request at a time
// per Job") gives for it, as the reconcile sees it (seePod), carrying the pod's task, name, job version and Job
// UID; pods that are not a Job's, or carry no job version, make none.
func TestPodEventsMakeVolcanosRequests(t *testing.T) {
	job := eventJob()
	w0 := podOf(job, "w", 0, corev1.PodPending)
	w0running := podOf(job, "w", 0, corev1.PodRunning)
	ps0running := podOf(job, "ps", 0, corev1.PodRunning)
	now := metav1.Now()
	orphan := w0.DeepCopy()
	orphan.OwnerReferences = nil
	foreign := w0.DeepCopy()
	foreign.OwnerReferences[0].Kind, foreign.OwnerReferences[0].APIVersion = "ReplicaSet", "apps/v1"
	unversioned := w0.DeepCopy()
	delete(unversioned.Annotations, batch.JobVersion)

	for _, tc := range []struct {
		name string
		// cached are the pods the cache holds when the event arrives (the pod
		// of the event is in it already, as the cache stores before it tells).
		cached []*corev1.Pod
		fire   func(c *Controller)
		want   []enqueued
	}{
		{name: "pending pod added: PodPending with its task, version and Job UID, as Volcano raises",
			fire: func(c *Controller) { c.onPodAdd(w0) },
			want: []enqueued{podReq(bus.PodPendingEvent, "w", "a-w-0")}},
		{name: "pod of no phase yet added: PodPending",
			fire: func(c *Controller) { c.onPodAdd(changed(w0, inPhase(""))) },
			want: []enqueued{podReq(bus.PodPendingEvent, "w", "a-w-0")}},
		{name: "running pod added (a relist): OutOfSync, no PodPending timeout to start",
			fire: func(c *Controller) { c.onPodAdd(w0running) },
			want: []enqueued{podReq(bus.OutOfSyncEvent, "w", "a-w-0")}},
		{name: "pod of no controller added: none",
			fire: func(c *Controller) { c.onPodAdd(orphan) }},
		{name: "pod of a ReplicaSet added: none",
			fire: func(c *Controller) { c.onPodAdd(foreign) }},
		{name: "pod without a job version added: none",
			fire: func(c *Controller) { c.onPodAdd(unversioned) }},
		{name: "update that keeps the resourceVersion (a resync): none",
			fire: func(c *Controller) { c.onPodUpdate(w0, w0.DeepCopy()) }},
		{name: "Pending to Running: PodRunning",
			fire: func(c *Controller) { c.onPodUpdate(w0, changed(w0, inPhase(corev1.PodRunning))) },
			want: []enqueued{podReq(bus.PodRunningEvent, "w", "a-w-0")}},
		{name: "Running, something else changed: OutOfSync",
			fire: func(c *Controller) {
				c.onPodUpdate(w0running, changed(w0running, func(p *corev1.Pod) { p.Labels["x"] = "y" }))
			},
			want: []enqueued{podReq(bus.OutOfSyncEvent, "w", "a-w-0")}},
		{name: "still Pending, something changed: OutOfSync, as in Volcano (PodPending is the add's)",
			fire: func(c *Controller) {
				c.onPodUpdate(w0, changed(w0, func(p *corev1.Pod) { p.Spec.NodeName = "n1" }))
			},
			want: []enqueued{podReq(bus.OutOfSyncEvent, "w", "a-w-0")}},
		// TaskFailed: the task's live pods restarted maxRetry times (testJob leaves it 0, which stands for 3).
		{name: "Running, its container restarted maxRetry times: TaskFailed",
			fire: func(c *Controller) { c.onPodUpdate(w0running, changed(w0running, restarts(3))) },
			want: []enqueued{podReq(bus.TaskFailedEvent, "w", "a-w-0")}},
		{name: "Running, restarted fewer times: OutOfSync",
			fire: func(c *Controller) { c.onPodUpdate(w0running, changed(w0running, restarts(2))) },
			want: []enqueued{podReq(bus.OutOfSyncEvent, "w", "a-w-0")}},
		{name: "the restarts of the task's pods add up: TaskFailed",
			cached: []*corev1.Pod{changed(podOf(job, "w", 1, corev1.PodRunning), restarts(2))},
			fire:   func(c *Controller) { c.onPodUpdate(w0running, changed(w0running, restarts(1))) },
			want:   []enqueued{podReq(bus.TaskFailedEvent, "w", "a-w-0")}},
		{name: "another task's restarts do not count: OutOfSync",
			cached: []*corev1.Pod{changed(ps0running, restarts(5))},
			fire:   func(c *Controller) { c.onPodUpdate(w0running, changed(w0running, restarts(1))) },
			want:   []enqueued{podReq(bus.OutOfSyncEvent, "w", "a-w-0")}},
		{name: "still Pending, restarted maxRetry times: TaskFailed",
			fire: func(c *Controller) { c.onPodUpdate(w0, changed(w0, restarts(3))) },
			want: []enqueued{podReq(bus.TaskFailedEvent, "w", "a-w-0")}},
		{name: "Pending to Running, restarted maxRetry times: PodRunning first, as in Volcano",
			fire: func(c *Controller) {
				c.onPodUpdate(w0, changed(w0, func(p *corev1.Pod) { inPhase(corev1.PodRunning)(p); restarts(3)(p) }))
			},
			want: []enqueued{podReq(bus.PodRunningEvent, "w", "a-w-0")}},
		{name: "Running to Failed: PodFailed with the first container's exit code",
			fire: func(c *Controller) { c.onPodUpdate(w0running, changed(w0running, exited(3))) },
			want: []enqueued{func() enqueued {
				e := podReq(bus.PodFailedEvent, "w", "a-w-0")
				e.req.ExitCode = 3
				return e
			}()}},
		{name: "Failed pod changed again: OutOfSync, no exit code",
			fire: func(c *Controller) {
				failed := changed(w0running, exited(3))
				c.onPodUpdate(failed, changed(failed, func(p *corev1.Pod) { p.ResourceVersion = "3" }))
			},
			want: []enqueued{podReq(bus.OutOfSyncEvent, "w", "a-w-0")}},
		{name: "Running to Succeeded, the task's only pod: TaskCompleted",
			cached: []*corev1.Pod{changed(ps0running, inPhase(corev1.PodSucceeded))},
			fire: func(c *Controller) {
				c.onPodUpdate(ps0running, changed(ps0running, inPhase(corev1.PodSucceeded)))
			},
			want: []enqueued{podReq(bus.TaskCompletedEvent, "ps", "a-ps-0")}},
		{name: "Running to Succeeded, the task's last pod: TaskCompleted",
			cached: []*corev1.Pod{
				changed(w0running, inPhase(corev1.PodSucceeded)), podOf(job, "w", 1, corev1.PodSucceeded),
			},
			fire: func(c *Controller) {
				c.onPodUpdate(w0running, changed(w0running, inPhase(corev1.PodSucceeded)))
			},
			want: []enqueued{podReq(bus.TaskCompletedEvent, "w", "a-w-0")}},
		{name: "Running to Succeeded, another pod of the task still running: OutOfSync",
			cached: []*corev1.Pod{
				changed(w0running, inPhase(corev1.PodSucceeded)), podOf(job, "w", 1, corev1.PodRunning),
			},
			fire: func(c *Controller) {
				c.onPodUpdate(w0running, changed(w0running, inPhase(corev1.PodSucceeded)))
			},
			want: []enqueued{podReq(bus.OutOfSyncEvent, "w", "a-w-0")}},
		{name: "deletion begun: PodEvicted",
			fire: func(c *Controller) {
				c.onPodUpdate(w0running, changed(w0running, func(p *corev1.Pod) { p.DeletionTimestamp = &now }))
			},
			want: []enqueued{podReq(bus.PodEvictedEvent, "w", "a-w-0")}},
		{name: "pod deleted: PodEvicted",
			fire: func(c *Controller) { c.onPodDelete(w0running) },
			want: []enqueued{podReq(bus.PodEvictedEvent, "w", "a-w-0")}},
		{name: "pod deleted while the watch was down: PodEvicted",
			fire: func(c *Controller) {
				c.onPodDelete(toolscache.DeletedFinalStateUnknown{Key: "ns/a-w-0", Obj: w0running})
			},
			want: []enqueued{podReq(bus.PodEvictedEvent, "w", "a-w-0")}},
		{name: "pod of no controller deleted: none",
			fire: func(c *Controller) { c.onPodDelete(orphan) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil, eventJob())
			for _, p := range tc.cached {
				f.cacheOwned(t, cache.Pods, p)
			}
			got := f.requestsOf(t, func() { tc.fire(f.c) })
			assertRequests(t, f.seen(t, got), tc.want)
		})
	}
}

// seen is the requests as the reconcile makes their events (seePod), from
// the cache as it is now.
func (f *fixture) seen(t *testing.T, reqs []enqueued) []enqueued {
	t.Helper()
	out := make([]enqueued, len(reqs))
	for i, e := range reqs {
		info, err := f.c.cfg.Cache.JobInfo(e.key)
		if err != nil || info == nil {
			t.Fatalf("job %s not cached: %v", e.key, err)
		}
		out[i] = enqueued{e.key, f.c.seePod(e.key, info.Job, info.Pods, e.req)}
	}
	return out
}

// The reconcile, not the handler, raises TaskCompleted and TaskFailed, from
// the cache as it is when it looks and the pod as its change showed it:
// two pods that finish together raise TaskCompleted once, a task made again
// raises it again, and a pod's restarts count as its change showed them.
func TestTaskEventsAreRaisedByTheReconcile(t *testing.T) {
	job := eventJob()
	w0running, w1running := podOf(job, "w", 0, corev1.PodRunning), podOf(job, "w", 1, corev1.PodRunning)
	w0done, w1done := changed(w0running, inPhase(corev1.PodSucceeded)), changed(w1running, inPhase(corev1.PodSucceeded))

	t.Run("two pods finishing together: TaskCompleted once", func(t *testing.T) {
		f := newFixture(t, nil, eventJob())
		f.cacheOwned(t, cache.Pods, w0done)
		f.cacheOwned(t, cache.Pods, w1done)
		got := f.requestsOf(t, func() {
			f.c.onPodUpdate(w0running, w0done)
			f.c.onPodUpdate(w1running, w1done)
		})
		assertRequests(t, f.seen(t, got), []enqueued{
			podReq(bus.TaskCompletedEvent, "w", "a-w-0"), podReq(bus.OutOfSyncEvent, "w", "a-w-1"),
		})
	})
	t.Run("the task made again completes again", func(t *testing.T) {
		f := newFixture(t, nil, eventJob())
		f.cacheOwned(t, cache.Pods, w0done)
		f.cacheOwned(t, cache.Pods, w1done)
		first := f.seen(t, f.requestsOf(t, func() { f.c.onPodUpdate(w1running, w1done) }))
		again := func(p *corev1.Pod) *corev1.Pod {
			p = p.DeepCopy()
			p.UID += "-again"
			return p
		}
		f.cacheOwned(t, cache.Pods, again(w0done))
		f.cacheOwned(t, cache.Pods, again(w1done))
		second := f.seen(t, f.requestsOf(t, func() { f.c.onPodUpdate(again(w1running), again(w1done)) }))
		want := []enqueued{podReq(bus.TaskCompletedEvent, "w", "a-w-1")}
		assertRequests(t, first, want)
		assertRequests(t, second, want)
	})
	t.Run("a succeeded pod the cache no longer holds still counts", func(t *testing.T) {
		f := newFixture(t, nil, eventJob())
		f.cacheOwned(t, cache.Pods, w1done)
		got := f.requestsOf(t, func() { f.c.onPodUpdate(w0running, w0done) })
		assertRequests(t, f.seen(t, got), []enqueued{podReq(bus.TaskCompletedEvent, "w", "a-w-0")})
	})
	t.Run("a retried request raises it again; the other pod's does not", func(t *testing.T) {
		f := newFixture(t, nil, eventJob())
		f.cacheOwned(t, cache.Pods, w0done)
		f.cacheOwned(t, cache.Pods, w1done)
		got := f.requestsOf(t, func() {
			f.c.onPodUpdate(w0running, w0done)
			f.c.onPodUpdate(w1running, w1done)
		})
		// The first request's reconcile failed after seePod: the dispatcher
		// hands the same request back.
		retried := append(got[:1:1], got...)
		assertRequests(t, f.seen(t, retried), []enqueued{
			podReq(bus.TaskCompletedEvent, "w", "a-w-0"), podReq(bus.TaskCompletedEvent, "w", "a-w-0"),
			podReq(bus.OutOfSyncEvent, "w", "a-w-1"),
		})
	})
	t.Run("the request's pod gone from the cache: still once", func(t *testing.T) {
		f := newFixture(t, nil, eventJob())
		f.cacheOwned(t, cache.Pods, w1done) // a-w-0 was deleted after it succeeded
		got := f.requestsOf(t, func() {
			f.c.onPodUpdate(w1running, w1done)
			f.c.onPodUpdate(w0running, w0done)
		})
		assertRequests(t, f.seen(t, got), []enqueued{
			podReq(bus.OutOfSyncEvent, "w", "a-w-1"), podReq(bus.TaskCompletedEvent, "w", "a-w-0"),
		})
		f.cacheOwned(t, cache.Pods, w0done)
		again := f.requestsOf(t, func() { f.c.onPodUpdate(w1running, w1done) })
		assertRequests(t, f.seen(t, again), []enqueued{podReq(bus.OutOfSyncEvent, "w", "a-w-1")})
	})
	t.Run("restarts count as the change showed them, though the pod has failed since", func(t *testing.T) {
		f := newFixture(t, nil, eventJob())
		f.cacheOwned(t, cache.Pods, changed(w0running, exited(1)))
		got := f.requestsOf(t, func() { f.c.onPodUpdate(w0running, changed(w0running, restarts(3))) })
		assertRequests(t, f.seen(t, got), []enqueued{podReq(bus.TaskFailedEvent, "w", "a-w-0")})
	})
}

// A PodGroup's phase change brings its Job back (Unknown as the event
// JobUnknown); a PodGroup write that keeps the phase does not. A PodGroup
// entering the cache is looked at as a phase change, one leaving it brings
// its Job back.
func TestPodGroupEventsMakeVolcanosRequests(t *testing.T) {
	job := eventJob()
	f := newFixture(t, nil, job)
	pg := func(phase scheduling.PodGroupPhase, rv string) *scheduling.PodGroup {
		p := f.podGroupOf(job)
		p.Status.Phase, p.ResourceVersion = phase, rv
		return p
	}
	stray := pg(scheduling.PodGroupRunning, "1")
	stray.OwnerReferences = nil
	sync := []enqueued{{"ns/a", request{Request: state.Request{Event: bus.OutOfSyncEvent}}}}
	unknown := []enqueued{{"ns/a", request{Request: state.Request{Event: bus.JobUnknownEvent}}}}
	for _, tc := range []struct {
		name string
		fire func(c *Controller)
		want []enqueued
	}{
		{"added: OutOfSync", func(c *Controller) { c.onPodGroupAdd(pg(scheduling.PodGroupPending, "1")) }, sync},
		{"added in phase Unknown: JobUnknown", func(c *Controller) { c.onPodGroupAdd(pg(scheduling.PodGroupUnknown, "1")) }, unknown},
		{"Pending to Inqueue: OutOfSync", func(c *Controller) {
			c.onPodGroupUpdate(pg(scheduling.PodGroupPending, "1"), pg(scheduling.PodGroupInqueue, "2"))
		}, sync},
		{"Running to Unknown: JobUnknown", func(c *Controller) {
			c.onPodGroupUpdate(pg(scheduling.PodGroupRunning, "1"), pg(scheduling.PodGroupUnknown, "2"))
		}, unknown},
		{"update keeping the phase: none", func(c *Controller) {
			c.onPodGroupUpdate(pg(scheduling.PodGroupRunning, "1"), pg(scheduling.PodGroupRunning, "2"))
		}, nil},
		{"PodGroup of no Job added: none", func(c *Controller) { c.onPodGroupAdd(stray) }, nil},
		{"deleted: OutOfSync", func(c *Controller) { c.onPodGroupDelete(pg(scheduling.PodGroupRunning, "1")) }, sync},
		{"deleted while the watch was down: OutOfSync", func(c *Controller) {
			c.onPodGroupDelete(toolscache.DeletedFinalStateUnknown{Key: "ns/x", Obj: pg(scheduling.PodGroupRunning, "1")})
		}, sync},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assertRequests(t, f.requestsOf(t, func() { tc.fire(f.c) }), tc.want)
		})
	}
}

// A Job's own updates bring it back only when its spec (generation), phase or
// deletion changed: a status write that keeps the phase is the controller's own
// bookkeeping. A Command for a Job becomes CommandIssued with its action and
// the Command to take, for the Job of the Command's own namespace whatever Job
// it names (a Command reaches no other namespace); one for a Queue is the queue
// controller's.
func TestJobAndCommandEventsMakeVolcanosRequests(t *testing.T) {
	base := eventJob()
	base.Status.State.Phase = batch.Running
	next := func(edit func(*batch.Job)) *batch.Job {
		j := base.DeepCopy()
		j.ResourceVersion = "11"
		edit(j)
		return j
	}
	now := metav1.Now()
	sync := []enqueued{{"ns/a", request{Request: state.Request{Event: bus.OutOfSyncEvent}}}}
	for _, tc := range []struct {
		name string
		fire func(c *Controller)
		want []enqueued
	}{
		{"Job added: OutOfSync", func(c *Controller) { c.onJobAdd(base) }, sync},
		{"spec changed (generation): OutOfSync", func(c *Controller) {
			c.onJobUpdate(base, next(func(j *batch.Job) { j.Generation++ }))
		}, sync},
		{"phase changed: OutOfSync", func(c *Controller) {
			c.onJobUpdate(base, next(func(j *batch.Job) { j.Status.State.Phase = batch.Completing }))
		}, sync},
		{"deletion begun: OutOfSync", func(c *Controller) {
			c.onJobUpdate(base, next(func(j *batch.Job) { j.DeletionTimestamp = &now }))
		}, sync},
		{"status write keeping the phase (counts, version): none", func(c *Controller) {
			c.onJobUpdate(base, next(func(j *batch.Job) { j.Status.Running, j.Status.Version = 1, 3 }))
		}, nil},
		{"same resourceVersion (a resync): none", func(c *Controller) {
			j := base.DeepCopy()
			j.Generation++
			c.onJobUpdate(base, j)
		}, nil},
		{"Command for the Job: CommandIssued with its action", func(c *Controller) {
			c.onCommand(&bus.Command{
				ObjectMeta:   metav1.ObjectMeta{Namespace: "ns", Name: "abort-a", UID: "cmd-uid"},
				Action:       string(bus.AbortJobAction),
				TargetObject: &metav1.OwnerReference{Kind: "Job", Name: "a"},
			})
		}, []enqueued{{"ns/a", request{
			Request: state.Request{Event: bus.CommandIssuedEvent, Action: bus.AbortJobAction},
			command: &kit.CommandRef{Namespace: "ns", Name: "abort-a", UID: "cmd-uid"},
		}}}},
		{"Command in another namespace naming the Job: a request for a Job of its own namespace", func(c *Controller) {
			c.onCommand(&bus.Command{
				ObjectMeta:   metav1.ObjectMeta{Namespace: "tenant", Name: "abort-a", UID: "cmd-uid"},
				Action:       string(bus.AbortJobAction),
				TargetObject: &metav1.OwnerReference{Kind: "Job", Name: "a", UID: "uid-of-ns/a"},
			})
		}, []enqueued{{"tenant/a", request{
			Request: state.Request{Event: bus.CommandIssuedEvent, Action: bus.AbortJobAction},
			command: &kit.CommandRef{Namespace: "tenant", Name: "abort-a", UID: "cmd-uid"},
		}}}},
		{"Command for a Queue: none", func(c *Controller) {
			c.onCommand(&bus.Command{
				ObjectMeta:   metav1.ObjectMeta{Namespace: "ns", Name: "close-q"},
				Action:       string(bus.CloseQueueAction),
				TargetObject: &metav1.OwnerReference{Kind: "Queue", Name: "q"},
			})
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil, eventJob())
			assertRequests(t, f.requestsOf(t, func() { tc.fire(f.c) }), tc.want)
		})
	}
}

// A pod's change, when the reconcile sees it (seePod), cancels the action a
// policy timeout postponed for it as Volcano's rule says (cancels): a PodPending timeout ends when the pod is no
// longer pending (it runs, fails, succeeds, goes), not when a pending pod
// changes otherwise; a PodFailed or PodEvicted timeout ends when the pod runs
// again. Another pod's change keeps it.
func TestPodThatMovesOnCancelsItsPostponedAction(t *testing.T) {
	job := eventJob()
	w0, w1 := podOf(job, "w", 0, corev1.PodPending), podOf(job, "w", 1, corev1.PodPending)
	w0failed := changed(w0, exited(1))
	runs := func(c *Controller) { c.onPodUpdate(w0, changed(w0, inPhase(corev1.PodRunning))) }
	for _, tc := range []struct {
		name    string
		started bus.Event
		fire    func(c *Controller)
		keeps   bool
	}{
		{"pending, it runs", bus.PodPendingEvent, runs, false},
		{"pending, it fails", bus.PodPendingEvent, func(c *Controller) { c.onPodUpdate(w0, w0failed) }, false},
		{"pending, it succeeds", bus.PodPendingEvent, func(c *Controller) {
			c.onPodUpdate(w0, changed(w0, inPhase(corev1.PodSucceeded)))
		}, false},
		{"pending, it is deleted", bus.PodPendingEvent, func(c *Controller) { c.onPodDelete(w0) }, false},
		{"pending, still Pending with a node", bus.PodPendingEvent, func(c *Controller) {
			c.onPodUpdate(w0, changed(w0, func(p *corev1.Pod) { p.Spec.NodeName = "n1" }))
		}, true},
		{"pending, another pod runs", bus.PodPendingEvent, func(c *Controller) {
			c.onPodUpdate(w1, changed(w1, inPhase(corev1.PodRunning)))
		}, true},
		{"failed, it runs again", bus.PodFailedEvent, runs, false},
		{"failed, changed again while failed", bus.PodFailedEvent, func(c *Controller) {
			c.onPodUpdate(w0failed, changed(w0failed, func(p *corev1.Pod) { p.ResourceVersion = "3" }))
		}, true},
		{"failed, it is deleted", bus.PodFailedEvent, func(c *Controller) { c.onPodDelete(w0failed) }, true},
		{"evicted, it runs again", bus.PodEvictedEvent, runs, false},
		{"task failed, it runs", bus.TaskFailedEvent, runs, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil, eventJob())
			token := f.c.memory.delays.add("ns/a", "a-w-0", tc.started)
			f.seen(t, f.requestsOf(t, func() { tc.fire(f.c) }))
			if kept := f.c.memory.delays.take("ns/a", token); kept != tc.keeps {
				t.Fatalf("postponed action still pending: %v, want %v", kept, tc.keeps)
			}
		})
	}
}

func assertRequests(t *testing.T, got, want []enqueued) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("requests %+v, want %+v", got, want)
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.key != w.key || g.req.Request != w.req.Request || g.req.delay != w.req.delay || g.req.ttl != w.req.ttl ||
			(g.req.command == nil) != (w.req.command == nil) || (g.req.command != nil && *g.req.command != *w.req.command) {
			t.Fatalf("request %d: %s %+v (command %+v), want %s %+v (command %+v)",
				i, g.key, g.req, g.req.command, w.key, w.req, w.req.command)
		}
	}
}

// A postponed action whose pod has moved on in the cache is cancelled when it
// is due, even if the pod's own request waits behind it in the mailbox.
func TestPostponedActionChecksItsPodWhenDue(t *testing.T) {
	job := eventJob()
	w0 := podOf(job, "w", 0, corev1.PodPending)
	for _, tc := range []struct {
		name    string
		started bus.Event
		cached  *corev1.Pod // a-w-0 as the cache shows it when the action is due; nil: gone
		runs    bool
	}{
		{"pending, still pending", bus.PodPendingEvent, w0, true},
		{"pending, running now", bus.PodPendingEvent, changed(w0, inPhase(corev1.PodRunning)), false},
		{"pending, gone", bus.PodPendingEvent, nil, false},
		{"failed, still failed", bus.PodFailedEvent, changed(w0, exited(1)), true},
		{"failed, running again", bus.PodFailedEvent, changed(w0, inPhase(corev1.PodRunning)), false},
		{"evicted, gone", bus.PodEvictedEvent, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil, eventJob())
			if tc.cached != nil {
				f.cacheOwned(t, cache.Pods, tc.cached)
			}
			info, err := f.c.cfg.Cache.JobInfo("ns/a")
			if err != nil || info == nil {
				t.Fatalf("job not cached: %v", err)
			}
			req := podReq(tc.started, "w", "a-w-0").req
			req.Action, req.delay = bus.RestartJobAction, f.c.memory.delays.add("ns/a", "a-w-0", tc.started)
			if _, runs := f.c.choose("ns/a", info.Job, info.Pods, req); runs != tc.runs {
				t.Fatalf("the postponed action runs: %v, want %v", runs, tc.runs)
			}
		})
	}
}

// A task of an absurd replica count is judged by counting its pods, never
// by anything the size of the count.
func TestCompletionsOfAnAbsurdTask(t *testing.T) {
	var c completions
	pods := map[string]*corev1.Pod{"a-w-0": {Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}}
	allocs := testing.AllocsPerRun(10, func() {
		if c.news("ns/a", "w", math.MaxInt32, pods, "a-w-1", "uid") {
			t.Fatal("TaskCompleted for 2 of 2147483647 pods")
		}
	})
	if allocs > 0 {
		t.Errorf("%v allocations to find 2 of 2147483647 pods short", allocs)
	}
	if c.Len() != 0 {
		t.Errorf("%d Jobs remembered, want none", c.Len())
	}
}
