package schedtest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/ringfire/ringfire/controllers/scheduler"
	"github.com/ringfire/ringfire/controllers/scheduler/core"
	"github.com/ringfire/ringfire/e2e/cluster"
	"github.com/ringfire/ringfire/e2e/stack"
	"github.com/ringfire/ringfire/e2e/vcjob"
	"github.com/ringfire/ringfire/shard"
)

const ns = "default"

// The cluster every scenario runs on: 4 KWOK nodes of 4 cpu.
const (
	nodes   = 4
	nodeCPU = 4
)

// forever is an exit code annotation that keeps a KWOK pod Running.
const forever = "never"

// clients are the scheduler's API clients: as a replica's, ringfire's ServiceAccount with room
// for a burst of bindings, every request recorded as the scheduler's (a permission its role
// and every replica's lack fails the test).
func clients(t *testing.T, s *stack.Stack) (kubernetes.Interface, vcclient.Interface) {
	cfg := s.SchedulerConfig()
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	vc, err := vcclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return kube, vc
}

// runScheduler runs a scheduler controller that holds its slot alone, until
// the (sub)test ends.
func runScheduler(t *testing.T, s *stack.Stack) *scheduler.Controller {
	t.Helper()
	kube, vc := clients(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var took []time.Duration
	cfg := scheduler.DefaultConfig()
	cfg.Kube, cfg.Volcano, cfg.Ownership, cfg.Logger = kube, vc, shard.HoldAll{Ctx: ctx, S: 64}, testLogger(t, "scheduler")
	cfg.Observe = func(start, end time.Time, _ core.Result) {
		mu.Lock()
		took = append(took, end.Sub(start))
		mu.Unlock()
	}
	ctrl, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); ctrl.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("the scheduler did not stop within 10s")
		}
		mu.Lock()
		defer mu.Unlock()
		if len(took) > 0 {
			slices.Sort(took)
			t.Logf("%d cycles: p50 %v, p99 %v, max %v", len(took), took[len(took)/2].Round(time.Microsecond),
				took[len(took)*99/100].Round(time.Microsecond), took[len(took)-1].Round(time.Microsecond))
		}
	})
	return ctrl
}

func testLogger(t testing.TB, name string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: name, Level: hclog.Warn, Output: testWriter{t}})
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// job is a Volcano Job of one task of n pods asking cpu each, all needed
// together, running for duration (or forever).
func job(name, queue string, n int32, cpu, duration string) *batch.Job {
	ann := vcjob.Runs(duration, "")
	if duration == forever {
		ann = map[string]string{cluster.PodExitCodeAnnotation: forever}
	}
	j := vcjob.New(ns, name, vcjob.TaskOf("worker", n, ann, cpu, vcjob.Memory))
	j.Spec.Queue, j.Spec.MinAvailable = queue, n
	return j
}

// deleteJobs deletes Jobs with their PodGroups and pods, and waits until no
// pod of theirs is left. The owned objects are deleted here rather than left
// to the garbage collector, which learns of CRDs installed after it started
// only at its next discovery resync (30s): a PodGroup left behind would be
// admitted again and hold room.
func deleteJobs(t *testing.T, s *stack.Stack, names ...string) {
	t.Helper()
	ctx := context.Background()
	policy := metav1.DeletePropagationBackground
	uids := map[types.UID]bool{}
	for _, name := range names {
		j, err := s.Volcano.BatchV1alpha1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get job %s: %v", name, err)
		}
		uids[j.UID] = true
		if err := s.Volcano.BatchV1alpha1().Jobs(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
			t.Fatalf("delete job %s: %v", name, err)
		}
		err = s.Volcano.SchedulingV1beta1().PodGroups(ns).Delete(ctx, name+"-"+string(j.UID), metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("delete podgroup of %s: %v", name, err)
		}
		err = s.Kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: batch.JobNameKey + "=" + name})
		if err != nil {
			t.Fatalf("delete pods of %s: %v", name, err)
		}
	}
	stack.WaitFor(t, fmt.Sprintf("the pods of %v are gone", names), 30*time.Second, func() (bool, string) {
		left := 0
		for _, name := range names {
			left += len(s.Pods(ns, name))
		}
		return left == 0, fmt.Sprintf("%d pods left", left)
	})
	// A reconcile in flight as its Job went may have made the PodGroup anew.
	pgs, err := s.Volcano.SchedulingV1beta1().PodGroups(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, pg := range pgs.Items {
		if ref := metav1.GetControllerOf(&pg); ref != nil && uids[ref.UID] {
			_ = s.Volcano.SchedulingV1beta1().PodGroups(ns).Delete(ctx, pg.Name, metav1.DeleteOptions{})
		}
	}
}

