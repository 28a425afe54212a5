package scheduler

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	vcv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"

	"github.com/ringfire/ringfire/controllers/scheduler/core"
)

// fakeOwnership holds every slot while held is set; lose cancels the
// slots' context as the Manager does after a handover.
type fakeOwnership struct {
	mu     sync.Mutex
	held   bool
	ctx    context.Context
	cancel context.CancelFunc
}

func newFakeOwnership(held bool) *fakeOwnership {
	o := &fakeOwnership{held: held}
	o.ctx, o.cancel = context.WithCancel(context.Background())
	return o
}

func (o *fakeOwnership) Slots() int { return 64 }

func (o *fakeOwnership) SlotContext(int) (context.Context, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.ctx, o.held && o.ctx.Err() == nil
}

func (o *fakeOwnership) gain() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ctx.Err() != nil {
		o.ctx, o.cancel = context.WithCancel(context.Background())
	}
	o.held = true
}

// release stops new work (the handover has begun); lose ends the slot.
func (o *fakeOwnership) release() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.held = false
}

func (o *fakeOwnership) lose() {
	o.release()
	o.cancel()
}

// cluster is a fake API server for the controller: bindings set the pod's
// node (unless frozen, as an informer that lags would show), and are counted.
type cluster struct {
	kube  *kubefake.Clientset
	vc    *vcfake.Clientset
	binds atomic.Int64
	// frozen makes bindings succeed without the pod changing.
	frozen atomic.Bool
	// gate, when set, holds every binding until it is closed.
	gate chan struct{}
	// waiting counts the bindings that reached the gate.
	waiting atomic.Int32
	// podEvents is the scheduler's Config.PodEvents.
	podEvents bool
}

func newCluster(t *testing.T, kubeObjs []runtime.Object, vcObjs []runtime.Object) *cluster {
	c := &cluster{kube: kubefake.NewClientset(kubeObjs...), vc: vcfake.NewClientset(vcObjs...)}
	c.kube.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		create := a.(k8stesting.CreateAction)
		if create.GetSubresource() != "binding" {
			return false, nil, nil
		}
		if c.gate != nil {
			c.waiting.Add(1)
			<-c.gate
		}
		b := create.GetObject().(*corev1.Binding)
		obj, err := c.kube.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), b.Namespace, b.Name)
		if err != nil {
			return true, nil, err
		}
		pod := obj.(*corev1.Pod).DeepCopy()
		if pod.UID != b.UID || pod.Spec.NodeName != "" {
			return true, nil, apierrors.NewConflict(corev1.Resource("pods/binding"), b.Name, nil)
		}
		c.binds.Add(1)
		if c.frozen.Load() {
			return true, b, nil
		}
		pod.Spec.NodeName = b.Target.Name
		return true, b, c.kube.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), pod, pod.Namespace)
	})
	return c
}

func (c *cluster) start(t *testing.T, own *fakeOwnership, reg prometheus.Registerer) *Controller {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Kube, cfg.Volcano, cfg.Ownership, cfg.Registerer = c.kube, c.vc, own, reg
	cfg.Period, cfg.Debounce, cfg.PodEvents = 100*time.Millisecond, 10*time.Millisecond, c.podEvents
	ctrl, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); ctrl.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return within 10s of its context ending")
		}
	})
	return ctrl
}

func (c *cluster) createPods(t *testing.T, pods ...*corev1.Pod) {
	t.Helper()
	for _, p := range pods {
		if _, err := c.kube.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func (c *cluster) podGroup(t *testing.T, ns, name string) *vcv1beta1.PodGroup {
	t.Helper()
	pg, err := c.vc.SchedulingV1beta1().PodGroups(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pg
}

func (c *cluster) boundPods(t *testing.T, ns string) int {
	t.Helper()
	pods, err := c.kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" {
			n++
		}
	}
	return n
}

// eventually polls cond every 20ms for up to 10s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func gangPods(ns, group string, n int, cpu string) []*corev1.Pod {
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = kubePod(ns, group, "worker", i, cpu)
	}
	return pods
}

