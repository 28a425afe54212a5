package job

import (
	"github.com/ringfire/ringfire/controllers/job/plan"

	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/controllers/job/state"
)

// A task that dependsOn others waits until they run: each of them (iteration
// all, the default) or one of them (any) has at least its minimum of pods
// (minAvailable, else its replicas; never less than one) Running or Succeeded.
// Pending, Failed and terminating pods do not count, nor does a task the Job
// does not have.
func TestDependenciesReady(t *testing.T) {
	minOf := func(ts batch.TaskSpec, n int32) batch.TaskSpec { ts.MinAvailable = &n; return ts }
	job := testJob("d",
		minOf(task("a", 3), 1), // needs 1 of 3
		task("b", 2),           // needs both
		minOf(task("z", 2), 0), // minimum 0: still needs one
		task("waiter", 1),
	)
	now := metav1.Now()
	type pods map[string][]corev1.PodPhase // by task, one pod per phase listed
	const (
		run  = corev1.PodRunning
		done = corev1.PodSucceeded
		pend = corev1.PodPending
		fail = corev1.PodFailed
	)
	for _, tc := range []struct {
		name        string
		dependsOn   *batch.DependsOn
		pods        pods
		terminating []string // pod names marked for deletion
		want        bool
	}{
		{"no dependsOn", nil, nil, nil, true},
		{"empty dependsOn", &batch.DependsOn{}, nil, nil, true},
		{"all: a at its minimum, b one short", &batch.DependsOn{Name: []string{"a", "b"}},
			pods{"a": {run}, "b": {run, pend}}, nil, false},
		{"all: both at their minimum", &batch.DependsOn{Name: []string{"a", "b"}},
			pods{"a": {run}, "b": {run, done}}, nil, true},
		{"all is the default iteration: b missing", &batch.DependsOn{Name: []string{"a", "b"}},
			pods{"a": {run, run, run}}, nil, false},
		{"explicit all: both ready", &batch.DependsOn{Name: []string{"a", "b"}, Iteration: batch.IterationAll},
			pods{"a": {done}, "b": {done, done}}, nil, true},
		{"any: one of them ready", &batch.DependsOn{Name: []string{"a", "b"}, Iteration: batch.IterationAny},
			pods{"a": {pend}, "b": {run, run}}, nil, true},
		{"any: none ready", &batch.DependsOn{Name: []string{"a", "b"}, Iteration: batch.IterationAny},
			pods{"a": {pend, fail}, "b": {run}}, nil, false},
		{"Pending and Failed pods do not count", &batch.DependsOn{Name: []string{"b"}},
			pods{"b": {pend, fail}}, nil, false},
		{"a terminating Running pod does not count", &batch.DependsOn{Name: []string{"b"}},
			pods{"b": {run, run}}, []string{"d-b-1"}, false},
		{"minAvailable 0 still needs one pod", &batch.DependsOn{Name: []string{"z"}},
			pods{"z": {pend, pend}}, nil, false},
		{"minAvailable 0, one running", &batch.DependsOn{Name: []string{"z"}},
			pods{"z": {run}}, nil, true},
		{"a task the Job does not have never runs", &batch.DependsOn{Name: []string{"nosuch"}},
			nil, nil, false},
		{"any over a missing task and a ready one", &batch.DependsOn{Name: []string{"nosuch", "a"}, Iteration: batch.IterationAny},
			pods{"a": {run}}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := job.DeepCopy()
			j.Spec.Tasks[3].DependsOn = tc.dependsOn
			info := &cache.JobInfo{Job: j, Pods: map[string]map[string]*corev1.Pod{}}
			for taskName, phases := range tc.pods {
				info.Pods[taskName] = map[string]*corev1.Pod{}
				for i, phase := range phases {
					p := podOf(j, taskName, i, phase)
					if slices.Contains(tc.terminating, p.Name) {
						p.DeletionTimestamp = &now
					}
					info.Pods[taskName][p.Name] = p
				}
			}
			if got := plan.DependenciesReady(j, &j.Spec.Tasks[3], info.Pods); got != tc.want {
				t.Fatalf("dependenciesReady = %v, want %v", got, tc.want)
			}
		})
	}
}

// A reconcile of an admitted Job creates the pods of the tasks without
// dependencies first, and those of a dependent task only once the tasks it
// dependsOn have their pods Running: a Pending pod of theirs holds it back.
func TestReconcileCreatesDependentTaskOnceItsDependencyRuns(t *testing.T) {
	ctx := context.Background()
	worker := task("worker", 2)
	worker.DependsOn = &batch.DependsOn{Name: []string{"ps"}}
	job := testJob("d", task("ps", 1), worker)
	job.Status.State.Phase = batch.Pending
	f := newFixture(t, nil, job)
	f.admit(t, job)
	sync := request{Request: state.Request{Event: bus.OutOfSyncEvent}}

	if err := f.c.reconcile(ctx, "ns/d", sync); err != nil {
		t.Fatal(err)
	}
	if got := creates(f.kube, "pods"); !slices.Equal(got, []string{"d-ps-0"}) {
		t.Fatalf("first reconcile created pods %v, want only d-ps-0 (worker waits for ps)", got)
	}

	// ps's pod is in the cache, Pending: the worker still waits.
	f.cacheOwned(t, cache.Pods, podOf(job, "ps", 0, corev1.PodPending))
	f.kube.ClearActions()
	if err := f.c.reconcile(ctx, "ns/d", sync); err != nil {
		t.Fatal(err)
	}
	if got := creates(f.kube, "pods"); len(got) != 0 {
		t.Fatalf("with ps Pending the reconcile created %v, want nothing", got)
	}

	// ps runs: the worker's pods are created.
	f.cacheOwned(t, cache.Pods, podOf(job, "ps", 0, corev1.PodRunning))
	if err := f.c.reconcile(ctx, "ns/d", sync); err != nil {
		t.Fatal(err)
	}
	got := creates(f.kube, "pods")
	slices.Sort(got)
	if !slices.Equal(got, []string{"d-worker-0", "d-worker-1"}) {
		t.Fatalf("with ps Running the reconcile created %v, want d-worker-0 and d-worker-1", got)
	}
}
