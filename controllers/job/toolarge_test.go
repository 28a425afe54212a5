package job

import (
	"github.com/ringfire/ringfire/controllers/job/plan"

	"context"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/controllers/job/state"
)

// A Job beyond the replica limits, on a cluster whose CRDs did not refuse it, is held: a
// Warning Event and its status say what to fix, no PodGroup, pod or plugin object is made, and
// the reconcile costs what a small Job's does. Looked at again unchanged, it is not told twice.
func TestReconcileHoldsJobBeyondTheLimits(t *testing.T) {
	ctx := context.Background()
	job := testJob("poison", task("worker", math.MaxInt32))
	job.Spec.Plugins = map[string][]string{"svc": nil, "tensorflow": nil}
	f := newFixture(t, nil, job)
	sync := request{Request: state.Request{Event: bus.OutOfSyncEvent}}

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if err := f.c.reconcile(ctx, "ns/poison", sync); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("the reconcile of a Job of 2147483647 replicas allocated %d KiB", allocated>>10)
	if allocated > 8<<20 {
		t.Errorf("the reconcile allocated %d MiB, want a few KiB", allocated>>20)
	}

	want := "spec.tasks ask for 2147483647 replicas in all; the tensorflow plugin writes every replica's host into pods, " +
		"so ringfire runs at most 1024 per Job: lower the replicas, or split the work into several Jobs (docs/jobs.md, Limits)"
	events := f.recorded()
	if len(events) != 1 || events[0] != "Warning TooLarge "+want {
		t.Errorf("events %q, want one: Warning TooLarge %s", events, want)
	}
	stored, err := f.vc.BatchV1alpha1().Jobs("ns").Get(ctx, "poison", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st := stored.Status.State; st.Phase != batch.Pending || st.Reason != state.ReasonTooLarge || st.Message != want {
		t.Errorf("status.state %+v, want Pending, TooLarge, %q", st, want)
	}
	for _, a := range append(f.kube.Actions(), f.vc.Actions()...) {
		if a.GetVerb() == "create" {
			t.Errorf("created a %s for a Job beyond the limits", a.GetResource().Resource)
		}
	}

	f.cacheJob(t, stored)
	if err := f.c.reconcile(ctx, "ns/poison", sync); err != nil {
		t.Fatal(err)
	}
	if again := f.recorded(); len(again) != 0 {
		t.Errorf("told again: %q", again)
	}
}

// A sync builds at most one batch of pods, however many replicas are missing; the rest come
// when those reach the cache.
func TestSyncCreatesOneBatchOfPods(t *testing.T) {
	ctx := context.Background()
	job := testJob("wide", task("worker", plan.MaxCreateBatch+44))
	job.Status.State.Phase = batch.Pending
	f := newFixture(t, nil, job)
	f.admit(t, job)
	if err := f.c.reconcile(ctx, "ns/wide", request{Request: state.Request{Event: bus.OutOfSyncEvent}}); err != nil {
		t.Fatal(err)
	}
	created := creates(f.kube, "pods")
	if len(created) != plan.MaxCreateBatch {
		t.Errorf("one sync created %d pods, want %d (one batch)", len(created), plan.MaxCreateBatch)
	}
	for _, name := range created {
		if !strings.HasPrefix(name, "wide-worker-") {
			t.Errorf("created %s", name)
		}
	}
}

// TestReconcileLargestJobCost reconciles a running Job of state.MaxReplicas pods, all in the
// cache: what the holder of the largest admitted Job spends on each look at it (docs/jobs.md,
// "Limits"). The work is a few allocations per pod that exists, nothing more.
func TestReconcileLargestJobCost(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 10,000 pods")
	}
	ctx := context.Background()
	job := testJob("large", task("worker", state.MaxReplicas))
	job.Status.State.Phase = batch.Running
	f := newFixture(t, nil, job)
	f.admit(t, job)
	for i := range state.MaxReplicas {
		f.cacheOwned(t, cache.Pods, podOf(job, "worker", i, corev1.PodRunning))
	}
	sync := request{Request: state.Request{Event: bus.OutOfSyncEvent}}
	reconcile := func() {
		if err := f.c.reconcile(ctx, "ns/large", sync); err != nil {
			t.Fatal(err)
		}
	}
	reconcile() // writes the counts once
	if created := creates(f.kube, "pods"); len(created) != 0 {
		t.Fatalf("created %d pods with every pod there", len(created))
	}
	start := time.Now()
	allocs := testing.AllocsPerRun(5, reconcile)
	t.Logf("a reconcile of %d running pods: %.0f allocations, %v", state.MaxReplicas, allocs, time.Since(start)/6)
	if allocs > 4*state.MaxReplicas {
		t.Errorf("%.0f allocations for %d pods", allocs, state.MaxReplicas)
	}
}

// A Job within the replica limits whose template carries 1 MiB of labels (on Volcano's CRDs,
// which take it) is held the same way: no pod is built or made of it.
func TestReconcileHoldsJobOfLargeTemplate(t *testing.T) {
	ctx := context.Background()
	job := testJob("labelled", task("worker", 400))
	labels := map[string]string{}
	for i := range 16000 { // 16,000 labels of 64 bytes: 1 MiB
		labels[fmt.Sprintf("example.com/l%05d", i)] = strings.Repeat("v", 46)
	}
	job.Spec.Tasks[0].Template.Labels = labels
	f := newFixture(t, nil, job)
	f.admit(t, job)
	if err := f.c.reconcile(ctx, "ns/labelled", request{Request: state.Request{Event: bus.OutOfSyncEvent}}); err != nil {
		t.Fatal(err)
	}
	want := "spec.tasks[0].template.metadata has 16000 labels; ringfire takes at most 256"
	events := f.recorded()
	if len(events) != 1 || !strings.HasPrefix(events[0], "Warning TooLarge "+want) {
		t.Errorf("events %q, want one: Warning TooLarge %s...", events, want)
	}
	if created := creates(f.kube, "pods"); len(created) != 0 {
		t.Errorf("created %d pods of a template beyond the limits", len(created))
	}
}
