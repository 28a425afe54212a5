package schedtest

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
	vcv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/controllers/scheduler/core"
	"github.com/ringfire/ringfire/deploy/crds"
	"github.com/ringfire/ringfire/e2e/stack"
)

// closedQueueAdmitsNothing: a Queue closed by a Command (the replicas' Queue controller takes
// it) takes no Job: the API server refuses one (ringfire-job-queue with the not-open queues).
// Where the policy is not there (here its binding is deleted, as on a cluster without it, or for
// a Job created in the moment before the queue's label), the Job is held as Volcano holds it:
// its PodGroup stays Pending and says why, no pod is made; opened again by a Command, the queue
// admits the waiting gang.
func closedQueueAdmitsNothing(t *testing.T, s *stack.Stack) {
	ctx := context.Background()
	q := &vcv1beta1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "rf-closable"}, Spec: vcv1beta1.QueueSpec{Weight: 1}}
	if _, err := s.Volcano.SchedulingV1beta1().Queues().Create(ctx, q, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	queueCommand(t, s, "close-1", bus.CloseQueueAction)
	stack.WaitFor(t, "the queue is Closed", 30*time.Second, func() (bool, string) {
		q, err := s.Volcano.SchedulingV1beta1().Queues().Get(ctx, "rf-closable", metav1.GetOptions{})
		return err == nil && q.Status.State == vcv1beta1.QueueStateClosed, fmt.Sprintf("%v %v", q.Status.State, err)
	})
	create := func() error {
		_, err := s.Volcano.BatchV1alpha1().Jobs(ns).Create(ctx, job("in-closed", "rf-closable", 2, "500m", "2s"), metav1.CreateOptions{})
		return err
	}
	var err error
	stack.WaitFor(t, "a Job on the closed queue refused", 30*time.Second, func() (bool, string) {
		if err = create(); err == nil {
			deleteJobs(t, s, "in-closed")
			return false, "accepted"
		}
		return true, err.Error()
	})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "can only submit job to queue with state `Open`, queue `rf-closable` status is `Closed`") {
		t.Fatalf("refused with %v", err)
	}

	bindings := s.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings()
	if err := bindings.Delete(ctx, "ringfire-job-queue-state", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := crds.Install(context.Background(), s.Cluster.RESTConfig()); err != nil {
			t.Errorf("reinstall the admission policies: %v", err)
		}
	})
	stack.WaitFor(t, "the Job created", 30*time.Second, func() (bool, string) { // the API server drops the binding a moment later
		err := create()
		return err == nil, fmt.Sprint(err)
	})
	j, err := s.Volcano.BatchV1alpha1().Jobs(ns).Get(ctx, "in-closed", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	runScheduler(t, s)
	stack.WaitFor(t, "the gang's PodGroup waits, saying why", 30*time.Second, func() (bool, string) {
		pg := podGroup(t, s, j)
		if pg == nil {
			return false, "no PodGroup"
		}
		for _, c := range pg.Status.Conditions {
			if c.Type == vcv1beta1.PodGroupUnschedulableType && c.Reason == core.ReasonQueueNotOpen &&
				strings.Contains(c.Message, "queue rf-closable is Closed") {
				return pg.Status.Phase == vcv1beta1.PodGroupPending, string(pg.Status.Phase)
			}
		}
		return false, fmt.Sprintf("%s %+v", pg.Status.Phase, pg.Status.Conditions)
	})
	time.Sleep(3 * time.Second) // several cycles
	if phase := phaseOf(podGroup(t, s, j)); phase != vcv1beta1.PodGroupPending {
		t.Fatalf("a gang in a closed queue is %s, want Pending", phase)
	}
	if pods, _ := bound(s, j.Name); pods != 0 {
		t.Fatalf("%d pods created for a gang in a closed queue", pods)
	}
	if got, err := s.Volcano.BatchV1alpha1().Jobs(ns).Get(ctx, j.Name, metav1.GetOptions{}); err != nil || got.Status.State.Phase != batch.Pending {
		t.Fatalf("the Job: %v (%v), want Pending", got.Status.State, err)
	}
	queueCommand(t, s, "open-1", bus.OpenQueueAction)
	s.WaitPhase(ns, j.Name, 60*time.Second, batch.Completed)
	deleteJobs(t, s, j.Name)
}

func queueCommand(t *testing.T, s *stack.Stack, name string, action bus.Action) {
	t.Helper()
	q, err := s.Volcano.SchedulingV1beta1().Queues().Get(context.Background(), "rf-closable", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cmd := &bus.Command{
		ObjectMeta:   metav1.ObjectMeta{Name: name, Namespace: ns},
		Action:       string(action),
		TargetObject: &metav1.OwnerReference{APIVersion: "scheduling.volcano.sh/v1beta1", Kind: "Queue", Name: q.Name, UID: q.UID},
	}
	if _, err := s.Volcano.BusV1alpha1().Commands(ns).Create(context.Background(), cmd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("command %s: %v", action, err)
	}
}
