package queue

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

func child(name, parent string, state scheduling.QueueState, closedByParent string) *scheduling.Queue {
	q := newQueue(name, state)
	q.Spec.Parent = parent
	if closedByParent != "" {
		q.Annotations = map[string]string{ClosedByParentAnnotation: closedByParent}
	}
	return q
}

func TestParentOf(t *testing.T) {
	rows := []struct {
		q    *scheduling.Queue
		want string
	}{
		{child("root", "", "", ""), ""},
		{child("root", "odd", "", ""), ""},
		{child("a", "", "", ""), "root"},
		{child("a", "root", "", ""), "root"},
		{child("a", "b", "", ""), "b"},
	}
	for _, r := range rows {
		if got := ParentOf(r.q); got != r.want {
			t.Errorf("ParentOf(%s, parent %q) = %q, want %q", r.q.Name, r.q.Spec.Parent, got, r.want)
		}
	}
}

func TestFollowParent(t *testing.T) {
	const (
		open    = scheduling.QueueStateOpen
		closing = scheduling.QueueStateClosing
		closed  = scheduling.QueueStateClosed
	)
	rows := []struct {
		name          string
		queue, parent *scheduling.Queue
		want          bus.Action
	}{
		{"no parent", child("a", "p", open, ""), nil, ""},
		{"open under open", child("a", "p", open, ""), child("p", "", open, ""), ""},
		{"open under closed closes", child("a", "p", open, ""), child("p", "", closed, ""), bus.CloseQueueAction},
		{"open under closing closes", child("a", "p", open, ""), child("p", "", closing, ""), bus.CloseQueueAction},
		{"new under closed closes", child("a", "p", "", ""), child("p", "", closed, ""), bus.CloseQueueAction},
		{"closed under closed stays", child("a", "p", closed, "true"), child("p", "", closed, ""), ""},
		{"closing under closed stays", child("a", "p", closing, "true"), child("p", "", closed, ""), ""},
		{"closed by parent reopens", child("a", "p", closed, "true"), child("p", "", open, ""), bus.OpenQueueAction},
		{"closing by parent reopens", child("a", "p", closing, "true"), child("p", "", open, ""), bus.OpenQueueAction},
		{"closed by hand stays", child("a", "p", closed, ""), child("p", "", open, ""), ""},
		{"reopened by hand stays", child("a", "p", closed, "false"), child("p", "", open, ""), ""},
		{"root follows nothing", child("root", "", open, ""), child("p", "", closed, ""), ""},
	}
	for _, r := range rows {
		if got := FollowParent(r.queue, r.parent); got != r.want {
			t.Errorf("%s: FollowParent = %q, want %q", r.name, got, r.want)
		}
	}
}

func TestOpenRefusal(t *testing.T) {
	q := child("a", "p", scheduling.QueueStateClosed, "true")
	if why := OpenRefusal(q, nil); why != "" {
		t.Errorf("no parent: refused %q", why)
	}
	if why := OpenRefusal(q, child("p", "", scheduling.QueueStateOpen, "")); why != "" {
		t.Errorf("open parent: refused %q", why)
	}
	why := OpenRefusal(q, child("p", "", scheduling.QueueStateClosing, ""))
	if !strings.Contains(why, "parent queue p is closing") || !strings.Contains(why, "Open the parent queue first") {
		t.Errorf("closing parent: %q", why)
	}
}

func TestCycle(t *testing.T) {
	queues := map[string]*scheduling.Queue{}
	for _, q := range []*scheduling.Queue{
		child("root", "", "", ""), child("a", "", "", ""), child("b", "a", "", ""),
		child("x", "y", "", ""), child("y", "z", "", ""), child("z", "x", "", ""), child("under", "x", "", ""),
		child("self", "self", "", ""), child("orphan", "gone", "", ""),
	} {
		queues[q.Name] = q
	}
	get := func(n string) (*scheduling.Queue, bool) { q, ok := queues[n]; return q, ok }
	rows := map[string][]string{
		"root": nil, "a": nil, "b": nil, "orphan": nil,
		"x":     {"x", "y", "z", "x"},
		"under": {"x", "y", "z", "x"},
		"self":  {"self", "self"},
	}
	for name, want := range rows {
		if got := Cycle(name, get); !reflect.DeepEqual(got, want) {
			t.Errorf("Cycle(%s) = %v, want %v", name, got, want)
		}
	}
}

