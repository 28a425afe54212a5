package jobtest

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/e2e/stack"
	"github.com/ringfire/ringfire/e2e/vcjob"
)

// Bad input gets a clear error and never blocks other Jobs.
func TestBadInput(t *testing.T) {
	s := stack.Start(t, stack.Options{StandIn: true, MaxRequeue: 3})
	ctx := context.Background()

	// A template the API server refuses when the pod is created: events say
	// why, and after the retry limit the Job is terminated.
	bad := vcjob.New(ns, "badtemplate", vcjob.Task("worker", 1, "1s", ""))
	bad.Spec.Tasks[0].Template.Spec.Containers[0].Name = "Not_A_DNS_Label"
	vcjob.Create(t, s.Volcano, bad)
	// A Job naming a Queue that does not exist waits, and says so.
	noQueue := vcjob.New(ns, "noqueue", vcjob.Task("worker", 1, "1s", ""))
	noQueue.Spec.Queue = "missing"
	vcjob.Create(t, s.Volcano, noQueue)
	// A Job naming a PriorityClass that does not exist waits too.
	noPC := vcjob.New(ns, "nopc", vcjob.Task("worker", 1, "1s", ""))
	noPC.Spec.PriorityClassName = "no-such-class"
	vcjob.Create(t, s.Volcano, noPC)
	// Meanwhile a good Job runs as if nothing happened.
	vcjob.Create(t, s.Volcano, vcjob.New(ns, "good", vcjob.Task("worker", 2, "1s", "")))
	s.WaitPhase(ns, "good", 60*time.Second, batch.Completed)

	s.WaitPhase(ns, "badtemplate", 90*time.Second, batch.Terminated)
	if msgs := s.Events(ns, "badtemplate", "FailedCreatePod"); len(msgs) == 0 || !strings.Contains(msgs[0], "Not_A_DNS_Label") {
		t.Errorf("FailedCreatePod events do not name the bad field: %v", msgs)
	}
	if len(s.Events(ns, "badtemplate", "RetryLimitReached")) == 0 {
		t.Errorf("no RetryLimitReached event\n%s", s.Describe(ns, "badtemplate"))
	}

	for name, want := range map[string]string{"noqueue": `queue "missing" does not exist`, "nopc": `priority class "no-such-class" does not exist`} {
		stack.WaitUntil(t, name+" explains itself", 30*time.Second, func() bool {
			job, err := s.Volcano.BatchV1alpha1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
			return err == nil && strings.Contains(job.Status.State.Message, want) && contains(s.Events(ns, name, "InvalidReference"), want)
		})
		if pods := s.Pods(ns, name); len(pods) != 0 {
			t.Errorf("%s: %d pods created while its reference is missing", name, len(pods))
		}
	}
	// Once the Queue exists, the Job goes ahead.
	q := &scheduling.Queue{ObjectMeta: metav1.ObjectMeta{Name: "missing"}, Spec: scheduling.QueueSpec{Weight: 1}}
	if _, err := s.Volcano.SchedulingV1beta1().Queues().Create(ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.WaitPhase(ns, "noqueue", 60*time.Second, batch.Completed)

	// A Command with an action no Job knows is refused by the API server.
	cmd := &bus.Command{
		ObjectMeta:   metav1.ObjectMeta{Name: "bogus", Namespace: ns},
		Action:       "ExplodeJob",
		TargetObject: &metav1.OwnerReference{APIVersion: "batch.volcano.sh/v1alpha1", Kind: "Job", Name: "good", UID: "x"},
	}
	_, err := s.Volcano.BusV1alpha1().Commands(ns).Create(ctx, cmd, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("command with an unknown action: %v, want Invalid", err)
	}
}
