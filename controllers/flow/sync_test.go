package flow

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	flowv1 "volcano.sh/apis/pkg/apis/flow/v1alpha1"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"
	vcinformers "volcano.sh/apis/pkg/client/informers/externalversions"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/shard"
)

// TestMain turns off client-go's streaming lists: Volcano's generated fake clientset does not
// send the bookmark that ends the initial events.
func TestMain(m *testing.M) {
	os.Setenv("KUBE_FEATURE_WatchListClient", "false")
	os.Exit(m.Run())
}

// fixture is a Flows controller over fake clients whose informers are filled by hand (never
// started), and a fake clock: reconcile runs as a plain function.
type fixture struct {
	t     *testing.T
	c     *Flows
	vc    *vcfake.Clientset
	clock *clocktesting.FakeClock
	valid error
	rv    int
}

const ns = "ns"

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{t: t, vc: vcfake.NewSimpleClientset(), clock: clocktesting.NewFakeClock(t0)}
	inf := vcinformers.NewSharedInformerFactory(f.vc, 0)
	cfg := DefaultConfig()
	cfg.Kube, cfg.Volcano, cfg.Ownership = kubefake.NewSimpleClientset(), f.vc, shard.HoldAll{S: 64}
	cfg.Valid, cfg.Clock = func() error { return f.valid }, f.clock
	cfg.JobFlows, cfg.JobTemplates = inf.Flow().V1alpha1().JobFlows(), inf.Flow().V1alpha1().JobTemplates()
	cfg.Jobs = inf.Batch().V1alpha1().Jobs().Informer()
	cfg.Expectations = cache.NewExpectations(0)
	c, err := NewFlows(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Recorder = record.NewFakeRecorder(100)
	f.c = c
	return f
}

// add puts objects in the API server and in the informers.
func (f *fixture) add(objs ...runtime.Object) {
	f.t.Helper()
	ctx := context.Background()
	for _, obj := range objs {
		f.rv++
		var err error
		switch o := obj.(type) {
		case *flowv1.JobFlow:
			o.ResourceVersion = fmt.Sprint(f.rv)
			if _, err = f.vc.FlowV1alpha1().JobFlows(ns).Create(ctx, o, metav1.CreateOptions{}); err == nil {
				err = f.c.flowInf.GetIndexer().Add(o)
			}
		case *flowv1.JobTemplate:
			o.ResourceVersion = fmt.Sprint(f.rv)
			if _, err = f.vc.FlowV1alpha1().JobTemplates(ns).Create(ctx, o, metav1.CreateOptions{}); err == nil {
				err = f.c.tmplInf.GetIndexer().Add(o)
			}
		case *batch.Job:
			o.ResourceVersion = fmt.Sprint(f.rv)
			if _, err = f.vc.BatchV1alpha1().Jobs(ns).Create(ctx, o, metav1.CreateOptions{}); err == nil {
				err = f.c.jobInf.GetIndexer().Add(o)
			}
		}
		if err != nil {
			f.t.Fatal(err)
		}
	}
	f.vc.ClearActions()
}

// writes returns the verbs and resources of the writes since the last call.
func (f *fixture) writes() []string {
	var out []string
	for _, a := range f.vc.Actions() {
		if a.GetVerb() == "get" || a.GetVerb() == "list" || a.GetVerb() == "watch" {
			continue
		}
		w := a.GetVerb() + " " + a.GetResource().Resource
		if sub := a.GetSubresource(); sub != "" {
			w += "/" + sub
		}
		if c, ok := a.(k8stesting.CreateAction); ok && a.GetVerb() == "create" {
			w += " " + c.GetObject().(metav1.Object).GetName()
		}
		out = append(out, w)
	}
	f.vc.ClearActions()
	return out
}

func (f *fixture) reconcile(key string) {
	f.t.Helper()
	if err := f.c.reconcile(context.Background(), key, request{}); err != nil {
		f.t.Fatalf("reconcile %s: %v", key, err)
	}
}

func flowOf(name string, steps ...flowv1.Flow) *flowv1.JobFlow {
	return &flowv1.JobFlow{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-flow-" + name)}, Spec: flowv1.JobFlowSpec{Flows: steps}}
}

func templateOf(name string) *flowv1.JobTemplate {
	return &flowv1.JobTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: batch.JobSpec{
		Tasks: []batch.TaskSpec{{Name: "main", Replicas: 1, Template: corev1.PodTemplateSpec{}}},
	}}
}

