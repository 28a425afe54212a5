package scheduler

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	vcv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

func TestStatusWriteDue(t *testing.T) {
	now := metav1.NewTime(epoch.Add(time.Hour))
	q := quiet{message: 10 * time.Second, pods: 10 * time.Second, podsAtMost: 100 * time.Second}
	at := func(ago time.Duration) metav1.Time { return metav1.NewTime(now.Add(-ago)) }
	cond := func(typ vcv1beta1.PodGroupConditionType, reason, msg, id string, when metav1.Time) vcv1beta1.PodGroupCondition {
		return vcv1beta1.PodGroupCondition{Type: typ, Status: corev1.ConditionTrue, Reason: reason, Message: msg,
			TransitionID: id, LastTransitionTime: when}
	}
	scheduled := func(id string, when metav1.Time) vcv1beta1.PodGroupCondition {
		return cond(vcv1beta1.PodGroupScheduled, scheduledReason, "", id, when)
	}
	unsched := func(reason, msg, id string, when metav1.Time) vcv1beta1.PodGroupCondition {
		return cond(vcv1beta1.PodGroupUnschedulableType, reason, msg, id, when)
	}
	status := func(phase vcv1beta1.PodGroupPhase, running, succeeded int32, conds ...vcv1beta1.PodGroupCondition) vcv1beta1.PodGroupStatus {
		return vcv1beta1.PodGroupStatus{Phase: phase, Running: running, Succeeded: succeeded, Conditions: conds}
	}
	const (
		pending, inqueue, running, completed = vcv1beta1.PodGroupPending, vcv1beta1.PodGroupInqueue, vcv1beta1.PodGroupRunning, vcv1beta1.PodGroupCompleted
		resources, tasks                     = vcv1beta1.NotEnoughResourcesReason, vcv1beta1.NotEnoughPodsReason
	)
	for _, tc := range []struct {
		name      string
		old, next vcv1beta1.PodGroupStatus
		lastWrite time.Duration // how long ago this shift last wrote the PodGroup
		standing  time.Duration // how long the next status has stood as it is
		want      bool
		cause     string
	}{
		{
			name: "nothing differs", old: status(running, 10, 0, scheduled("a", at(time.Minute))),
			next: status(running, 10, 0, scheduled("a", at(time.Minute))), lastWrite: time.Hour,
		},
		{
			name: "only a condition's time and transition ID differ",
			old:  status(running, 10, 0, scheduled("a", at(time.Minute))),
			next: status(running, 10, 0, scheduled("b", now)), lastWrite: time.Hour,
		},
		{
			name: "the conditions in another order",
			old:  status(pending, 0, 0, scheduled("a", at(time.Minute)), unsched(resources, "m", "a", at(time.Minute))),
			next: status(pending, 0, 0, unsched(resources, "m", "b", now), scheduled("b", now)), lastWrite: time.Hour,
		},
		{
			name: "Pending to Inqueue, just after a write", old: status(pending, 0, 0),
			next: status(inqueue, 0, 0), want: true, cause: "decisive",
		},
		{
			name: "Inqueue to Running with Scheduled", old: status(inqueue, 0, 0),
			next: status(running, 0, 0, scheduled("b", now)), want: true, cause: "decisive",
		},
		{
			name: "Completed for less than PodsQuiet waits",
			old:  status(running, 10, 0, scheduled("a", at(time.Second))),
			next: status(completed, 0, 10, scheduled("a", at(time.Second))), lastWrite: time.Minute, standing: 9 * time.Second,
		},
		{
			name: "Completed for PodsQuiet is written",
			old:  status(running, 10, 0, scheduled("a", at(time.Second))),
			next: status(completed, 0, 10, scheduled("a", at(time.Second))), lastWrite: time.Minute, standing: 10 * time.Second,
			want: true, cause: "completed",
		},
		{
			name: "Completed to Running (a pod replaced) is written at once",
			old:  status(completed, 0, 10, scheduled("a", at(time.Second))),
			next: status(running, 0, 9, scheduled("a", at(time.Second))), want: true, cause: "decisive",
		},
		{
			name: "counts that have stood still for less than PodsQuiet wait", old: status(running, 0, 0, scheduled("a", at(time.Second))),
			next: status(running, 10, 0, scheduled("a", at(time.Second))), lastWrite: time.Minute, standing: 9 * time.Second,
		},
		{
			name: "counts that have stood still for PodsQuiet are written", old: status(running, 0, 0, scheduled("a", at(time.Second))),
			next: status(running, 10, 0, scheduled("a", at(time.Second))), lastWrite: time.Minute, standing: 10 * time.Second,
			want: true, cause: "counts",
		},
		{
			name: "counts that never stand still are written 10 × PodsQuiet after the last write", old: status(running, 0, 0, scheduled("a", at(time.Second))),
			next: status(running, 10, 0, scheduled("a", at(time.Second))), lastWrite: 100 * time.Second, want: true, cause: "counts",
		},
		{
			name: "a new message within MessageQuiet of the condition's change waits",
			old:  status(pending, 0, 0, unsched(resources, "cpu idle 4", "a", at(9*time.Second))),
			next: status(pending, 0, 0, unsched(resources, "cpu idle 3", "b", now)), lastWrite: time.Hour,
		},
		{
			name: "a new message after MessageQuiet is written",
			old:  status(pending, 0, 0, unsched(resources, "cpu idle 4", "a", at(10*time.Second))),
			next: status(pending, 0, 0, unsched(resources, "cpu idle 3", "b", now)), want: true, cause: "message",
		},
		{
			name: "a new reason is written at once",
			old:  status(pending, 0, 0, unsched(resources, "cpu idle 4", "a", at(time.Second))),
			next: status(pending, 0, 0, unsched(vcv1beta1.NotEnoughPodsOfTaskReason, "x", "b", now)), want: true, cause: "decisive",
		},
		{
			name: "a condition that goes is written at once",
			old:  status(inqueue, 0, 0, unsched(resources, "cpu idle 4", "a", at(time.Second))),
			next: status(inqueue, 0, 0), want: true, cause: "decisive",
		},
		{
			name: "an admitted gang whose pods are being made: too few pods waits",
			old:  status(inqueue, 0, 0),
			next: status(inqueue, 0, 0, unsched(tasks, "valid: 4, min: 10", "b", now)), lastWrite: time.Minute, standing: 9 * time.Second,
		},
		{
			name: "too few pods for PodsQuiet is written",
			old:  status(inqueue, 0, 0),
			next: status(inqueue, 0, 0, unsched(tasks, "valid: 4, min: 10", "b", now)), lastWrite: time.Minute, standing: 10 * time.Second,
			want: true, cause: "awaiting_pods",
		},
		{
			name: "too few pods with a phase change is written at once",
			old:  status(running, 10, 0, scheduled("a", at(time.Minute))),
			next: status(vcv1beta1.PodGroupUnknown, 9, 0, scheduled("a", at(time.Minute)), unsched(tasks, "valid: 9, min: 10", "b", now)),
			want: true, cause: "decisive",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch := compare(tc.old, tc.next)
			if got := ch.any() && q.due(ch, now, now.Add(-tc.lastWrite), now.Add(-tc.standing)); got != tc.want {
				t.Fatalf("written %v, want %v (%+v)", got, tc.want, ch)
			}
			if tc.want && ch.cause() != tc.cause {
				t.Errorf("cause %q, want %q", ch.cause(), tc.cause)
			}
		})
	}
}

