package queue

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"
)

func getQueue(vc *vcfake.Clientset, name string) *scheduling.Queue {
	q, err := vc.SchedulingV1beta1().Queues().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return &scheduling.Queue{}
	}
	return q
}

func issue(t *testing.T, vc *vcfake.Clientset, cmd *bus.Command) {
	t.Helper()
	if _, err := vc.BusV1alpha1().Commands(cmd.Namespace).Create(context.Background(), cmd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Closing a parent closes its children and grandchildren, marked closed by their parent; a
// child cannot be opened while its parent is closed; opening the parent opens again what it
// closed, and leaves alone a child that was closed by hand.
func TestControllerHierarchy(t *testing.T) {
	vc, kube := start(t,
		newQueue("root", scheduling.QueueStateOpen),
		child("p", "", scheduling.QueueStateOpen, ""),
		child("c1", "p", scheduling.QueueStateOpen, ""),
		child("c2", "p", scheduling.QueueStateClosed, ""),
		child("g", "c1", scheduling.QueueStateOpen, ""),
		newPodGroup("busy", "c1", scheduling.PodGroupRunning),
	)
	eventually(t, "labels and parents", func() (bool, string) {
		p, c1, c2 := getQueue(vc, "p"), getQueue(vc, "c1"), getQueue(vc, "c2")
		ok := p.Spec.Parent == "root" && p.Labels[HasChildrenLabel] == "true" && c1.Labels[HasChildrenLabel] == "true" &&
			c2.Labels[HasChildrenLabel] == "" && getQueue(vc, "root").Labels[HasChildrenLabel] == "true"
		return ok, p.Spec.Parent + " " + p.Labels[HasChildrenLabel]
	})

	issue(t, vc, newCommand("close-p", "p", bus.CloseQueueAction))
	eventually(t, "the subtree closes", func() (bool, string) {
		p, c1, c2, g := getQueue(vc, "p"), getQueue(vc, "c1"), getQueue(vc, "c2"), getQueue(vc, "g")
		ok := p.Status.State == scheduling.QueueStateClosed &&
			c1.Status.State == scheduling.QueueStateClosing && ClosedByParent(c1) && // its PodGroup keeps it Closing
			g.Status.State == scheduling.QueueStateClosed && ClosedByParent(g) &&
			c2.Status.State == scheduling.QueueStateClosed && !ClosedByParent(c2)
		return ok, string(p.Status.State) + " " + string(c1.Status.State) + " " + string(g.Status.State)
	})

	issue(t, vc, newCommand("open-g", "g", bus.OpenQueueAction))
	eventually(t, "opening under a closed parent is refused", func() (bool, string) {
		r := eventReasons(kube)
		return strings.Contains(r, "Failed to open queue g because its parent queue c1 is closing"), r
	})
	if st := getQueue(vc, "g").Status.State; st != scheduling.QueueStateClosed {
		t.Fatalf("g is %s under a closing parent", st)
	}

	issue(t, vc, newCommand("open-p", "p", bus.OpenQueueAction))
	eventually(t, "the subtree opens, the hand-closed child stays closed", func() (bool, string) {
		c1, c2, g := getQueue(vc, "c1"), getQueue(vc, "c2"), getQueue(vc, "g")
		ok := getQueue(vc, "p").Status.State == scheduling.QueueStateOpen &&
			c1.Status.State == scheduling.QueueStateOpen && !ClosedByParent(c1) &&
			g.Status.State == scheduling.QueueStateOpen && !ClosedByParent(g) &&
			c2.Status.State == scheduling.QueueStateClosed
		return ok, string(c1.Status.State) + " " + string(g.Status.State) + " " + string(c2.Status.State)
	})

	// The last child moves away: its old parent loses the label.
	g := getQueue(vc, "g")
	g.Spec.Parent = "p"
	if _, err := vc.SchedulingV1beta1().Queues().Update(context.Background(), g, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "c1 is a leaf again", func() (bool, string) {
		l := getQueue(vc, "c1").Labels
		return l[HasChildrenLabel] == "", l[HasChildrenLabel]
	})
}

func TestControllerCycleAndMissingParent(t *testing.T) {
	vc, kube := start(t,
		child("x", "y", scheduling.QueueStateOpen, ""),
		child("y", "x", scheduling.QueueStateClosed, ""),
		child("orphan", "gone", scheduling.QueueStateOpen, ""),
	)
	eventually(t, "warnings", func() (bool, string) {
		r := eventReasons(kube)
		return strings.Contains(r, "ParentCycle: the parents of queue x form a cycle (x → y → x)") &&
			strings.Contains(r, "MissingParent: the parent queue gone of queue orphan does not exist"), r
	})
	// In a cycle a queue follows no parent: x stays open under closed y.
	if st := getQueue(vc, "x").Status.State; st != scheduling.QueueStateOpen {
		t.Errorf("x is %s", st)
	}
	if _, err := vc.SchedulingV1beta1().Queues().Create(context.Background(), child("gone", "", scheduling.QueueStateClosed, ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the orphan follows its new parent", func() (bool, string) {
		q := getQueue(vc, "orphan")
		return q.Status.State == scheduling.QueueStateClosed && ClosedByParent(q), string(q.Status.State)
	})
}