// made is the Job the flow made for step, as the informer would show it in phase.
func (f *fixture) made(jf *flowv1.JobFlow, step string, phase batch.JobPhase) *batch.Job {
	job, err := f.vc.BatchV1alpha1().Jobs(ns).Get(context.Background(), JobName(jf.Name, step), metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	job.Status.State.Phase = phase
	job.CreationTimestamp = metav1.NewTime(t0)
	return job
}

func TestReconcileMakesEachStepOnce(t *testing.T) {
	f := newFixture(t)
	jf := flowOf("etl", step("a"), step("b", "a"))
	f.add(jf, templateOf("a"), templateOf("b"))
	key := ns + "/etl"

	f.reconcile(key)
	if got := f.writes(); len(got) != 2 || got[0] != "create jobs etl-a" || got[1] != "update jobflows/status" {
		t.Fatalf("first reconcile wrote %v, want the create of etl-a and the status", got)
	}
	// The informer has not shown etl-a yet: it is not made again.
	f.reconcile(key)
	for _, w := range f.writes() {
		if w == "create jobs etl-a" {
			t.Fatal("etl-a created again before the informer showed it")
		}
	}
	a := f.made(jf, "a", batch.Running)
	if err := f.c.jobInf.GetIndexer().Add(a); err != nil {
		t.Fatal(err)
	}
	f.c.onJob(a, false)
	f.reconcile(key)
	for _, w := range f.writes() {
		if w == "create jobs etl-b" {
			t.Fatal("etl-b made while etl-a runs")
		}
	}
	a.Status.State.Phase = batch.Completed
	f.c.onJob(a, false)
	f.clock.Step(2 * time.Second)
	f.reconcile(key)
	got := f.writes()
	if len(got) == 0 || got[0] != "create jobs etl-b" {
		t.Errorf("writes %v once etl-a Completed, want the create of etl-b first", got)
	}
}

func TestReconcileMakesNothingFromAStaleFlow(t *testing.T) {
	f := newFixture(t)
	jf := flowOf("done", step("a"))
	f.add(jf, templateOf("a"))
	// The API server has moved on: the flow Succeeded and deleted its Jobs. The informer's
	// copy still says nothing of it.
	live := jf.DeepCopy()
	live.ResourceVersion = "99"
	live.Status.State.Phase = flowv1.Succeed
	live.Status.JobStatusList = []flowv1.JobStatus{{Name: "done-a", State: batch.Completed}}
	if _, err := f.vc.FlowV1alpha1().JobFlows(ns).UpdateStatus(context.Background(), live, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.vc.ClearActions()
	f.reconcile(ns + "/done")
	f.reconcile(ns + "/done") // the requeue, from the flow read afresh
	if got := f.writes(); len(got) != 0 {
		t.Errorf("writes %v from a stale copy of a Succeeded flow, want none", got)
	}
}

func TestReconcileWritesNothingWithoutOwnership(t *testing.T) {
	f := newFixture(t)
	f.add(flowOf("etl", step("a")), templateOf("a"))
	f.valid = errors.New("lease expired")
	err := f.c.reconcile(context.Background(), ns+"/etl", request{})
	if !errors.Is(err, shard.ErrNotOwner) {
		t.Errorf("reconcile: %v, want ErrNotOwner", err)
	}
	if got := f.writes(); len(got) != 0 {
		t.Errorf("writes %v past the fence, want none", got)
	}
}

func TestStatusChangesWithoutAPhaseAreMerged(t *testing.T) {
	f := newFixture(t)
	jf := flowOf("busy", step("a"), step("b"))
	f.add(jf, templateOf("a"), templateOf("b"))
	key := ns + "/busy"
	f.reconcile(key) // creates both, writes the status (Pending)
	f.writes()
	a, b := f.made(jf, "a", batch.Pending), f.made(jf, "b", batch.Pending)
	for _, j := range []*batch.Job{a, b} {
		if err := f.c.jobInf.GetIndexer().Add(j); err != nil {
			t.Fatal(err)
		}
	}
	latest, err := f.vc.FlowV1alpha1().JobFlows(ns).Get(context.Background(), "busy", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.c.flowInf.GetIndexer().Update(latest); err != nil {
		t.Fatal(err)
	}
	f.vc.ClearActions()
	f.clock.Step(100 * time.Millisecond)
	f.reconcile(key) // the Jobs' phases moved, not the flow's: held back
	if got := f.writes(); len(got) != 0 {
		t.Errorf("writes %v within the window, want none", got)
	}
	a.Status.State.Phase = batch.Running // now the flow's phase moves: written at once
	f.clock.Step(100 * time.Millisecond)
	f.reconcile(key)
	got, err := f.vc.FlowV1alpha1().JobFlows(ns).Get(context.Background(), "busy", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if w := f.writes(); len(w) != 1 || got.Status.State.Phase != flowv1.Running {
		t.Fatalf("writes %v, phase %q; want one write, Running", w, got.Status.State.Phase)
	}
	// The history kept the Pending that was held back, not only what was written.
	for _, js := range got.Status.JobStatusList {
		if js.Name == "busy-a" && (len(js.RunningHistories) != 2 || js.RunningHistories[0].State != batch.Pending) {
			t.Errorf("busy-a's history %+v, want Pending then Running", js.RunningHistories)
		}
	}
}