// podGroup returns the PodGroup of a created Job, nil if it does not exist.
func podGroup(t *testing.T, s *stack.Stack, j *batch.Job) *vcv1beta1.PodGroup {
	pg, err := s.Volcano.SchedulingV1beta1().PodGroups(ns).Get(context.Background(), j.Name+"-"+string(j.UID), metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return pg
}

func phaseOf(pg *vcv1beta1.PodGroup) vcv1beta1.PodGroupPhase {
	if pg == nil {
		return "<none>"
	}
	return pg.Status.Phase
}

func unschedulable(pg *vcv1beta1.PodGroup) *vcv1beta1.PodGroupCondition {
	if pg == nil {
		return nil
	}
	for i := range pg.Status.Conditions {
		if c := &pg.Status.Conditions[i]; c.Type == vcv1beta1.PodGroupUnschedulableType {
			return c
		}
	}
	return nil
}

// bound counts a Job's pods, and those of them on a node.
func bound(s *stack.Stack, name string) (pods, onNodes int) {
	for _, p := range s.Pods(ns, name) {
		pods++
		if p.Spec.NodeName != "" {
			onNodes++
		}
	}
	return pods, onNodes
}

// bindings watches every pod from outside and records each node a pod is
// seen on: a pod bound twice would show two.
type bindings struct {
	mu    sync.Mutex
	nodes map[types.UID]map[string]bool
	names map[types.UID]string
}

func watchBindings(t *testing.T, s *stack.Stack) *bindings {
	b := &bindings{nodes: map[types.UID]map[string]bool{}, names: map[types.UID]string{}}
	s.WatchPods(ns, func(_ watch.EventType, pod *corev1.Pod) { b.see(pod) })
	return b
}

func (b *bindings) see(pod *corev1.Pod) {
	if pod.Spec.NodeName == "" {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.nodes[pod.UID] == nil {
		b.nodes[pod.UID] = map[string]bool{}
	}
	b.nodes[pod.UID][pod.Spec.NodeName] = true
	b.names[pod.UID] = pod.Name
}

// twice lists the pods seen on more than one node, and counts the pods seen bound.
func (b *bindings) twice() (bad []string, seen int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for uid, nodes := range b.nodes {
		if len(nodes) > 1 {
			bad = append(bad, fmt.Sprintf("%s on %v", b.names[uid], nodes))
		}
	}
	return bad, len(b.nodes)
}

// counter reads a counter (summed over its labels) from a registry.
func counter(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if want, ok := labels[lp.GetName()]; ok && want != lp.GetValue() {
					continue metric
				}
			}
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// addNode registers one more KWOK node of nodeCPU cpu; kwok makes it Ready.
func addNode(t *testing.T, s *stack.Stack, name string) {
	t.Helper()
	res := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(nodeCPU, resource.DecimalSI),
		corev1.ResourceMemory: resource.MustParse("16Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{corev1.LabelHostname: name, "type": "kwok"},
			Annotations: map[string]string{cluster.KWOKNodeAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0"},
		},
		Status: corev1.NodeStatus{Capacity: res, Allocatable: res.DeepCopy()},
	}
	if _, err := s.Kube.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
		t.Fatalf("add node %s: %v", name, err)
	}
}

// cordon marks a node unschedulable, or schedulable again.
func cordon(t *testing.T, s *stack.Stack, name string, unschedulable bool) {
	t.Helper()
	patch := []byte(fmt.Sprintf(`{"spec":{"unschedulable":%v}}`, unschedulable))
	if _, err := s.Kube.CoreV1().Nodes().Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Errorf("cordon %s: %v", name, err)
	}
}
