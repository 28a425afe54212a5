package scheduler

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	vcv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

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
