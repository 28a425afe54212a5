package scheduler

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	vcv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

func TestMessageWording(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"resource in cluster is overused: cpu idle 15200m (overcommit 1.2), reserved by admitted gangs 19, minResources 40",
			"resource in cluster is overused: cpu idle 14400m (overcommit 1.2), reserved by admitted gangs 3, minResources 40", true},
		{"1/8 tasks in gang unschedulable: pod group is not ready, 0 bound, 7 placeable, 8 minAvailable; 1 task: 0/3 nodes are unavailable: 3 Insufficient cpu",
			"2/8 tasks in gang unschedulable: pod group is not ready, 0 bound, 6 placeable, 8 minAvailable; 2 tasks: 0/3 nodes are unavailable: 3 Insufficient cpu", false}, // task, tasks
		{"6/8 tasks in gang unschedulable: pod group is not ready, 0 bound, 2 placeable, 8 minAvailable; 6 tasks: 0/4 nodes are unavailable: 4 Insufficient cpu",
			"6/8 tasks in gang unschedulable: pod group is not ready, 0 bound, 2 placeable, 8 minAvailable; 6 tasks: 0/4 nodes are unavailable: 4 Insufficient memory", false},
		{"queue q is Closed: it admits and places nothing new", "queue q is Closing: it admits and places nothing new", false},
		{"resource in cluster is overused: cpu idle 4", "queue resource quota insufficient: queue capped capability cpu 6", false},
	} {
		if got := messageWording(tc.a) == messageWording(tc.b); got != tc.same {
			t.Errorf("same wording %v, want %v:\n%s\n%s", got, tc.same, tc.a, tc.b)
		}
	}
}

func TestPodGroupEvents(t *testing.T) {
	pg := func(phase vcv1beta1.PodGroupPhase, reason, msg string) *vcv1beta1.PodGroup {
		p := &vcv1beta1.PodGroup{Status: vcv1beta1.PodGroupStatus{Phase: phase}}
		if reason != "" {
			p.Status.Conditions = []vcv1beta1.PodGroupCondition{{
				Type: vcv1beta1.PodGroupUnschedulableType, Status: corev1.ConditionTrue, Reason: reason, Message: msg,
			}}
		}
		return p
	}
	const (
		pending, inqueue, running, completed = vcv1beta1.PodGroupPending, vcv1beta1.PodGroupInqueue, vcv1beta1.PodGroupRunning, vcv1beta1.PodGroupCompleted
		resources, tasks                     = vcv1beta1.NotEnoughResourcesReason, vcv1beta1.NotEnoughPodsReason
	)
	for _, tc := range []struct {
		name    string
		old, pg *vcv1beta1.PodGroup
		want    string // reason of the one Event, or "" for none
	}{
		{"becomes unschedulable", pg("", "", ""), pg(pending, resources, "cpu idle 4"), "Unschedulable"},
		{"other amounts", pg(pending, resources, "cpu idle 4"), pg(pending, resources, "cpu idle 3"), ""},
		{"another story, same reason", pg(pending, resources, "resource in cluster is overused: cpu idle 4"),
			pg(pending, resources, "queue resource quota insufficient: queue q capability cpu 6"), "Unschedulable"},
		{"another reason", pg(inqueue, resources, "x"), pg(inqueue, tasks, "x"), "Unschedulable"},
		{"admitted", pg(pending, resources, "x"), pg(inqueue, "", ""), ""},
		{"starts running", pg(inqueue, "", ""), pg(running, "", ""), "Scheduled"},
		{"starts running, its old reason gone", pg(inqueue, tasks, "x"), pg(running, "", ""), "Scheduled"},
		{"counts of a running gang", pg(running, "", ""), pg(running, "", ""), ""},
		{"completes", pg(running, "", ""), pg(completed, "", ""), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs := podGroupEvents(tc.old, tc.pg)
			switch {
			case tc.want == "" && len(evs) != 0:
				t.Errorf("events %+v, want none", evs)
			case tc.want != "" && (len(evs) != 1 || evs[0].reason != tc.want):
				t.Errorf("events %+v, want one %s", evs, tc.want)
			}
		})
	}
}
