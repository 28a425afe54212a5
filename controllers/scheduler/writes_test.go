package scheduler

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	vcv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/controllers/scheduler/core"
)

// gangLife plays one gang's life through the scheduler's pure parts, a
// cycle at a time: the informers' inputs, buildView, Allocate, the writes
// planned, and the Events they bring. A write lands at once, as an API
// server that takes it would; the pods move as the test says.
type gangLife struct {
	t       *testing.T
	clock   time.Time
	pg      *vcv1beta1.PodGroup
	pods    []*corev1.Pod // nil: not made yet
	nodes   []*corev1.Node
	cache   podCache
	history *groupHistory
	writes  []string // the cause of each write, with the phase written
	events  []podGroupEvent
	cycles  int
}

func newGangLife(t *testing.T, n int) *gangLife {
	l := &gangLife{
		t: t, clock: epoch, pg: podGroupObj("ns", "g", "default", int32(n), "1", ""),
		pods: make([]*corev1.Pod, n), nodes: []*corev1.Node{kubeNode("n1", "8"), kubeNode("n2", "8")},
		cache: newPodCache(), history: newGroupHistory(epoch),
	}
	return l
}

// make creates the gang's first n pods, unbound.
func (l *gangLife) make(n int) {
	for i := range n {
		if l.pods[i] == nil {
			l.pods[i] = kubePod("ns", "g", "worker", i, "1")
		}
	}
}

// phase moves the first n bound pods to phase.
func (l *gangLife) phase(n int, phase corev1.PodPhase) {
	for _, p := range l.pods[:n] {
		if p.Spec.NodeName == "" {
			l.t.Fatalf("pod %s is not bound", p.Name)
		}
		p.Status.Phase = phase
	}
}

// cycle runs one cycle, d after the last.
func (l *gangLife) cycle(d time.Duration) {
	l.clock = l.clock.Add(d)
	l.cycles++
	in := inputs{
		nodes: l.nodes, podGroups: []*vcv1beta1.PodGroup{l.pg},
		queues: []*vcv1beta1.Queue{queueObj("default", 1)}, served: []string{"volcano"},
	}
	for _, p := range l.pods {
		switch {
		case p == nil:
		case p.Spec.NodeName != "":
			in.bound = append(in.bound, p)
		default:
			in.unbound = append(in.unbound, p)
		}
	}
	v := buildView(in, assumedPods{}, &l.cache, l.clock)
	r := core.Allocate(v.snap, core.DefaultOptions())
	for _, b := range r.Bindings {
		for i, p := range l.pods {
			if p != nil && p.Namespace+"/"+p.Name == b.Pod {
				l.pods[i] = onNode(p, b.Node, corev1.PodPending)
			}
		}
	}
	q := quiet{message: 10 * time.Second, pods: 30 * time.Second, podsAtMost: 300 * time.Second} // the defaults
	now := metav1.NewTime(l.clock.Truncate(time.Second))
	ws := plannedWrites(v.groups, r.PodGroups, q, fmt.Sprintf("cycle-%d", l.cycles), now, l.history)
	for _, w := range ws {
		l.events = append(l.events, podGroupEvents(w.from, w.pg)...)
		w.pg.ResourceVersion = fmt.Sprint(l.cycles)
		l.pg = w.pg
		l.history.written("ns/g", l.clock)
		l.writes = append(l.writes, fmt.Sprintf("%s:%s", w.cause, w.pg.Status.Phase))
	}
}

// TestWritesPerGang: a gang of 10 pods of 1 s, from admission to its end,
// with a cycle every 100 ms, costs two status writes (Inqueue, Running) and
// one Event while its pods run; Completed, with the counts, follows once it
// has stood for PodsQuiet, unless the PodGroup is gone by then (the Job
// controller deletes a Job's PodGroup as the Job completes).
func TestWritesPerGang(t *testing.T) {
	l := newGangLife(t, 10)
	step := func(n int) {
		for range n {
			l.cycle(100 * time.Millisecond)
		}
	}
	step(1) // admitted
	l.make(4)
	step(2) // the Job controller is making its pods: too few, for now
	l.make(10)
	step(1) // placed
	l.phase(6, corev1.PodRunning)
	step(2)
	l.phase(10, corev1.PodRunning)
	step(8)
	l.phase(5, corev1.PodSucceeded)
	step(2)
	l.phase(10, corev1.PodSucceeded)
	step(50)

	want := []string{"decisive:Inqueue", "decisive:Running"}
	if fmt.Sprint(l.writes) != fmt.Sprint(want) {
		t.Errorf("writes by the gang's end %v, want %v", l.writes, want)
	}
	for range 30 {
		l.cycle(time.Second)
	}
	want = append(want, "completed:Completed")
	if fmt.Sprint(l.writes) != fmt.Sprint(want) {
		t.Errorf("writes %v, want %v", l.writes, want)
	}
	if st := l.pg.Status; st.Succeeded != 10 || st.Running != 0 || st.Failed != 0 {
		t.Errorf("counts written: running %d, succeeded %d, failed %d", st.Running, st.Succeeded, st.Failed)
	}
	if len(l.events) != 1 || l.events[0].reason != string(vcv1beta1.PodGroupScheduled) {
		t.Errorf("events %+v, want one Scheduled", l.events)
	}
}

// TestLongGangCountsWritten: a gang whose pods run longer than PodsQuiet
// gets its counts written once they have stood that long, then Completed.
func TestLongGangCountsWritten(t *testing.T) {
	l := newGangLife(t, 4)
	l.cycle(time.Second)
	l.make(4)
	l.cycle(time.Second)
	l.phase(4, corev1.PodRunning)
	for range 40 {
		l.cycle(time.Second)
	}
	l.phase(4, corev1.PodSucceeded)
	for range 35 {
		l.cycle(time.Second)
	}
	want := []string{"decisive:Inqueue", "decisive:Running", "counts:Running", "completed:Completed"}
	if fmt.Sprint(l.writes) != fmt.Sprint(want) {
		t.Errorf("writes %v, want %v", l.writes, want)
	}
}

// TestGangShortOfPodsForLong: an admitted gang whose pods stop coming gets
// its NotEnoughTasks condition, and one Warning, after PodsQuiet; the count
// of valid pods moving does not announce it again.
func TestGangShortOfPodsForLong(t *testing.T) {
	l := newGangLife(t, 4)
	l.cycle(time.Second) // admitted
	l.make(2)
	for range 30 {
		l.cycle(time.Second)
	}
	if len(l.writes) != 1 {
		t.Fatalf("writes %v within PodsQuiet of the pods' coming to a stop", l.writes)
	}
	l.cycle(time.Second)
	l.make(3)
	for range 30 {
		l.cycle(time.Second)
	}
	want := []string{"decisive:Inqueue", "awaiting_pods:Inqueue", "message:Inqueue"}
	if fmt.Sprint(l.writes) != fmt.Sprint(want) {
		t.Errorf("writes %v, want %v", l.writes, want)
	}
	if c := conditionIn(l.pg.Status.Conditions, vcv1beta1.PodGroupUnschedulableType); c == nil ||
		c.Reason != vcv1beta1.NotEnoughPodsReason || c.Message != "Not enough valid tasks for gang-scheduling, valid: 3, min: 4" {
		t.Errorf("condition %+v", c)
	}
	if len(l.events) != 1 || l.events[0].kind != corev1.EventTypeWarning {
		t.Errorf("events %+v, want one Warning", l.events)
	}
}