func TestGroupHistory(t *testing.T) {
	h := newGroupHistory(epoch)
	at := func(s int) time.Time { return epoch.Add(time.Duration(s) * time.Second) }
	if got := h.lastWrite("ns/a"); !got.Equal(epoch) {
		t.Errorf("never written: last write %v, want the shift's start", got)
	}
	if got := h.standing("ns/a", "x", at(1)); !got.Equal(at(1)) {
		t.Errorf("first seen: %v", got)
	}
	if got := h.standing("ns/a", "x", at(5)); !got.Equal(at(1)) {
		t.Errorf("unchanged: standing since %v, want %v", got, at(1))
	}
	if got := h.standing("ns/a", "y", at(6)); !got.Equal(at(6)) {
		t.Errorf("changed: standing since %v, want %v", got, at(6))
	}
	h.settled("ns/a")
	if got := h.standing("ns/a", "y", at(7)); !got.Equal(at(7)) {
		t.Errorf("after settling: standing since %v, want %v", got, at(7))
	}
	h.written("ns/a", at(8))
	if _, held := h.held["ns/a"]; held || !h.lastWrite("ns/a").Equal(at(8)) {
		t.Errorf("after a write: held %v, last write %v", held, h.lastWrite("ns/a"))
	}
	h.standing("ns/b", "x", at(9))
	h.prune(map[string]*groupView{"ns/b": {}})
	if _, ok := h.wrote["ns/a"]; ok || len(h.held) != 1 {
		t.Errorf("after pruning ns/a: wrote %v, held %v", h.wrote, h.held)
	}
}
