package sidebyside

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	flowv1 "volcano.sh/apis/pkg/apis/flow/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// nsPrefix marks the namespaces of scenarios: the recorder keeps nothing else.
const nsPrefix = "sbs-"

// ownedKinds are the kinds of object a Job may own besides pods and its PodGroup, watched for
// the table's "objects" rows.
var ownedKinds = map[string]schema.GroupVersionResource{
	"Service":       {Version: "v1", Resource: "services"},
	"ConfigMap":     {Version: "v1", Resource: "configmaps"},
	"Secret":        {Version: "v1", Resource: "secrets"},
	"PVC":           {Version: "v1", Resource: "persistentvolumeclaims"},
	"NetworkPolicy": {Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"},
}

// Recorder keeps, for every scenario namespace of one side, what the API server reported of
// its Jobs, pods, PodGroups, CronJobs and the other objects Jobs own, from watches started
// before the scenarios.
type Recorder struct {
	mu  sync.Mutex
	nss map[string]*nsRecord
}

// nsRecord is what was seen in one scenario's namespace.
type nsRecord struct {
	jobs      map[string]*jobRecord
	jobOrder  []string
	pods      map[types.UID]*podRecord
	podOrder  []types.UID
	podGroups map[string]*pgRecord
	objects   map[string]*objRecord // by kind/name
	cronJobs  map[string]*batch.CronJob
	flows     map[string]*flowRecord
	templates map[string]*flowv1.JobTemplate
	changed   time.Time // of the last event of the namespace
}

type flowRecord struct {
	last   *flowv1.JobFlow
	phases []flowv1.Phase // consecutive repeats dropped
}

type jobRecord struct {
	uid       types.UID
	phases    []batch.JobPhase // consecutive repeats dropped
	last      *batch.Job
	deleted   bool
	cronOwner string // the CronJob that made it, if any
}

type podRecord struct {
	name    string
	first   *corev1.Pod // as first seen: the spec the controller made
	last    *corev1.Pod
	deleted bool
}

type pgRecord struct {
	last    *scheduling.PodGroup
	phases  []scheduling.PodGroupPhase
	deleted bool
}

type objRecord struct {
	kind, name string
	owners     []string // kind/name of each owner reference
	deleted    bool
}

// StartRecorder watches env's scenario namespaces until the test ends.
func StartRecorder(t testing.TB, env *Env) *Recorder {
	t.Helper()
	r := &Recorder{nss: map[string]*nsRecord{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	watchers := map[string]watchFunc{
		"Job": func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return env.Volcano.BatchV1alpha1().Jobs(metav1.NamespaceAll).Watch(ctx, o)
		},
		"CronJob": func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return env.Volcano.BatchV1alpha1().CronJobs(metav1.NamespaceAll).Watch(ctx, o)
		},
		"JobFlow": func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return env.Volcano.FlowV1alpha1().JobFlows(metav1.NamespaceAll).Watch(ctx, o)
		},
		"JobTemplate": func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return env.Volcano.FlowV1alpha1().JobTemplates(metav1.NamespaceAll).Watch(ctx, o)
		},
		"PodGroup": func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return env.Volcano.SchedulingV1beta1().PodGroups(metav1.NamespaceAll).Watch(ctx, o)
		},
		"Pod": func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return env.Kube.CoreV1().Pods(metav1.NamespaceAll).Watch(ctx, o)
		},
	}
	for kind, gvr := range ownedKinds {
		watchers[kind] = func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return env.Dynamic.Resource(gvr).Namespace(metav1.NamespaceAll).Watch(ctx, o)
		}
	}
	// Every watch starts at the resource version of one list of namespaces, made now: no
	// scenario namespace exists yet, so nothing of interest happened before it.
	list, err := env.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for kind, w := range watchers {
		rw, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &toolscache.ListWatch{WatchFuncWithContext: w})
		if err != nil {
			t.Fatalf("watch %s: %v", kind, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer rw.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case ev, ok := <-rw.ResultChan():
					if !ok {
						return
					}
					r.see(kind, ev)
				}
			}
		}()
	}
	return r
}

type watchFunc = func(context.Context, metav1.ListOptions) (watch.Interface, error)

