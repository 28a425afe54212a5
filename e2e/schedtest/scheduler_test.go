package schedtest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/e2e/stack"
	"github.com/ringfire/ringfire/e2e/vcjob"
)

// The scheduler's scenarios, one after the other on one stack (each needs
// the cluster's capacity to itself): the Job controller runs in a ringfire
// replica, no stand-in; the scheduler is started by each scenario.
func TestScheduler(t *testing.T) {
	start := time.Now()
	s := stack.Start(t, stack.Options{Replicas: 1, Nodes: nodes, NodeCPU: fmt.Sprint(nodeCPU), NodeMemory: "16Gi"})
	t.Logf("stack up in %v", time.Since(start).Round(time.Millisecond))
	seen := watchBindings(t, s)
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, s *stack.Stack)
	}{
		{"a gang that fits runs", gangFits},
		{"a gang without room binds nothing until room appears", gangWaitsWhole},
		{"higher priority is admitted first", priorityFirst},
		{"a closed queue admits nothing; reopened, it admits", closedQueueAdmitsNothing},
		{"the singleton moves and binds no pod twice", singletonMoves},
		{"queues of weights 3 and 1 share 3 to 1", queuesShareByWeight},
	} {
		if !t.Run(tc.name, func(t *testing.T) {
			began := time.Now()
			tc.run(t, s)
			t.Logf("took %v", time.Since(began).Round(time.Millisecond))
		}) {
			break // the next scenario would start on a cluster in an unknown state
		}
	}
	s.Quiet(t, 3*time.Second, 30*time.Second)
	bad, n := seen.twice()
	if len(bad) > 0 {
		t.Errorf("pods bound to two nodes: %v", bad)
	}
	t.Logf("%d pods seen bound, none twice", n)
}

func gangFits(t *testing.T, s *stack.Stack) {
	runScheduler(t, s)
	j := vcjob.Create(t, s.Volcano, job("fits", "default", 8, "2", "2s")) // 16 cpu: the whole cluster
	var pg *vcv1beta1.PodGroup                                            // the Job controller deletes it once the Job ends
	stack.WaitFor(t, "the gang of 8 is bound and its PodGroup Running", 30*time.Second, func() (bool, string) {
		pg = podGroup(t, s, j)
		_, on := bound(s, j.Name)
		phase := phaseOf(pg)
		return on == 8 && phase == vcv1beta1.PodGroupRunning, fmt.Sprintf("%d bound, phase %s", on, phase)
	})
	if c := scheduledCondition(pg); c == nil {
		t.Errorf("no Scheduled condition on the running PodGroup: %+v", pg.Status)
	}
	if unschedulable(pg) != nil {
		t.Errorf("a placed gang keeps its Unschedulable condition: %+v", pg.Status.Conditions)
	}
	s.WaitPhase(ns, j.Name, 30*time.Second, batch.Completed)
}

func scheduledCondition(pg *vcv1beta1.PodGroup) *vcv1beta1.PodGroupCondition {
	for i := range pg.Status.Conditions {
		if pg.Status.Conditions[i].Type == vcv1beta1.PodGroupScheduled {
			return &pg.Status.Conditions[i]
		}
	}
	return nil
}

