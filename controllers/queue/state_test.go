package queue

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

func TestNextState(t *testing.T) {
	const (
		open    = scheduling.QueueStateOpen
		closing = scheduling.QueueStateClosing
		closed  = scheduling.QueueStateClosed
		unknown = scheduling.QueueStateUnknown
		openQ   = bus.OpenQueueAction
		closeQ  = bus.CloseQueueAction
		sync    = bus.Action("")
	)
	rows := []struct {
		from      scheduling.QueueState
		action    bus.Action
		podGroups int
		want      scheduling.QueueState
	}{
		// A new queue has no state: it is Open.
		{"", sync, 0, open},
		{"", sync, 3, open},
		{"", closeQ, 0, closed},
		{"", closeQ, 1, closing},
		{"", openQ, 0, open},

		{open, sync, 2, open},
		{open, bus.SyncQueueAction, 2, open},
		{open, openQ, 2, open},
		{open, closeQ, 0, closed},
		{open, closeQ, 2, closing},

		// Closing waits for the last PodGroup to go, whatever the action but OpenQueue.
		{closing, sync, 1, closing},
		{closing, sync, 0, closed},
		{closing, closeQ, 1, closing},
		{closing, closeQ, 0, closed},
		{closing, openQ, 1, open},

		// Closed stays Closed, even when PodGroups appear in it.
		{closed, sync, 0, closed},
		{closed, sync, 4, closed},
		{closed, closeQ, 4, closed},
		{closed, openQ, 4, open},

		// Unknown keeps itself until a Command says otherwise.
		{unknown, sync, 0, unknown},
		{unknown, openQ, 0, open},
		{unknown, closeQ, 0, closed},
		{unknown, closeQ, 2, closing},

		// An action a queue does not know is a sync.
		{open, bus.AbortJobAction, 0, open},
		{closing, bus.AbortJobAction, 0, closed},

		// A state outside the four is left alone on a sync.
		{"Frozen", sync, 0, "Frozen"},
		{"Frozen", openQ, 0, "Frozen"},
	}
	for _, r := range rows {
		if got := NextState(r.from, r.action, r.podGroups); got != r.want {
			t.Errorf("NextState(%q, %q, %d) = %q, want %q", r.from, r.action, r.podGroups, got, r.want)
		}
	}
}

func TestRefusal(t *testing.T) {
	rows := []struct {
		name    string
		action  bus.Action
		refused bool
	}{
		{"root", bus.CloseQueueAction, true},
		{"root", bus.OpenQueueAction, false},
		{"root", "", false},
		{"default", bus.CloseQueueAction, false}, // Volcano lets the default queue close
		{"team-a", bus.CloseQueueAction, false},
	}
	for _, r := range rows {
		if got := Refusal(r.name, r.action) != ""; got != r.refused {
			t.Errorf("Refusal(%q, %q) refused=%v, want %v", r.name, r.action, got, r.refused)
		}
	}
}

func TestCountsAndDesiredStatus(t *testing.T) {
	var c Counts
	for _, p := range []scheduling.PodGroupPhase{
		scheduling.PodGroupPending, scheduling.PodGroupPending, scheduling.PodGroupRunning,
		scheduling.PodGroupInqueue, scheduling.PodGroupUnknown, scheduling.PodGroupCompleted, "",
	} {
		c.Add(p)
	}
	want := Counts{Pending: 2, Running: 1, Unknown: 1, Inqueue: 1, Completed: 1, Total: 7}
	if c != want {
		t.Fatalf("counts %+v, want %+v", c, want)
	}

	current := scheduling.QueueStatus{
		State: scheduling.QueueStateOpen, Running: 9, Pending: 9,
		Allocated:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
		Reservation: scheduling.Reservation{Nodes: []string{"n1"}},
	}
	got := DesiredStatus(current, scheduling.QueueStateClosing, c)
	if got.State != scheduling.QueueStateClosing || got.Pending != 2 || got.Running != 1 || got.Unknown != 1 ||
		got.Inqueue != 1 || got.Completed != 1 {
		t.Errorf("status %+v", got)
	}
	if q := got.Allocated[corev1.ResourceCPU]; q.String() != "2" || len(got.Reservation.Nodes) != 1 {
		t.Errorf("the scheduler's fields were not kept: %+v", got)
	}
	got.Allocated[corev1.ResourceCPU] = resource.MustParse("5")
	if q := current.Allocated[corev1.ResourceCPU]; q.String() != "2" {
		t.Error("DesiredStatus shares the allocated map with its input")
	}
}
