package flowtest

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	flowv1 "volcano.sh/apis/pkg/apis/flow/v1alpha1"

	"github.com/ringfire/ringfire/e2e/stack"
	"github.com/ringfire/ringfire/e2e/vcjob"
)

// namespace makes the namespace ns.
func namespace(t *testing.T, s *stack.Stack, ns string) {
	t.Helper()
	obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	if _, err := s.Kube.CoreV1().Namespaces().Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
}

// template makes a JobTemplate of one task of one pod that runs for duration and ends with
// exit code code ("" to succeed).
func template(t *testing.T, s *stack.Stack, ns, name, duration, code string) *flowv1.JobTemplate {
	t.Helper()
	jt := &flowv1.JobTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       batch.JobSpec{SchedulerName: "volcano", Tasks: []batch.TaskSpec{vcjob.Task("main", 1, duration, code)}},
	}
	if code != "" {
		// A failed pod ends the Job: Terminated, which fails the flow.
		jt.Spec.Policies = []batch.LifecyclePolicy{{Event: "PodFailed", Action: "TerminateJob"}}
	}
	got, err := s.Volcano.FlowV1alpha1().JobTemplates(ns).Create(context.Background(), jt, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create jobtemplate %s: %v", name, err)
	}
	return got
}

// step is a flow step that depends on targets.
func step(name string, targets ...string) flowv1.Flow {
	f := flowv1.Flow{Name: name}
	if len(targets) > 0 {
		f.DependsOn = &flowv1.DependsOn{Targets: targets}
	}
	return f
}

// newFlow is a JobFlow of steps.
func newFlow(ns, name string, retain flowv1.RetainPolicy, steps ...flowv1.Flow) *flowv1.JobFlow {
	return &flowv1.JobFlow{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       flowv1.JobFlowSpec{Flows: steps, JobRetainPolicy: retain},
	}
}

func createFlow(t *testing.T, s *stack.Stack, jf *flowv1.JobFlow) *flowv1.JobFlow {
	t.Helper()
	got, err := s.Volcano.FlowV1alpha1().JobFlows(jf.Namespace).Create(context.Background(), jf, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create jobflow %s: %v", jf.Name, err)
	}
	t.Logf("created jobflow %s/%s at %s", jf.Namespace, jf.Name, time.Now().Format("15:04:05.000"))
	return got
}

func getFlow(t *testing.T, s *stack.Stack, ns, name string) *flowv1.JobFlow {
	t.Helper()
	jf, err := s.Volcano.FlowV1alpha1().JobFlows(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return jf
}

// waitFlow waits until the flow reaches phase, and returns it.
func waitFlow(t *testing.T, s *stack.Stack, ns, name string, phase flowv1.Phase, limit time.Duration, jobs *jobWatch) *flowv1.JobFlow {
	t.Helper()
	var jf *flowv1.JobFlow
	stack.WaitFor(t, fmt.Sprintf("jobflow %s/%s %s", ns, name, phase), limit, func() (bool, string) {
		jf = getFlow(t, s, ns, name)
		return jf.Status.State.Phase == phase, fmt.Sprintf("phase %q, jobs %s", jf.Status.State.Phase, jobs)
	})
	return jf
}

// seenJob is what the watch saw of one Job of the namespace.
type seenJob struct {
	name    string
	uids    []types.UID // every UID the name had: more than one is a Job made twice
	added   time.Time   // when the watch first saw it
	created time.Time   // its creation time
	phase   batch.JobPhase
	done    time.Time // when the watch first saw it Completed
	deleted bool
	spec    batch.JobSpec
	labels  map[string]string
	owners  []metav1.OwnerReference
}

// jobWatch records every Job of a namespace as the API server reports it.
type jobWatch struct {
	mu   sync.Mutex
	jobs map[string]*seenJob
}

// watchJobs records the Jobs of ns until the test ends.
func watchJobs(t *testing.T, s *stack.Stack, ns string) *jobWatch {
	t.Helper()
	w := &jobWatch{jobs: map[string]*seenJob{}}
	s.WatchJobs(ns, w.see)
	return w
}

func (w *jobWatch) see(typ watch.EventType, job *batch.Job) {
	w.mu.Lock()
	defer w.mu.Unlock()
	j := w.jobs[job.Name]
	if j == nil {
		j = &seenJob{name: job.Name, added: time.Now()}
		w.jobs[job.Name] = j
	}
	if !slices.Contains(j.uids, job.UID) {
		j.uids = append(j.uids, job.UID)
	}
	j.created = job.CreationTimestamp.Time
	j.phase = job.Status.State.Phase
	if j.phase == batch.Completed && j.done.IsZero() {
		j.done = time.Now()
	}
	j.deleted = typ == watch.Deleted
	j.spec, j.labels, j.owners = *job.Spec.DeepCopy(), job.Labels, job.OwnerReferences
}

// list returns copies of the Jobs seen, by the time they were first seen.
func (w *jobWatch) list() []seenJob {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]seenJob, 0, len(w.jobs))
	for _, j := range w.jobs {
		c := *j
		c.uids = slices.Clone(j.uids)
		out = append(out, c)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].added.Before(out[b].added) })
	return out
}

func (w *jobWatch) get(name string) (seenJob, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	j, ok := w.jobs[name]
	if !ok {
		return seenJob{}, false
	}
	c := *j
	c.uids = slices.Clone(j.uids)
	return c, true
}

func (w *jobWatch) names() []string {
	var names []string
	for _, j := range w.list() {
		names = append(names, j.name)
	}
	return names
}

func (w *jobWatch) String() string {
	var parts []string
	for _, j := range w.list() {
		parts = append(parts, fmt.Sprintf("%s(%s deleted=%v)", j.name, j.phase, j.deleted))
	}
	return strings.Join(parts, " ")
}

// checkOnce fails the test if any Job was made twice (one name, two UIDs).
func checkOnce(t *testing.T, jobs *jobWatch) {
	t.Helper()
	for _, j := range jobs.list() {
		if len(j.uids) != 1 {
			t.Errorf("job %s was made %d times (UIDs %v)", j.name, len(j.uids), j.uids)
		}
	}
}

// checkAfter fails the test unless the Job of step was first seen after the Jobs of deps
// Completed.
func checkAfter(t *testing.T, jobs *jobWatch, job string, deps ...string) {
	t.Helper()
	j, ok := jobs.get(job)
	if !ok {
		t.Errorf("job %s never made", job)
		return
	}
	for _, d := range deps {
		dj, ok := jobs.get(d)
		switch {
		case !ok:
			t.Errorf("job %s made, but its dependency %s never was", job, d)
		case dj.done.IsZero() || j.added.Before(dj.done):
			t.Errorf("job %s made at %s, before its dependency %s Completed (%s)", job, j.added.Format("15:04:05.000"), d, dj.done.Format("15:04:05.000"))
		}
	}
}