func TestAdmitsThenBindsAGang(t *testing.T) {
	for _, podEvents := range []bool{false, true} {
		t.Run(fmt.Sprintf("podEvents=%v", podEvents), func(t *testing.T) { admitsThenBindsAGang(t, podEvents) })
	}
}

// admitsThenBindsAGang runs a gang of 8 to Running; the PodGroup gets one
// Scheduled Event, and each pod one only with podEvents.
func admitsThenBindsAGang(t *testing.T, podEvents bool) {
	c := newCluster(t,
		[]runtime.Object{kubeNode("n1", "4"), kubeNode("n2", "4")},
		[]runtime.Object{queueObj("default", 1), podGroupObj("ns", "g", "default", 8, "1", "")})
	c.podEvents = podEvents
	reg := prometheus.NewRegistry()
	c.start(t, newFakeOwnership(true), reg)

	eventually(t, "the PodGroup is admitted", func() bool {
		return c.podGroup(t, "ns", "g").Status.Phase == vcv1beta1.PodGroupInqueue
	})
	c.createPods(t, gangPods("ns", "g", 8, "1")...)
	eventually(t, "the gang runs", func() bool {
		return c.podGroup(t, "ns", "g").Status.Phase == vcv1beta1.PodGroupRunning
	})
	if n := c.boundPods(t, "ns"); n != 8 {
		t.Errorf("%d pods bound, want 8", n)
	}
	pg := c.podGroup(t, "ns", "g")
	if cond := conditionIn(pg.Status.Conditions, vcv1beta1.PodGroupScheduled); cond == nil || cond.Status != corev1.ConditionTrue {
		t.Errorf("no Scheduled condition: %+v", pg.Status.Conditions)
	}
	if got := counterValue(t, reg, "ringfire_scheduler_pods_bound_total"); got != 8 {
		t.Errorf("pods bound metric %v, want 8", got)
	}
	wantPod := 0
	if podEvents {
		wantPod = 8
	}
	eventually(t, "Scheduled events on the PodGroup, and on the pods if asked for", func() bool {
		events, err := c.kube.CoreV1().Events("ns").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		kinds := map[string]int{}
		for _, e := range events.Items {
			if e.Reason == "Scheduled" {
				kinds[e.InvolvedObject.Kind]++
			}
		}
		return kinds["Pod"] == wantPod && kinds["PodGroup"] == 1
	})
}

func TestGangWithoutRoomBindsNothing(t *testing.T) {
	c := newCluster(t,
		[]runtime.Object{kubeNode("n1", "6")},
		[]runtime.Object{queueObj("default", 1), podGroupObj("ns", "g", "default", 8, "1", vcv1beta1.PodGroupInqueue)})
	c.createPods(t, gangPods("ns", "g", 8, "1")...)
	c.start(t, newFakeOwnership(true), nil)
	eventually(t, "the gang is told why it waits", func() bool {
		cond := conditionIn(c.podGroup(t, "ns", "g").Status.Conditions, vcv1beta1.PodGroupUnschedulableType)
		return cond != nil && cond.Reason == vcv1beta1.NotEnoughResourcesReason
	})
	time.Sleep(300 * time.Millisecond) // a few more cycles
	if n := c.binds.Load(); n != 0 {
		t.Errorf("%d bindings for a gang that cannot fit", n)
	}
	if phase := c.podGroup(t, "ns", "g").Status.Phase; phase != vcv1beta1.PodGroupInqueue {
		t.Errorf("phase %s, want Inqueue", phase)
	}
}

