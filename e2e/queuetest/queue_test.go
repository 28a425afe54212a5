package queuetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/e2e/cluster"
	"github.com/ringfire/ringfire/e2e/stack"
)

// The Queue and PodGroup controllers on one stack with the stand-in admitting PodGroups and
// binding pods; every case uses its own queue or pod.
func TestQueuesAndPodGroups(t *testing.T) {
	// The replicas run the Queue and PodGroup controllers, sharded between them.
	s := stack.Start(t, stack.Options{Replicas: 2, StandIn: true})
	// Once every case has ended (the parallel subtests end before the cleanups run), the
	// replicas must leave the cluster alone.
	t.Cleanup(func() { s.Quiet(t, 3*time.Second, 30*time.Second) })
	stack.RunParallel(t, s,
		stack.Case{Name: "a new queue is written Open", Run: newQueueOpens},
		stack.Case{Name: "CloseQueue on an empty queue closes it", Run: closeEmpty},
		stack.Case{Name: "CloseQueue with a PodGroup: Closing until it is deleted", Run: closeBusy},
		stack.Case{Name: "OpenQueue reopens a closed queue", Run: reopen},
		stack.Case{Name: "CloseQueue whose status write is refused after the take still closes", Run: closeAfterRefusal},
		stack.Case{Name: "status counts PodGroups by phase", Run: counts},
		stack.Case{Name: "a bare pod gets a PodGroup and runs", Run: barePod},
		stack.Case{Name: "a bare pod's PodGroup takes its owners' annotations", Run: podOwnersAnnotations},
		stack.Case{Name: "a pod naming an invalid queue gets a Warning event", Run: invalidQueue},
		stack.Case{Name: "only a user who may update a Queue steers it", Run: tenants},
	)
}

func newQueueOpens(t *testing.T, s *stack.Stack) {
	createQueue(t, s, "fresh")
	waitState(t, s, "fresh", scheduling.QueueStateOpen)
	waitState(t, s, "default", scheduling.QueueStateOpen)
}

func closeEmpty(t *testing.T, s *stack.Stack) {
	createQueue(t, s, "empty")
	waitState(t, s, "empty", scheduling.QueueStateOpen)
	operate(t, s, "empty", bus.CloseQueueAction, scheduling.QueueStateClosed)
	waitEvents(t, s, "empty", "CommandIssued", "CloseQueue: Close queue succeed")
}

func closeBusy(t *testing.T, s *stack.Stack) {
	createQueue(t, s, "busy")
	createPodGroup(t, s, "busy-pg", "busy")
	stack.WaitFor(t, "the PodGroup counted", 20*time.Second, func() (bool, string) {
		st := queueStatus(s, "busy")
		return st.Pending+st.Inqueue == 1, fmt.Sprintf("%+v", st)
	})
	operate(t, s, "busy", bus.CloseQueueAction, scheduling.QueueStateClosing)
	// Closing holds while the PodGroup lives, through its phase changes.
	setPhase(t, s, "busy-pg", scheduling.PodGroupRunning)
	stack.WaitFor(t, "running counted", 20*time.Second, func() (bool, string) {
		st := queueStatus(s, "busy")
		return st.Running == 1, fmt.Sprintf("%+v", st)
	})
	if st := queueStatus(s, "busy"); st.State != scheduling.QueueStateClosing {
		t.Fatalf("queue left Closing with its PodGroup alive: %+v", st)
	}
	deletePodGroup(t, s, "busy-pg")
	st := waitState(t, s, "busy", scheduling.QueueStateClosed)
	if st.Running != 0 || st.Pending != 0 || st.Inqueue != 0 {
		t.Errorf("counts after the PodGroup went: %+v", st)
	}
}

func reopen(t *testing.T, s *stack.Stack) {
	createQueue(t, s, "reopen")
	waitState(t, s, "reopen", scheduling.QueueStateOpen)
	command(t, s, "reopen", bus.CloseQueueAction)
	waitState(t, s, "reopen", scheduling.QueueStateClosed)
	operate(t, s, "reopen", bus.OpenQueueAction, scheduling.QueueStateOpen)
	waitEvents(t, s, "reopen", "OpenQueue: Open queue succeed")
}