func TestDepth(t *testing.T) {
	queues := map[string]*scheduling.Queue{}
	for _, q := range []*scheduling.Queue{
		child("root", "", "", ""), child("top", "", "", ""), child("mid", "top", "", ""), child("low", "mid", "", ""),
		child("x", "y", "", ""), child("y", "x", "", ""), child("under", "x", "", ""), child("orphan", "gone", "", ""),
	} {
		queues[q.Name] = q
	}
	get := func(n string) (*scheduling.Queue, bool) { q, ok := queues[n]; return q, ok }
	rows := []struct {
		name   string
		depth  int
		cyclic bool
	}{
		{"root", 0, false}, {"top", 1, false}, {"mid", 2, false}, {"low", 3, false},
		{"x", 2, true}, {"under", 3, true},
		{"orphan", 2, false}, // itself and the missing parent
		{"absent", 1, false},
	}
	for _, r := range rows {
		if depth, cyclic := Depth(r.name, get); depth != r.depth || cyclic != r.cyclic {
			t.Errorf("Depth(%s) = %d, %v; want %d, %v", r.name, depth, cyclic, r.depth, r.cyclic)
		}
	}
}

func TestTakesNoJobs(t *testing.T) {
	for state, want := range map[scheduling.QueueState]bool{
		"": false, scheduling.QueueStateOpen: false,
		scheduling.QueueStateClosed: true, scheduling.QueueStateClosing: true, scheduling.QueueStateUnknown: true,
	} {
		if got := TakesNoJobs(state); got != want {
			t.Errorf("TakesNoJobs(%q) = %v, want %v", state, got, want)
		}
	}
}

func TestMarksPatch(t *testing.T) {
	q := func(parent string, labels, annotations map[string]string) *scheduling.Queue {
		return &scheduling.Queue{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "7", Labels: labels, Annotations: annotations},
			Spec: scheduling.QueueSpec{Parent: parent}}
	}
	rows := []struct {
		name  string
		queue *scheduling.Queue
		marks Marks
		want  string // the patch as JSON, "" for none
	}{
		{"nothing to do", q("p", nil, nil), Marks{}, ""},
		{"leaf with a stale label", q("p", map[string]string{HasChildrenLabel: "true"}, nil), Marks{},
			`{"metadata":{"labels":{"ringfire.io/has-children":null},"resourceVersion":"7"}}`},
		{"new parent", q("p", nil, nil), Marks{HasChildren: true},
			`{"metadata":{"labels":{"ringfire.io/has-children":"true"},"resourceVersion":"7"}}`},
		{"labelled parent", q("p", map[string]string{HasChildrenLabel: "true"}, nil), Marks{HasChildren: true}, ""},
		{"closed by parent", q("p", nil, nil), Marks{ClosedByParent: "true"},
			`{"metadata":{"annotations":{"volcano.sh/closed-by-parent":"true"},"resourceVersion":"7"}}`},
		{"annotation already there", q("p", nil, map[string]string{ClosedByParentAnnotation: "true"}), Marks{ClosedByParent: "true"}, ""},
		{"closing queue", q("p", nil, nil), Marks{NotOpen: true},
			`{"metadata":{"labels":{"ringfire.io/not-open":"true"},"resourceVersion":"7"}}`},
		{"open again", q("p", map[string]string{NotOpenLabel: "true", "team": "a"}, nil), Marks{},
			`{"metadata":{"labels":{"ringfire.io/not-open":null},"resourceVersion":"7"}}`},
		{"too deep for a child", q("p", nil, nil), Marks{AtMaxDepth: true, HasChildren: true},
			`{"metadata":{"labels":{"ringfire.io/at-max-depth":"true","ringfire.io/has-children":"true"},"resourceVersion":"7"}}`},
		{"all labels kept", q("p", map[string]string{NotOpenLabel: "true", AtMaxDepthLabel: "true", HasChildrenLabel: "true"}, nil),
			Marks{NotOpen: true, AtMaxDepth: true, HasChildren: true}, ""},
		{"empty parent becomes root", q("", nil, nil), Marks{},
			`{"metadata":{"resourceVersion":"7"},"spec":{"parent":"root"}}`},
	}
	for _, r := range rows {
		got := MarksPatch(r.queue, r.marks)
		if r.want == "" {
			if got != nil {
				t.Errorf("%s: patch %s, want none", r.name, got)
			}
			continue
		}
		var gotV, wantV any
		if err := json.Unmarshal(got, &gotV); err != nil {
			t.Fatalf("%s: %v (%s)", r.name, err, got)
		}
		_ = json.Unmarshal([]byte(r.want), &wantV)
		if !reflect.DeepEqual(gotV, wantV) {
			t.Errorf("%s: patch %s, want %s", r.name, got, r.want)
		}
	}
	root := &scheduling.Queue{ObjectMeta: metav1.ObjectMeta{Name: "root"}}
	if p := MarksPatch(root, Marks{}); p != nil {
		t.Errorf("the root queue got a parent: %s", p)
	}
}