// gangWaitsWhole: a gang of 8 × 2 cpu with room for 6 is not admitted; with
// room for 7 it is admitted and its pods are made, but none is bound; when
// a node is added it runs in full.
func gangWaitsWhole(t *testing.T, s *stack.Stack) {
	began := time.Now()
	since := func() time.Duration { return time.Since(began).Round(time.Millisecond) }
	runScheduler(t, s)
	b1 := vcjob.Create(t, s.Volcano, job("block-1", "default", 1, "2", forever))
	b2 := vcjob.Create(t, s.Volcano, job("block-2", "default", 1, "2", forever))
	stack.WaitFor(t, "the blockers run", 30*time.Second, func() (bool, string) {
		_, on1 := bound(s, b1.Name)
		_, on2 := bound(s, b2.Name)
		return on1 == 1 && on2 == 1, fmt.Sprintf("%d and %d bound", on1, on2)
	})

	g := vcjob.Create(t, s.Volcano, job("gang", "default", 8, "2", "2s"))
	stack.WaitFor(t, "the gang waits with a reason", 20*time.Second, func() (bool, string) {
		pg := podGroup(t, s, g)
		c := unschedulable(pg)
		return phaseOf(pg) == vcv1beta1.PodGroupPending && c != nil && c.Reason == vcv1beta1.NotEnoughResourcesReason,
			fmt.Sprintf("phase %s, condition %+v", phaseOf(pg), c)
	})
	t.Logf("%v room for 6: %s", since(), unschedulable(podGroup(t, s, g)).Message)
	holdFor(t, 2*time.Second, func() string {
		if phase := phaseOf(podGroup(t, s, g)); phase != vcv1beta1.PodGroupPending {
			return fmt.Sprintf("phase %s with room for 6", phase)
		}
		if _, on := bound(s, g.Name); on > 0 {
			return fmt.Sprintf("%d pods bound with room for 6", on)
		}
		return ""
	})

	deleteJobs(t, s, b2.Name)
	t.Logf("%v blocker 2 gone", since())
	stack.WaitFor(t, "the gang is admitted and its pods made, none bound", 20*time.Second, func() (bool, string) {
		pg := podGroup(t, s, g)
		pods, on := bound(s, g.Name)
		c := unschedulable(pg)
		return phaseOf(pg) == vcv1beta1.PodGroupInqueue && pods == 8 && c != nil && strings.HasPrefix(c.Message, "1/8 tasks"),
			fmt.Sprintf("phase %s, %d pods, %d bound, condition %+v", phaseOf(pg), pods, on, c)
	})
	t.Logf("%v room for 7: %s", since(), unschedulable(podGroup(t, s, g)).Message)
	holdFor(t, 2*time.Second, func() string {
		if _, on := bound(s, g.Name); on > 0 {
			return fmt.Sprintf("%d pods bound with room for 7", on)
		}
		return ""
	})

	addNode(t, s, "kwok-node-extra")
	stack.WaitFor(t, "the gang runs in full once a node is added", 30*time.Second, func() (bool, string) {
		pg := podGroup(t, s, g)
		_, on := bound(s, g.Name)
		return on == 8 && unschedulable(pg) == nil, fmt.Sprintf("%d bound, phase %s", on, phaseOf(pg))
	})
	t.Logf("%v the gang runs in full", since())
	s.WaitPhase(ns, g.Name, 30*time.Second, batch.Completed)
	deleteJobs(t, s, b1.Name, g.Name)
	cordon(t, s, "kwok-node-extra", true) // back to 16 cpu for the next scenarios
}

// holdFor checks every 200ms for d that bad reports nothing.
func holdFor(t *testing.T, d time.Duration, bad func() string) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if msg := bad(); msg != "" {
			t.Fatal(msg)
		}
	}
}

// priorityFirst: with the cluster full, an older low-priority gang and a
// younger high-priority one wait; when room appears for one of them, the
// high-priority one is admitted and runs first.
func priorityFirst(t *testing.T, s *stack.Stack) {
	for name, value := range map[string]int32{"rf-low": 10, "rf-high": 1000} {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
		if _, err := s.Kube.SchedulingV1().PriorityClasses().Create(context.Background(), pc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	runScheduler(t, s)
	blocker := vcjob.Create(t, s.Volcano, job("prio-block", "default", 8, "2", forever))
	stack.WaitFor(t, "the blocker fills the cluster", 30*time.Second, func() (bool, string) {
		_, on := bound(s, blocker.Name)
		return on == 8, fmt.Sprintf("%d bound", on)
	})
	// Older and first by name: without priorities, low would go first.
	lowJob := job("prio-a-low", "default", 8, "2", "3s")
	lowJob.Spec.PriorityClassName = "rf-low"
	low := vcjob.Create(t, s.Volcano, lowJob)
	time.Sleep(1100 * time.Millisecond) // creation times have whole seconds
	highJob := job("prio-b-high", "default", 8, "2", "3s")
	highJob.Spec.PriorityClassName = "rf-high"
	high := vcjob.Create(t, s.Volcano, highJob)
	stack.WaitFor(t, "both wait", 20*time.Second, func() (bool, string) {
		lp, hp := podGroup(t, s, low), podGroup(t, s, high)
		return unschedulable(lp) != nil && unschedulable(hp) != nil && phaseOf(lp) == vcv1beta1.PodGroupPending && phaseOf(hp) == vcv1beta1.PodGroupPending,
			fmt.Sprintf("low %s, high %s", phaseOf(lp), phaseOf(hp))
	})

	deleteJobs(t, s, blocker.Name)
	stack.WaitFor(t, "the high-priority gang runs, the low one still waiting", 30*time.Second, func() (bool, string) {
		lp, hp := podGroup(t, s, low), podGroup(t, s, high)
		if phaseOf(lp) != vcv1beta1.PodGroupPending {
			t.Fatalf("low admitted first: low %s, high %s", phaseOf(lp), phaseOf(hp))
		}
		_, on := bound(s, high.Name)
		return on == 8, fmt.Sprintf("high %s with %d bound", phaseOf(hp), on)
	})
	s.WaitPhase(ns, low.Name, 40*time.Second, batch.Completed)
	s.WaitPhase(ns, high.Name, 10*time.Second, batch.Completed)
	deleteJobs(t, s, low.Name, high.Name)
}
