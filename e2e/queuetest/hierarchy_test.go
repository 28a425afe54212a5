package queuetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/controllers/queue"
	"github.com/ringfire/ringfire/e2e/stack"
	"github.com/ringfire/ringfire/e2e/vcjob"
)

// Hierarchical queues on a real API server with ringfire's admission policies, the replicas
// sharding the queues between them.
func TestHierarchy(t *testing.T) {
	s := stack.Start(t, stack.Options{Replicas: 2, StandIn: true})
	stack.RunParallel(t, s,
		stack.Case{Name: "closing a parent closes its subtree; opening it opens what it closed", Run: closeSubtree},
		stack.Case{Name: "a Job on a non-leaf queue or on root is refused", Run: nonLeafJob},
		stack.Case{Name: "a parent cycle is reported", Run: parentCycle},
		stack.Case{Name: "a Job on a queue that is not open is refused", Run: closedQueueJob},
		stack.Case{Name: "a queue deeper than five below root is refused", Run: tooDeep},
	)
}

// createChild creates a queue under parent ("" for root).
func createChild(t *testing.T, s *stack.Stack, name, parent string) {
	t.Helper()
	q := &scheduling.Queue{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: scheduling.QueueSpec{Weight: 1, Parent: parent}}
	if _, err := s.Volcano.SchedulingV1beta1().Queues().Create(context.Background(), q, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create queue %s: %v", name, err)
	}
}

func getQueue(s *stack.Stack, name string) *scheduling.Queue {
	q, err := s.Volcano.SchedulingV1beta1().Queues().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return &scheduling.Queue{}
	}
	return q
}

// waitLabelled waits until the queue carries the has-children label, or not.
func waitLabelled(t *testing.T, s *stack.Stack, name string, want bool) {
	t.Helper()
	waitLabel(t, s, name, queue.HasChildrenLabel, want)
}

// waitLabel waits until the queue carries the label key, or not.
func waitLabel(t *testing.T, s *stack.Stack, name, key string, want bool) {
	t.Helper()
	stack.WaitFor(t, fmt.Sprintf("queue %s %s=%v", name, key, want), 20*time.Second, func() (bool, string) {
		l := getQueue(s, name).Labels
		return (l[key] == "true") == want, fmt.Sprint(l)
	})
}

// createJob creates a one-task Job on the named queue.
func createJob(s *stack.Stack, name, queueName string) error {
	job := vcjob.New(ns, name, vcjob.Task("work", 1, "1s", ""))
	job.Spec.Queue = queueName
	_, err := s.Volcano.BatchV1alpha1().Jobs(ns).Create(context.Background(), job, metav1.CreateOptions{})
	return err
}

