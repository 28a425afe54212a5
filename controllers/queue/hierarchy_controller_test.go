package queue

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
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

// A queue is labelled not-open before its state leaves Open, and loses the label only once its
// state is Open again: the admission policy reads the state of labelled queues, so it never
// misses a closed one.
func TestControllerNotOpenLabel(t *testing.T) {
	var mu sync.Mutex
	var wrong []string
	report := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		wrong = append(wrong, fmt.Sprintf(format, args...))
	}
	check := func(vc *vcfake.Clientset) {
		stored := func() *scheduling.Queue {
			obj, err := vc.Tracker().Get(scheduling.SchemeGroupVersion.WithResource("queues"), "", "q")
			if err != nil {
				return &scheduling.Queue{}
			}
			return obj.(*scheduling.Queue)
		}
		vc.PrependReactor("update", "queues", func(a k8stesting.Action) (bool, runtime.Object, error) {
			u, ok := a.(k8stesting.UpdateAction)
			if !ok || u.GetSubresource() != "status" {
				return false, nil, nil
			}
			next := u.GetObject().(*scheduling.Queue).Status.State
			if TakesNoJobs(next) && stored().Labels[NotOpenLabel] != "true" {
				report("state %s written before the label", next)
			}
			return false, nil, nil
		})
		vc.PrependReactor("patch", "queues", func(a k8stesting.Action) (bool, runtime.Object, error) {
			p, ok := a.(k8stesting.PatchAction)
			if ok && strings.Contains(string(p.GetPatch()), `"`+NotOpenLabel+`":null`) {
				if st := stored().Status.State; st != scheduling.QueueStateOpen {
					report("label removed while the state is %s", st)
				}
			}
			return false, nil, nil
		})
	}
	vc, _ := startWith(t, check, newQueue("q", scheduling.QueueStateOpen), newPodGroup("pg", "q", scheduling.PodGroupRunning))
	label := func() string { return getQueue(vc, "q").Labels[NotOpenLabel] }

	issue(t, vc, newCommand("close-q", "q", bus.CloseQueueAction))
	eventually(t, "Closing and labelled", func() (bool, string) {
		q := getQueue(vc, "q")
		return q.Status.State == scheduling.QueueStateClosing && label() == "true", string(q.Status.State) + " " + label()
	})
	if err := vc.SchedulingV1beta1().PodGroups("ns").Delete(context.Background(), "pg", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "Closed and labelled", func() (bool, string) {
		st := queueStatus(vc, "q").State
		return st == scheduling.QueueStateClosed && label() == "true", string(st) + " " + label()
	})
	issue(t, vc, newCommand("open-q", "q", bus.OpenQueueAction))
	eventually(t, "Open and unlabelled", func() (bool, string) {
		st := queueStatus(vc, "q").State
		return st == scheduling.QueueStateOpen && label() == "", string(st) + " " + label()
	})
	mu.Lock()
	defer mu.Unlock()
	if len(wrong) > 0 {
		t.Errorf("out of order: %v", wrong)
	}
}

// Queues MaxDepth below root or deeper, and queues in a cycle, are labelled at-max-depth; a
// subtree that moves up loses the label.
func TestControllerAtMaxDepthLabel(t *testing.T) {
	objs := []any{newQueue("root", scheduling.QueueStateOpen)}
	parent := ""
	for i := 1; i <= MaxDepth+1; i++ {
		name := fmt.Sprintf("l%d", i)
		objs = append(objs, child(name, parent, scheduling.QueueStateOpen, ""))
		parent = name
	}
	objs = append(objs, child("x", "y", scheduling.QueueStateOpen, ""), child("y", "x", scheduling.QueueStateOpen, ""))
	vc, _ := start(t, objs...)
	labelled := func() string {
		var names []string
		list, _ := vc.SchedulingV1beta1().Queues().List(context.Background(), metav1.ListOptions{})
		for _, q := range list.Items {
			if q.Labels[AtMaxDepthLabel] == "true" {
				names = append(names, q.Name)
			}
		}
		sort.Strings(names)
		return strings.Join(names, " ")
	}
	eventually(t, "the deepest queues and the cycle labelled", func() (bool, string) {
		got := labelled()
		return got == fmt.Sprintf("l%d l%d x y", MaxDepth, MaxDepth+1), got
	})

	l3 := getQueue(vc, "l3")
	l3.Spec.Parent = "root"
	if _, err := vc.SchedulingV1beta1().Queues().Update(context.Background(), l3, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the subtree moved up is unlabelled", func() (bool, string) {
		got := labelled()
		return got == "x y", got
	})
}
