package queuetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/e2e/stack"
)

const ns = "default"

func createQueue(t *testing.T, s *stack.Stack, name string) {
	t.Helper()
	q := &scheduling.Queue{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: scheduling.QueueSpec{Weight: 1}}
	if _, err := s.Volcano.SchedulingV1beta1().Queues().Create(context.Background(), q, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create queue %s: %v", name, err)
	}
}

// command issues action on the queue as the cluster's admin, as vcctl queue operate does.
func command(t *testing.T, s *stack.Stack, queueName string, action bus.Action) string {
	t.Helper()
	ctx := context.Background()
	q, err := s.Volcano.SchedulingV1beta1().Queues().Get(ctx, queueName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get queue %s: %v", queueName, err)
	}
	got, err := s.Volcano.BusV1alpha1().Commands(ns).Create(ctx, queueCommand(ns, q, action), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create command %s on %s: %v", action, queueName, err)
	}
	return got.Name
}

// queueCommand is a Command in namespace that asks action of q, naming it by its name and UID
// as vcctl queue operate does.
func queueCommand(namespace string, q *scheduling.Queue, action bus.Action) *bus.Command {
	return &bus.Command{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, GenerateName: q.Name + "-" + strings.ToLower(string(action)) + "-"},
		Action:     string(action),
		TargetObject: &metav1.OwnerReference{
			APIVersion: scheduling.SchemeGroupVersion.String(), Kind: "Queue", Name: q.Name, UID: q.UID,
		},
	}
}

// operate issues action on the queue, waits for the queue's state, and
// then until the Command is deleted.
func operate(t *testing.T, s *stack.Stack, queueName string, action bus.Action, state scheduling.QueueState) {
	t.Helper()
	cmd := command(t, s, queueName, action)
	waitState(t, s, queueName, state)
	stack.WaitFor(t, "command deleted", 10*time.Second, func() (bool, string) { return commandGone(s, cmd), cmd })
}

// waitEvents waits until the queue's events (see queueEvents) contain each
// of want.
func waitEvents(t *testing.T, s *stack.Stack, queueName string, want ...string) {
	t.Helper()
	stack.WaitFor(t, "events", 10*time.Second, func() (bool, string) {
		ev := queueEvents(s, queueName)
		for _, w := range want {
			if !strings.Contains(ev, w) {
				return false, ev
			}
		}
		return true, ev
	})
}

func commandGone(s *stack.Stack, name string) bool {
	_, err := s.Volcano.BusV1alpha1().Commands(ns).Get(context.Background(), name, metav1.GetOptions{})
	return err != nil
}

func queueStatus(s *stack.Stack, name string) scheduling.QueueStatus {
	q, err := s.Volcano.SchedulingV1beta1().Queues().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return scheduling.QueueStatus{}
	}
	return q.Status
}

// waitState waits for the queue's state, and returns its status then.
func waitState(t *testing.T, s *stack.Stack, name string, state scheduling.QueueState) scheduling.QueueStatus {
	t.Helper()
	var st scheduling.QueueStatus
	stack.WaitFor(t, "queue "+name+" "+string(state), 20*time.Second, func() (bool, string) {
		st = queueStatus(s, name)
		return st.State == state, fmt.Sprintf("%+v", st)
	})
	return st
}

// queueEvents are the reason: message pairs of the queue's events.
func queueEvents(s *stack.Stack, name string) string {
	list, err := s.Kube.CoreV1().Events(metav1.NamespaceAll).List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.kind=Queue,involvedObject.name=" + name,
	})
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, e := range list.Items {
		out = append(out, e.Reason+": "+e.Message)
	}
	return strings.Join(out, "; ")
}

func createPodGroup(t *testing.T, s *stack.Stack, name, queueName string) {
	t.Helper()
	pg := &scheduling.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       scheduling.PodGroupSpec{MinMember: 1, Queue: queueName},
	}
	if _, err := s.Volcano.SchedulingV1beta1().PodGroups(ns).Create(context.Background(), pg, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create podgroup %s: %v", name, err)
	}
}

// setPhase moves a PodGroup to phase once the stand-in has admitted it (it turns every Pending
// PodGroup Inqueue), retrying on conflicts.
func setPhase(t *testing.T, s *stack.Stack, name string, phase scheduling.PodGroupPhase) {
	t.Helper()
	client := s.Volcano.SchedulingV1beta1().PodGroups(ns)
	stack.WaitFor(t, "podgroup "+name+" → "+string(phase), 20*time.Second, func() (bool, string) {
		pg, err := client.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if pg.Status.Phase != scheduling.PodGroupInqueue {
			return false, "phase " + string(pg.Status.Phase) + ", not admitted yet"
		}
		pg.Status.Phase = phase
		_, err = client.Update(context.Background(), pg, metav1.UpdateOptions{})
		return err == nil, fmt.Sprint(err)
	})
}

func deletePodGroup(t *testing.T, s *stack.Stack, name string) {
	t.Helper()
	if err := s.Volcano.SchedulingV1beta1().PodGroups(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete podgroup %s: %v", name, err)
	}
}

// podPhase describes a pod for failure messages.
func podPhase(p *corev1.Pod) string {
	return fmt.Sprintf("phase %s node %q annotations %v gates %v", p.Status.Phase, p.Spec.NodeName, p.Annotations, p.Spec.SchedulingGates)
}
