package job

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/controllers/job/build"
	"github.com/ringfire/ringfire/controllers/job/plan"
	"github.com/ringfire/ringfire/controllers/job/state"
	"github.com/ringfire/ringfire/shard"
)

// fixture is a Job controller over fake clientsets and an unstarted cache
// whose indexes the test fills itself: no informer runs, no handler fires but
// those the test calls. Events go to a FakeRecorder.
type fixture struct {
	c      *Controller
	kube   *kubefake.Clientset
	vc     *vcfake.Clientset
	cache  *cache.Cache
	events *record.FakeRecorder
}

// newFixture builds the controller (no merging of count-only status writes
// unless tune sets StatusCoalesce) with the Queue "default" in the cache, and
// puts jobs in the Volcano clientset and in the cache.
func newFixture(t *testing.T, tune func(*Config), jobs ...*batch.Job) *fixture {
	t.Helper()
	objs := make([]runtime.Object, len(jobs))
	for i, j := range jobs {
		objs[i] = j
	}
	kube, vc := kubefake.NewClientset(), vcfake.NewSimpleClientset(objs...)
	cch := cache.New(cache.Config{Kube: kube, Volcano: vc})
	cfg := DefaultConfig()
	cfg.Kube, cfg.Volcano, cfg.Cache, cfg.Ownership, cfg.StatusCoalesce = kube, vc, cch, shard.HoldAll{}, -1
	if tune != nil {
		tune(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{c: c, kube: kube, vc: vc, cache: cch, events: record.NewFakeRecorder(1000)}
	c.Recorder = f.events
	queue := &scheduling.Queue{ObjectMeta: metav1.ObjectMeta{Name: state.DefaultQueue}}
	if err := cch.Queues().Informer().GetIndexer().Add(queue); err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		f.cacheJob(t, j)
	}
	return f
}

// cacheJob puts job in the cache's index of Jobs, in full (the cache has no
// slot count, so it keeps every Job in full).
func (f *fixture) cacheJob(t *testing.T, job *batch.Job) {
	t.Helper()
	if err := f.cache.Jobs().GetIndexer().Update(job); err != nil {
		t.Fatal(err)
	}
}

// cacheOwned puts objects a Job owns in the cache's index of r.
func (f *fixture) cacheOwned(t *testing.T, r cache.Resource, objs ...runtime.Object) {
	t.Helper()
	for _, o := range objs {
		if err := f.cache.Owned(r).Indexer().Update(o); err != nil {
			t.Fatal(err)
		}
	}
}

// admit makes the Job's PodGroup as the controller would, admitted by the
// scheduler (phase Running), in the Volcano clientset and the cache.
func (f *fixture) admit(t *testing.T, job *batch.Job) {
	t.Helper()
	pg := f.podGroupOf(job)
	pg.Status.Phase = scheduling.PodGroupRunning
	if _, err := f.vc.SchedulingV1beta1().PodGroups(pg.Namespace).Create(context.Background(), pg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.cacheOwned(t, cache.PodGroups, pg)
}

// podGroupOf is the Job's PodGroup as the controller creates it, with a UID
// and resourceVersion "1"; not stored anywhere.
func (f *fixture) podGroupOf(job *batch.Job) *scheduling.PodGroup {
	pg := build.PodGroup(f.c.defaulted(job), f.c.slotOf(keyOf(job)), f.c.priorityOf)
	pg.UID, pg.ResourceVersion = "pg-uid", "1"
	return pg
}

// recorded drains the events recorded so far, as "Type Reason message".
func (f *fixture) recorded() []string {
	var out []string
	for {
		select {
		case e := <-f.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// creates lists the names of the objects of resource created through kube.
func creates(kube *kubefake.Clientset, resource string) []string {
	var names []string
	for _, a := range kube.Actions() {
		if c, ok := a.(k8stesting.CreateAction); ok && a.GetVerb() == "create" && a.GetResource().Resource == resource {
			names = append(names, c.GetObject().(metav1.Object).GetName())
		}
	}
	return names
}

// testJob is a Job of the given tasks (name and replicas, in order), in
// namespace "ns", with a UID and version 2.
func testJob(name string, tasks ...batch.TaskSpec) *batch.Job {
	return &batch.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: batch.SchemeGroupVersion.String(), Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: name, UID: types.UID("uid-" + name), ResourceVersion: "10", Generation: 1,
		},
		Spec:   batch.JobSpec{Tasks: tasks},
		Status: batch.JobStatus{Version: 2},
	}
}

func task(name string, replicas int32) batch.TaskSpec {
	return batch.TaskSpec{Name: name, Replicas: replicas, Template: corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}}
}

// podOf is the pod at index of the named task of job as the controller
// creates it, in phase, at resourceVersion "1".
func podOf(job *batch.Job, taskName string, index int, phase corev1.PodPhase) *corev1.Pod {
	for i := range job.Spec.Tasks {
		if t := &job.Spec.Tasks[i]; t.Name == taskName {
			pod := build.Pod(job, t, index, shard.SlotOf(keyOf(job), shard.DefaultSlots))
			pod.UID = types.UID("uid-" + pod.Name)
			pod.ResourceVersion = "1"
			pod.Status.Phase = phase
			return pod
		}
	}
	panic("no task " + taskName)
}

// enqueued is one request the controller put in a Job's mailbox.
type enqueued struct {
	key string
	req request
}

// requestsOf calls fire with the controller's dispatcher replaced by one that
// records what it is given, and returns the requests fire enqueued, in order.
// The dispatcher holds them until fire returns, so their number is known
// before any is handled.
func (f *fixture) requestsOf(t *testing.T, fire func()) []enqueued {
	t.Helper()
	var mu sync.Mutex
	var got []enqueued
	cfg := shard.DefaultDispatcherConfig[request]()
	cfg.Name, cfg.Workers, cfg.Ownership = "job-test", 1, shard.HoldAll{}
	cfg.Handler = func(_ context.Context, key string, req request) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, enqueued{key, req})
		return nil
	}
	d, err := shard.NewDispatcher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.c.Disp = d
	fire()
	n := d.Len()
	if n == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		k := len(got)
		mu.Unlock()
		if k >= n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d requests enqueued, %d handled after 10s", n, k)
		}
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	return append([]enqueued(nil), got...)
}

// hasEvent reports whether one of events starts with prefix.
func hasEvent(events []string, prefix string) bool {
	for _, e := range events {
		if strings.HasPrefix(e, prefix) {
			return true
		}
	}
	return false
}

// writeStatusOf writes the status plan.Status computes for step and counts,
// as a reconcile would.
func (c *Controller) writeStatusOf(ctx context.Context, key string, job *batch.Job, controlled map[string]string, step state.Step, spec state.Spec, counts plan.Counts) error {
	return c.writeStatus(ctx, key, job, plan.Status(plan.StatusInput{
		Job: job, Controlled: controlled, Step: step, Spec: spec, Counts: counts, Now: c.clock.Now(),
	}))
}
