package schedtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	vcv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/e2e/stack"
	"github.com/ringfire/ringfire/e2e/vcjob"
)

// closedQueueAdmitsNothing: a Queue closed by a Command (the replicas'
// Queue controller takes it) admits no gang; opened again by a Command, it
// admits the waiting one.
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
	runScheduler(t, s)
	j := vcjob.Create(t, s.Volcano, job("in-closed", "rf-closable", 2, "500m", "2s"))
	stack.WaitFor(t, "the gang's PodGroup exists", 30*time.Second, func() (bool, string) {
		_, err := s.Volcano.SchedulingV1beta1().PodGroups(ns).Get(ctx, j.Name+"-"+string(j.UID), metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	time.Sleep(3 * time.Second) // several cycles
	pg := podGroup(t, s, j)
	if phase := phaseOf(pg); phase != vcv1beta1.PodGroupPending {
		t.Fatalf("a gang in a closed queue is %s, want Pending", phase)
	}
	if pods, _ := bound(s, j.Name); pods != 0 {
		t.Fatalf("%d pods created for a gang in a closed queue", pods)
	}
	queueCommand(t, s, "open-1", bus.OpenQueueAction)
	s.WaitPhase(ns, j.Name, 60*time.Second, batch.Completed)
	deleteJobs(t, s, j.Name)
}

func queueCommand(t *testing.T, s *stack.Stack, name string, action bus.Action) {
	t.Helper()
	cmd := &bus.Command{
		ObjectMeta:   metav1.ObjectMeta{Name: name, Namespace: ns},
		Action:       string(action),
		TargetObject: &metav1.OwnerReference{APIVersion: "scheduling.volcano.sh/v1beta1", Kind: "Queue", Name: "rf-closable", UID: "x"},
	}
	if _, err := s.Volcano.BusV1alpha1().Commands(ns).Create(context.Background(), cmd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("command %s: %v", action, err)
	}
}