// see records one watch event.
func (r *Recorder) see(kind string, ev watch.Event) {
	obj, ok := ev.Object.(metav1.Object)
	if !ok || !strings.HasPrefix(obj.GetNamespace(), nsPrefix) {
		return
	}
	deleted := ev.Type == watch.Deleted
	r.mu.Lock()
	defer r.mu.Unlock()
	ns := r.ns(obj.GetNamespace())
	ns.changed = time.Now()
	switch o := ev.Object.(type) {
	case *batch.Job:
		ns.seeJob(o, deleted)
	case *corev1.Pod:
		p := ns.pods[o.UID]
		if p == nil {
			p = &podRecord{name: o.Name, first: o}
			ns.pods[o.UID] = p
			ns.podOrder = append(ns.podOrder, o.UID)
		}
		p.last, p.deleted = o, p.deleted || deleted
	case *scheduling.PodGroup:
		pg := ns.podGroups[o.Name]
		if pg == nil {
			pg = &pgRecord{}
			ns.podGroups[o.Name] = pg
		}
		pg.last, pg.deleted = o, deleted
		if ph := o.Status.Phase; ph != "" && (len(pg.phases) == 0 || pg.phases[len(pg.phases)-1] != ph) {
			pg.phases = append(pg.phases, ph)
		}
	case *batch.CronJob:
		ns.cronJobs[o.Name] = o
	case *flowv1.JobFlow:
		f := ns.flows[o.Name]
		if f == nil {
			f = &flowRecord{}
			ns.flows[o.Name] = f
		}
		f.last = o
		if ph := o.Status.State.Phase; ph != "" && (len(f.phases) == 0 || f.phases[len(f.phases)-1] != ph) {
			f.phases = append(f.phases, ph)
		}
	case *flowv1.JobTemplate:
		ns.templates[o.Name] = o
	case *unstructured.Unstructured:
		if kind == "ConfigMap" && o.GetName() == "kube-root-ca.crt" {
			return // every namespace has it
		}
		key := kind + "/" + o.GetName()
		rec := ns.objects[key]
		if rec == nil {
			rec = &objRecord{kind: kind, name: o.GetName()}
			ns.objects[key] = rec
		}
		rec.owners = rec.owners[:0]
		for _, ref := range o.GetOwnerReferences() {
			rec.owners = append(rec.owners, ref.Kind+"/"+ref.Name)
		}
		rec.deleted = deleted
	}
}

func (ns *nsRecord) seeJob(job *batch.Job, deleted bool) {
	j := ns.jobs[job.Name]
	if j == nil || j.uid != job.UID {
		j = &jobRecord{uid: job.UID}
		if ref := metav1.GetControllerOf(job); ref != nil && ref.Kind == "CronJob" {
			j.cronOwner = ref.Name
		}
		if _, again := ns.jobs[job.Name]; !again {
			ns.jobOrder = append(ns.jobOrder, job.Name)
		}
		ns.jobs[job.Name] = j
	}
	j.last, j.deleted = job, deleted
	if ph := job.Status.State.Phase; ph != "" && (len(j.phases) == 0 || j.phases[len(j.phases)-1] != ph) {
		j.phases = append(j.phases, ph)
	}
}

func (r *Recorder) ns(name string) *nsRecord {
	ns := r.nss[name]
	if ns == nil {
		ns = &nsRecord{
			jobs: map[string]*jobRecord{}, pods: map[types.UID]*podRecord{},
			podGroups: map[string]*pgRecord{}, objects: map[string]*objRecord{}, cronJobs: map[string]*batch.CronJob{},
			flows: map[string]*flowRecord{}, templates: map[string]*flowv1.JobTemplate{},
		}
		r.nss[name] = ns
	}
	return ns
}

// view runs f on namespace ns's record under the recorder's lock.
func (r *Recorder) view(ns string, f func(*nsRecord)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(r.ns(ns))
}

// finalPhases are the phases a Job leaves only by a Command (Aborted) or not at all.
var finalPhases = map[batch.JobPhase]bool{batch.Completed: true, batch.Failed: true, batch.Terminated: true, batch.Aborted: true}

// settled reports whether every Job of the namespace is in a final phase or gone (and there is
// at least one) with its pods, every JobFlow is Succeed or Failed, and nothing changed for quiet.
func (ns *nsRecord) settled(quiet time.Duration) bool {
	if len(ns.jobs) == 0 || time.Since(ns.changed) < quiet {
		return false
	}
	for _, f := range ns.flows {
		if ph := f.last.Status.State.Phase; ph != flowv1.Succeed && ph != flowv1.Failed {
			return false
		}
	}
	for _, j := range ns.jobs {
		if !j.deleted && !finalPhases[j.last.Status.State.Phase] {
			return false
		}
	}
	// The pods of a deleted Job go too, by the garbage collector, which may take seconds.
	for _, p := range ns.pods {
		if ref := metav1.GetControllerOf(p.last); !p.deleted && ref != nil && ref.Kind == "Job" {
			if j := ns.jobs[ref.Name]; j != nil && j.deleted && j.uid == ref.UID {
				return false
			}
		}
	}
	return true
}

// describe is a one-line account of the namespace's Jobs, for logs.
func (ns *nsRecord) describe() string {
	var parts []string
	for _, name := range ns.jobOrder {
		j := ns.jobs[name]
		parts = append(parts, fmt.Sprintf("%s %v deleted=%v", name, j.phases, j.deleted))
	}
	return strings.Join(parts, "; ")
}
