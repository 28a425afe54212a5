package kit

import "testing"

func TestWording(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"resource in cluster is overused: cpu idle 15200m (overcommit 1.2), reserved by admitted gangs 19",
			"resource in cluster is overused: cpu idle 14400m (overcommit 1.25), reserved by admitted gangs 3", true},
		{"Not enough valid tasks for gang-scheduling, valid: 1, min: 2",
			"Not enough valid tasks for gang-scheduling, valid: 0, min: 3", true},
		{"1 task: 0/3 nodes are unavailable: 3 Insufficient cpu", "2 tasks: 0/3 nodes are unavailable: 3 Insufficient cpu", false},
		{"Insufficient cpu", "Insufficient memory", false},
		{"queue q is Closed", "queue q is Closing", false},
		{"", "", true},
		// The gang scheduler's Unschedulable messages.
		{"1/8 tasks in gang unschedulable: pod group is not ready, 0 bound, 7 placeable, 8 minAvailable; 1 task: 0/3 nodes are unavailable: 3 Insufficient cpu",
			"2/8 tasks in gang unschedulable: pod group is not ready, 0 bound, 6 placeable, 8 minAvailable; 2 tasks: 0/3 nodes are unavailable: 3 Insufficient cpu", false}, // task, tasks
		{"6/8 tasks in gang unschedulable: pod group is not ready, 0 bound, 2 placeable, 8 minAvailable; 6 tasks: 0/4 nodes are unavailable: 4 Insufficient cpu",
			"6/8 tasks in gang unschedulable: pod group is not ready, 0 bound, 2 placeable, 8 minAvailable; 6 tasks: 0/4 nodes are unavailable: 4 Insufficient memory", false},
		{"resource in cluster is overused: cpu idle 4", "queue resource quota insufficient: queue capped capability cpu 6", false},
	} {
		if got := Wording(tc.a) == Wording(tc.b); got != tc.same {
			t.Errorf("same wording %v, want %v:\n%s\n%s", got, tc.same, tc.a, tc.b)
		}
	}
	if got, want := Wording("valid: 12, min: 2.5x"), "valid: #, min: #x"; got != want {
		t.Errorf("Wording = %q, want %q", got, want)
	}
}