// A pod bound once is never bound again, even while the informer still
// shows it unbound.
func TestNeverBindsAPodTwice(t *testing.T) {
	c := newCluster(t,
		[]runtime.Object{kubeNode("n1", "8")},
		[]runtime.Object{queueObj("default", 1), podGroupObj("ns", "g", "default", 4, "1", vcv1beta1.PodGroupInqueue)})
	c.frozen.Store(true)
	c.createPods(t, gangPods("ns", "g", 4, "1")...)
	var cycles atomic.Int64
	own := newFakeOwnership(true)
	cfg := DefaultConfig()
	cfg.Kube, cfg.Volcano, cfg.Ownership, cfg.Period = c.kube, c.vc, own, 20*time.Millisecond
	cfg.Observe = func(time.Time, time.Time, core.Result) { cycles.Add(1) }
	ctrl, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); ctrl.Run(ctx) }()
	defer func() { cancel(); <-done }()
	eventually(t, "ten cycles", func() bool { return cycles.Load() >= 10 })
	if n := c.binds.Load(); n != 4 {
		t.Errorf("%d bindings of 4 pods", n)
	}
	if phase := c.podGroup(t, "ns", "g").Status.Phase; phase != vcv1beta1.PodGroupRunning {
		t.Errorf("phase %s, want Running from the assumed pods", phase)
	}
}

func TestRunsOnlyWhileHoldingTheSlot(t *testing.T) {
	c := newCluster(t,
		[]runtime.Object{kubeNode("n1", "8")},
		[]runtime.Object{queueObj("default", 1), podGroupObj("ns", "g", "default", 2, "1", "")})
	own := newFakeOwnership(false)
	ctrl := c.start(t, own, nil)
	time.Sleep(300 * time.Millisecond)
	if phase := c.podGroup(t, "ns", "g").Status.Phase; phase != "" || ctrl.Active() {
		t.Fatalf("scheduled without the slot: phase %q, active %v", phase, ctrl.Active())
	}

	own.gain()
	ctrl.SlotsGained([]int{ctrl.slot()})
	eventually(t, "the scheduler admits once the slot is held", func() bool {
		return c.podGroup(t, "ns", "g").Status.Phase == vcv1beta1.PodGroupInqueue
	})

	own.lose()
	ctrl.SlotsLost([]int{ctrl.slot()})
	eventually(t, "the scheduler stops", func() bool { return !ctrl.Active() })
	eventually(t, "its informers are dropped", func() bool {
		ctrl.mu.Lock()
		defer ctrl.mu.Unlock()
		return ctrl.shift == nil
	})
	c.createPods(t, gangPods("ns", "g", 2, "1")...)
	time.Sleep(300 * time.Millisecond)
	if n := c.binds.Load(); n != 0 {
		t.Errorf("%d bindings after the slot was lost", n)
	}

	own.gain()
	ctrl.SlotsGained([]int{ctrl.slot()})
	eventually(t, "the scheduler runs again on regaining the slot", func() bool { return c.boundPods(t, "ns") == 2 })
}

func TestDrainWaitsForTheCycleInFlight(t *testing.T) {
	c := newCluster(t,
		[]runtime.Object{kubeNode("n1", "8")},
		[]runtime.Object{queueObj("default", 1), podGroupObj("ns", "g", "default", 2, "1", vcv1beta1.PodGroupInqueue)})
	c.gate = make(chan struct{})
	c.createPods(t, gangPods("ns", "g", 2, "1")...)
	own := newFakeOwnership(true)
	ctrl := c.start(t, own, nil)
	// A binding held at the gate, not only the lock taken: a cycle that ran before the
	// informers had the pods would take the lock and let it go, binding nothing.
	eventually(t, "a cycle is binding", func() bool { return c.waiting.Load() > 0 && len(ctrl.cycleLock) == 1 })

	own.release() // the handover begins: no new cycle may start
	short, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if ctrl.Drain(short, []int{ctrl.slot()}) {
		t.Fatal("drained while a cycle was binding")
	}
	if !ctrl.Drain(context.Background(), []int{ctrl.slot() + 1}) {
		t.Fatal("another slot did not drain at once")
	}
	drained := make(chan bool)
	go func() { drained <- ctrl.Drain(context.Background(), []int{ctrl.slot()}) }()
	close(c.gate)
	select {
	case ok := <-drained:
		if !ok {
			t.Fatal("drain failed")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("drain did not return once the cycle ended")
	}
	binds := c.binds.Load()
	time.Sleep(300 * time.Millisecond)
	if c.binds.Load() != binds || len(ctrl.cycleLock) != 0 {
		t.Error("a cycle ran after the drain")
	}
}

// counterValue is the value of the counter name in reg, 0 when absent.
func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}
