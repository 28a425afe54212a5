package job

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

func TestLeafProblem(t *testing.T) {
	q := func(name, parent string) *scheduling.Queue {
		return &scheduling.Queue{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: scheduling.QueueSpec{Parent: parent}}
	}
	queues := []*scheduling.Queue{
		q("root", ""), q("default", ""), q("team", "root"), q("a", "team"), q("b", "team"),
		q("x", "y"), q("y", "x"), q("under", "x"), q("orphan", "gone"),
	}
	rows := []struct{ queue, want string }{
		{"default", ""},
		{"a", ""},
		{"orphan", ""}, // a missing parent is the Queue controller's to report
		{"root", "queue root is the top of the queue hierarchy"},
		{"team", `queue "team" has child queues (a, b): a Job runs only on a leaf queue`},
		{"under", `the parents of queue "under" form a cycle (x → y → x)`},
	}
	for _, r := range rows {
		got := leafProblem(r.queue, queues)
		if r.want == "" && got != "" || !strings.Contains(got, r.want) {
			t.Errorf("leafProblem(%s) = %q, want %q", r.queue, got, r.want)
		}
	}
	many := []*scheduling.Queue{q("p", ""), q("c1", "p"), q("c2", "p"), q("c3", "p"), q("c4", "p")}
	if got := leafProblem("p", many); !strings.Contains(got, "(c1, c2, c3, ...)") {
		t.Errorf("many children: %q", got)
	}
}