// refusedSoon waits until creating the named Job on queueName is refused (the API server sees a
// queue's new label a moment after it is written), and returns the refusal.
func refusedSoon(t *testing.T, s *stack.Stack, name, queueName string) error {
	t.Helper()
	return refusedWithin(t, "a Job on "+queueName, func() error { return createJob(s, name, queueName) }, func() {
		_ = s.Volcano.BatchV1alpha1().Jobs(ns).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// queueRefusedSoon waits until creating the named queue under parent is refused.
func queueRefusedSoon(t *testing.T, s *stack.Stack, name, parent string) error {
	t.Helper()
	return refusedWithin(t, "a queue under "+parent, func() error { return createQueueErr(s, name, parent) }, func() {
		_ = s.Volcano.SchedulingV1beta1().Queues().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// refusedWithin retries create, undoing what it made, until it is refused; it returns the
// refusal.
func refusedWithin(t *testing.T, what string, create func() error, undo func()) error {
	t.Helper()
	var err error
	stack.WaitFor(t, what+" refused", 20*time.Second, func() (bool, string) {
		if err = create(); err == nil {
			undo()
			return false, "accepted"
		}
		return true, err.Error()
	})
	return err
}

// createQueueErr creates a queue under parent and returns the API server's answer.
func createQueueErr(s *stack.Stack, name, parent string) error {
	q := &scheduling.Queue{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: scheduling.QueueSpec{Weight: 1, Parent: parent}}
	_, err := s.Volcano.SchedulingV1beta1().Queues().Create(context.Background(), q, metav1.CreateOptions{})
	return err
}

func closeSubtree(t *testing.T, s *stack.Stack) {
	createChild(t, s, "org", "")
	createChild(t, s, "org-a", "org")
	createChild(t, s, "org-b", "org")
	createChild(t, s, "org-a-1", "org-a")
	createPodGroup(t, s, "org-b-pg", "org-b")
	waitLabelled(t, s, "org", true)
	waitLabelled(t, s, "org-a", true)
	if p := getQueue(s, "org").Spec.Parent; p != "root" {
		t.Errorf("org's parent is %q, want root", p)
	}

	operate(t, s, "org", bus.CloseQueueAction, scheduling.QueueStateClosed)
	waitState(t, s, "org-a", scheduling.QueueStateClosed)
	waitState(t, s, "org-a-1", scheduling.QueueStateClosed)
	waitState(t, s, "org-b", scheduling.QueueStateClosing) // its PodGroup holds it Closing
	for _, name := range []string{"org-a", "org-a-1", "org-b"} {
		if q := getQueue(s, name); !queue.ClosedByParent(q) {
			t.Errorf("%s is not marked closed by its parent: %v", name, q.Annotations)
		}
	}
	waitEvents(t, s, "org-a-1", "CloseQueue: Close queue succeed")

	command(t, s, "org-a-1", bus.OpenQueueAction)
	waitEvents(t, s, "org-a-1", "OpenQueue: Failed to open queue org-a-1 because its parent queue org-a is closed")
	if st := queueStatus(s, "org-a-1").State; st != scheduling.QueueStateClosed {
		t.Fatalf("org-a-1 is %s under a closed parent", st)
	}

	operate(t, s, "org", bus.OpenQueueAction, scheduling.QueueStateOpen)
	for _, name := range []string{"org-a", "org-a-1", "org-b"} {
		waitState(t, s, name, scheduling.QueueStateOpen)
	}
	deletePodGroup(t, s, "org-b-pg")
}

func nonLeafJob(t *testing.T, s *stack.Stack) {
	createChild(t, s, "dept", "")
	createChild(t, s, "dept-leaf", "dept")
	waitLabelled(t, s, "dept", true)
	create := func(name, queueName string) error { return createJob(s, name, queueName) }
	err := refusedSoon(t, s, "on-dept", "dept")
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "can only submit job to leaf queue, queue `dept` has child queues") {
		t.Errorf("refused with %v", err)
	}
	if err := create("on-root", "root"); err == nil || !strings.Contains(err.Error(), "root queue") {
		t.Errorf("a Job on root: %v", err)
	}
	if err := create("on-leaf", "dept-leaf"); err != nil {
		t.Fatalf("a Job on the leaf is refused: %v", err)
	}
	// Deleting a queue that has children is refused too.
	err = s.Volcano.SchedulingV1beta1().Queues().Delete(context.Background(), "dept", metav1.DeleteOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "has child queues") {
		t.Errorf("deleting dept: %v", err)
	}
}

func parentCycle(t *testing.T, s *stack.Stack) {
	createChild(t, s, "loop-x", "loop-y") // loop-y does not exist yet
	waitEvents(t, s, "loop-x", "MissingParent: the parent queue loop-y of queue loop-x does not exist")
	createChild(t, s, "loop-y", "loop-x")
	waitEvents(t, s, "loop-x", "ParentCycle: the parents of queue loop-x form a cycle (loop-x → loop-y → loop-x)")
	waitEvents(t, s, "loop-y", "ParentCycle")
	// A queue in a cycle is deeper than any limit: no queue may go under it.
	waitLabel(t, s, "loop-x", queue.AtMaxDepthLabel, true)
	waitLabel(t, s, "loop-y", queue.AtMaxDepthLabel, true)
	err := queueRefusedSoon(t, s, "loop-under", "loop-x")
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "queue loop-under exceeds the maximum allowed depth of 5") {
		t.Errorf("a queue under a cycle: %v", err)
	}
}

// closedQueueJob: closing a queue labels it not-open before its state says so; a Job on it is
// refused with Volcano's message, and taken again once the queue is open.
func closedQueueJob(t *testing.T, s *stack.Stack) {
	createChild(t, s, "shut", "")
	waitState(t, s, "shut", scheduling.QueueStateOpen)
	operate(t, s, "shut", bus.CloseQueueAction, scheduling.QueueStateClosed)
	if l := getQueue(s, "shut").Labels; l[queue.NotOpenLabel] != "true" {
		t.Fatalf("a Closed queue is not labelled %s: %v", queue.NotOpenLabel, l)
	}
	err := refusedSoon(t, s, "on-shut", "shut")
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "can only submit job to queue with state `Open`, queue `shut` status is `Closed`") {
		t.Errorf("refused with %v", err)
	}
	operate(t, s, "shut", bus.OpenQueueAction, scheduling.QueueStateOpen)
	waitLabel(t, s, "shut", queue.NotOpenLabel, false)
	stack.WaitFor(t, "a Job on the open queue taken", 20*time.Second, func() (bool, string) {
		err := createJob(s, "on-shut", "shut")
		return err == nil, fmt.Sprint(err)
	})
}

// tooDeep: a chain of queues five deep below root takes no sixth; the fifth is labelled, and the
// fourth, which is not, still takes a child.
func tooDeep(t *testing.T, s *stack.Stack) {
	parent := ""
	for i := 1; i <= queue.MaxDepth; i++ {
		name := fmt.Sprintf("deep-%d", i)
		createChild(t, s, name, parent)
		parent = name
	}
	waitLabel(t, s, parent, queue.AtMaxDepthLabel, true)
	err := queueRefusedSoon(t, s, "deep-6", parent)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "queue deep-6 exceeds the maximum allowed depth of 5") {
		t.Errorf("refused with %v", err)
	}
	if l := getQueue(s, "deep-4").Labels; l[queue.AtMaxDepthLabel] != "" {
		t.Errorf("deep-4 is labelled: %v", l)
	}
	if err := createQueueErr(s, "deep-4b", "deep-3"); err != nil {
		t.Errorf("a fourth level refused: %v", err)
	}
}

// TestJobOnNonLeafQueueWaits: with the admission policy out of the way (a cluster without it,
// or a queue that gained a child a moment before the Job came), the Job controller holds a Job
// on a non-leaf queue, says why, makes no pod, and starts the Job once its queue is a leaf.
func TestJobOnNonLeafQueueWaits(t *testing.T) {
	s := stack.Start(t, stack.Options{Replicas: 1, StandIn: true})
	ctx := context.Background()
	err := s.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, "ringfire-job-queue", metav1.DeleteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	createChild(t, s, "busy", "")
	createChild(t, s, "busy-child", "busy")
	waitLabelled(t, s, "busy", true)
	job := vcjob.New(ns, "held", vcjob.Task("work", 2, "1s", ""))
	job.Spec.Queue = "busy"
	// The API server may still hold the binding a moment after its delete.
	stack.WaitFor(t, "the Job created", 20*time.Second, func() (bool, string) {
		_, err := s.Volcano.BatchV1alpha1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{})
		return err == nil, fmt.Sprint(err)
	})
	stack.WaitFor(t, "the Job held with a reason", 30*time.Second, func() (bool, string) {
		j, err := s.Volcano.BatchV1alpha1().Jobs(ns).Get(ctx, "held", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		st := j.Status.State
		return st.Reason == "InvalidReference" && strings.Contains(st.Message, `queue "busy" has child queues (busy-child)`), fmt.Sprintf("%+v", st)
	})
	stack.WaitFor(t, "an InvalidReference event", 20*time.Second, func() (bool, string) {
		list, err := s.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.kind=Job,involvedObject.name=held,reason=InvalidReference",
		})
		return err == nil && len(list.Items) > 0, fmt.Sprint(err)
	})
	if pods, err := s.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err != nil || len(pods.Items) != 0 {
		t.Fatalf("pods of a held Job: %v (%v)", len(pods.Items), err)
	}

	// The child moves under root: busy is a leaf, and the Job runs to the end.
	child := getQueue(s, "busy-child")
	child.Spec.Parent = "root"
	if _, err := s.Volcano.SchedulingV1beta1().Queues().Update(ctx, child, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitLabelled(t, s, "busy", false)
	stack.WaitFor(t, "the Job completes", 60*time.Second, func() (bool, string) {
		j, err := s.Volcano.BatchV1alpha1().Jobs(ns).Get(ctx, "held", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return j.Status.State.Phase == batch.Completed, string(j.Status.State.Phase)
	})
}