func counts(t *testing.T, s *stack.Stack) {
	createQueue(t, s, "counted")
	for i := range 4 {
		createPodGroup(t, s, fmt.Sprintf("counted-%d", i), "counted")
	}
	setPhase(t, s, "counted-1", scheduling.PodGroupRunning)
	setPhase(t, s, "counted-2", scheduling.PodGroupRunning)
	setPhase(t, s, "counted-3", scheduling.PodGroupCompleted)
	want := scheduling.QueueStatus{State: scheduling.QueueStateOpen, Inqueue: 1, Running: 2, Completed: 1}
	stack.WaitFor(t, "counts", 20*time.Second, func() (bool, string) {
		st := queueStatus(s, "counted")
		got := scheduling.QueueStatus{State: st.State, Pending: st.Pending, Inqueue: st.Inqueue, Running: st.Running,
			Unknown: st.Unknown, Completed: st.Completed}
		return got.State == want.State && got.Pending == 0 && got.Inqueue == 1 && got.Running == 2 &&
			got.Unknown == 0 && got.Completed == 1, fmt.Sprintf("%+v", got)
	})
	for i := range 4 {
		deletePodGroup(t, s, fmt.Sprintf("counted-%d", i))
	}
	stack.WaitFor(t, "counts back to zero", 20*time.Second, func() (bool, string) {
		st := queueStatus(s, "counted")
		return st.Inqueue+st.Running+st.Completed+st.Pending == 0, fmt.Sprintf("%+v", st)
	})
}

// barePod creates a pod for the volcano scheduler with no PodGroup. It carries a scheduling
// gate at first: the stand-in is no gang scheduler and would bind it at once, where Volcano's
// scheduler waits for its PodGroup. Once the PodGroup and the annotation are there, the gate
// goes, the stand-in binds the pod and it runs on a KWOK node.
func barePod(t *testing.T, s *stack.Stack) {
	ctx := context.Background()
	pods := s.Kube.CoreV1().Pods(ns)
	created := createGatedPod(t, s, "bare", "default")
	group := "podgroup-" + string(created.UID)
	stack.WaitFor(t, "pod annotated with its PodGroup", 20*time.Second, func() (bool, string) {
		p, err := pods.Get(ctx, "bare", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if p.Spec.NodeName != "" {
			t.Fatalf("the gated pod was bound before it had its PodGroup: %s", podPhase(p))
		}
		return p.Annotations[scheduling.KubeGroupNameAnnotationKey] == group, podPhase(p)
	})
	pg, err := s.Volcano.SchedulingV1beta1().PodGroups(ns).Get(ctx, group, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("podgroup %s: %v", group, err)
	}
	ref := metav1.GetControllerOf(pg)
	if ref == nil || ref.Kind != "Pod" || ref.UID != created.UID {
		t.Errorf("podgroup not controlled by the pod: %+v", pg.OwnerReferences)
	}
	cpu := pg.Spec.MinResources.Cpu()
	if pg.Spec.MinMember != 1 || pg.Spec.Queue != "default" || cpu.MilliValue() != 100 {
		t.Errorf("podgroup spec %+v", pg.Spec)
	}

	patch := []byte(`[{"op":"remove","path":"/spec/schedulingGates"}]`)
	if _, err := pods.Patch(ctx, "bare", types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("remove the scheduling gate: %v", err)
	}
	stack.WaitFor(t, "pod bound and Succeeded", 30*time.Second, func() (bool, string) {
		p, err := pods.Get(ctx, "bare", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == corev1.PodSucceeded, podPhase(p)
	})
}

// invalidQueue: a pod whose queue annotation is no valid queue name gets no PodGroup (the API
// server refuses it) and a Warning event says why; the controller does not retry it.
func invalidQueue(t *testing.T, s *stack.Stack) {
	createGatedPod(t, s, "badqueue", "Not_A_Queue")
	stack.WaitFor(t, "Warning event on the pod", 20*time.Second, func() (bool, string) {
		list, err := s.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
			FieldSelector: "involvedObject.kind=Pod,involvedObject.name=badqueue,reason=PodGroupInvalid",
		})
		if err != nil {
			return false, err.Error()
		}
		return len(list.Items) == 1, fmt.Sprintf("%d events", len(list.Items))
	})
	if err := s.Kube.CoreV1().Pods(ns).Delete(context.Background(), "badqueue", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// createGatedPod creates a pending pod for the volcano scheduler in queue, held by a scheduling
// gate, that runs for a second once bound.
func createGatedPod(t *testing.T, s *stack.Stack, name, queueName string) *corev1.Pod {
	t.Helper()
	return createGatedPodOwned(t, s, name, queueName, nil)
}

// createGatedPodOwned is createGatedPod of a pod with the owner references refs.
func createGatedPodOwned(t *testing.T, s *stack.Stack, name, queueName string, refs []metav1.OwnerReference) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, OwnerReferences: refs, Annotations: map[string]string{
			cluster.PodDurationAnnotation:     "1s",
			scheduling.QueueNameAnnotationKey: queueName,
		}},
		Spec: corev1.PodSpec{
			SchedulerName:   "volcano",
			RestartPolicy:   corev1.RestartPolicyNever,
			SchedulingGates: []corev1.PodSchedulingGate{{Name: "queuetest.ringfire.io/hold"}},
			Containers: []corev1.Container{{Name: "main", Image: "example.invalid/bare:latest",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("32Mi"),
				}}}},
		},
	}
	created, err := s.Kube.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
	return created
}
