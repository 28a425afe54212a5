package job

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/controllers/job/state"
)

var syncReq = request{Request: state.Request{Event: bus.OutOfSyncEvent}}

// An action runs with Volcano's Event, "Start to execute action X " (its
// trailing space included). A policy timeout postpones the action with
// Volcano's "Execute action X after T"; when the postponed action runs, no
// second Event is recorded, as in Volcano.
func TestActionEvents(t *testing.T) {
	ctx := context.Background()
	job := testJob("a", task("w", 1))
	job.Status.State.Phase = batch.Running
	job.Spec.Policies = []batch.LifecyclePolicy{
		{Event: bus.PodPendingEvent, Action: bus.RestartJobAction, Timeout: &metav1.Duration{Duration: 90 * time.Second}},
		{Event: bus.PodFailedEvent, Action: bus.AbortJobAction},
	}
	pod := podOf(job, "w", 0, corev1.PodPending)
	podReq := func(event bus.Event) request {
		return request{Request: state.Request{Event: event, TaskName: "w", PodName: pod.Name, JobVersion: 2, JobUID: job.UID}}
	}

	f := newFixture(t, nil, job)
	f.admit(t, job)
	f.cacheOwned(t, cache.Pods, pod)
	if err := f.c.reconcile(ctx, "ns/a", podReq(bus.PodPendingEvent)); err != nil {
		t.Fatal(err)
	}
	if got := f.recorded(); !slices.Equal(got, []string{"Normal ExecuteAction Execute action RestartJob after 1m30s"}) {
		t.Fatalf("postponed: events %q", got)
	}
	delayed := podReq(bus.PodPendingEvent)
	delayed.Action, delayed.delay = bus.RestartJobAction, 1 // the token add gave
	if err := f.c.reconcile(ctx, "ns/a", delayed); err != nil {
		t.Fatal(err)
	}
	if got := f.recorded(); len(got) != 0 {
		t.Fatalf("the postponed action ran with events %q, want none", got)
	}

	f = newFixture(t, nil, job)
	f.admit(t, job)
	f.cacheOwned(t, cache.Pods, changed(pod, exited(1)))
	if err := f.c.reconcile(ctx, "ns/a", podReq(bus.PodFailedEvent)); err != nil {
		t.Fatal(err)
	}
	if got := f.recorded(); !slices.Equal(got, []string{"Normal ExecuteAction Start to execute action AbortJob "}) {
		t.Fatalf("at once: events %q", got)
	}
}

// A Job whose PodGroup's latest true condition is not Scheduled gets
// Volcano's Warning PodGroupPending, naming the Job, once per story: not
// again on the next sync, nor when only the amounts in the message move;
// again when the wording changes, and when the condition went and came back.
// A condition that the gang has too few pods is told only if the Job, having
// made what it can, really has too few (the one-pod Job "short" here, whose
// second task waits on dependsOn), not while the scheduler has yet to see
// the pods the Job made ("a" here).
func TestPodGroupPendingIsToldOncePerStory(t *testing.T) {
	ctx := context.Background()
	b := task("b", 1)
	b.DependsOn = &batch.DependsOn{Name: []string{"w"}}
	for _, job := range []*batch.Job{testJob("a", task("w", 2)), testJob("short", task("w", 1), b)} {
		job.Status.State.Phase = batch.Pending
		f := newFixture(t, nil, job)
		pg := f.podGroupOf(job)
		pg.Status.Phase = scheduling.PodGroupInqueue
		at := metav1.Now()
		unschedulable := func(reason, msg string) scheduling.PodGroupCondition {
			return scheduling.PodGroupCondition{Type: scheduling.PodGroupUnschedulableType, Status: corev1.ConditionTrue,
				Reason: reason, Message: msg, LastTransitionTime: at}
		}
		overused := func(msg string) scheduling.PodGroupCondition {
			return unschedulable(scheduling.NotEnoughResourcesReason, msg)
		}
		scheduled := scheduling.PodGroupCondition{Type: scheduling.PodGroupScheduled, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(at.Add(time.Second))}
		told := "Warning PodGroupPending PodGroup ns:" + job.Name + " unschedulable, reason: "
		tooFew := "Not enough valid tasks for gang-scheduling, valid: 0, min: 2"
		var toldTooFew []string
		if job.Name == "short" {
			toldTooFew = []string{told + tooFew}
		}
		for _, step := range []struct {
			name  string
			conds []scheduling.PodGroupCondition
			want  []string
		}{
			{"no condition", nil, nil},
			{"overused", []scheduling.PodGroupCondition{overused("cpu idle 4, minResources 8")},
				[]string{told + "cpu idle 4, minResources 8"}},
			{"the same again", []scheduling.PodGroupCondition{overused("cpu idle 4, minResources 8")}, nil},
			{"other amounts", []scheduling.PodGroupCondition{overused("cpu idle 3, minResources 8")}, nil},
			{"other wording", []scheduling.PodGroupCondition{overused("queue q is Closed")}, []string{told + "queue q is Closed"}},
			{"scheduled later than unschedulable", []scheduling.PodGroupCondition{overused("queue q is Closed"), scheduled}, nil},
			{"unschedulable back", []scheduling.PodGroupCondition{overused("queue q is Closed")}, []string{told + "queue q is Closed"}},
			{"not true", []scheduling.PodGroupCondition{func() scheduling.PodGroupCondition {
				c := overused("x")
				c.Status = corev1.ConditionFalse
				return c
			}()}, nil},
			{"too few pods", []scheduling.PodGroupCondition{unschedulable(scheduling.NotEnoughPodsReason, tooFew)}, toldTooFew},
		} {
			p := pg.DeepCopy()
			p.Status.Conditions = step.conds
			f.cacheOwned(t, cache.PodGroups, p)
			if err := f.c.reconcile(ctx, keyOf(job), syncReq); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range f.recorded() {
				if strings.Contains(e, "PodGroupPending") {
					got = append(got, e)
				}
			}
			if !slices.Equal(got, step.want) {
				t.Fatalf("%s, %s: events %q, want %q", job.Name, step.name, got, step.want)
			}
		}
	}
}

// A PodGroup update that keeps the phase brings its Job back when its
// condition tells another story, so that the Job can report it; one that
// changes only the amounts, or nothing the Job reports, does not.
func TestPodGroupConditionChangeBringsTheJobBack(t *testing.T) {
	job := eventJob()
	f := newFixture(t, nil, job)
	pg := func(rv, msg string) *scheduling.PodGroup {
		p := f.podGroupOf(job)
		p.Status.Phase, p.ResourceVersion = scheduling.PodGroupInqueue, rv
		if msg != "" {
			p.Status.Conditions = []scheduling.PodGroupCondition{{Type: scheduling.PodGroupUnschedulableType,
				Status: corev1.ConditionTrue, Reason: scheduling.NotEnoughResourcesReason, Message: msg}}
		}
		return p
	}
	sync := []enqueued{{"ns/a", syncReq}}
	for _, tc := range []struct {
		name     string
		old, new *scheduling.PodGroup
		want     []enqueued
	}{
		{"condition appears", pg("1", ""), pg("2", "cpu idle 4"), sync},
		{"amounts move", pg("1", "cpu idle 4"), pg("2", "cpu idle 3"), nil},
		{"wording changes", pg("1", "cpu idle 4"), pg("2", "queue q is Closed"), sync},
		{"condition goes", pg("1", "cpu idle 4"), pg("2", ""), sync},
		{"counts only", pg("1", ""), pg("2", ""), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assertRequests(t, f.requestsOf(t, func() { f.c.onPodGroupUpdate(tc.old, tc.new) }), tc.want)
		})
	}
}

// A Job whose minAvailable counts pods created only after their dependsOn
// tasks run says so once, in the status write its first sync makes anyway
// (status.state.reason and message) and in one Warning Event; later syncs
// write and record nothing more. Once the spec is fixed, the next sync
// clears the reason.
func TestUnreachableGangIsToldOnce(t *testing.T) {
	ctx := context.Background()
	b := task("b", 1)
	b.DependsOn = &batch.DependsOn{Name: []string{"a"}}
	job := testJob("d", task("a", 1), b) // minAvailable left out: 2, the tasks' sum
	f := newFixture(t, nil, job)
	f.admit(t, job)

	for i := range 3 {
		if err := f.c.reconcile(ctx, "ns/d", syncReq); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			f.cacheOwned(t, cache.Pods, podOf(job, "a", 0, corev1.PodPending))
		}
	}
	var warned []string
	for _, e := range f.recorded() {
		if strings.HasPrefix(e, "Warning "+ReasonMinAvailableUnreachable+" ") {
			warned = append(warned, e)
		}
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "minAvailable 2 counts the pods of task b") {
		t.Fatalf("events %q, want one %s", warned, ReasonMinAvailableUnreachable)
	}
	if n := statusUpdates(f.vc); n != 1 {
		t.Fatalf("%d status writes, want the first sync's alone", n)
	}
	got, err := f.vc.BatchV1alpha1().Jobs("ns").Get(ctx, "d", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st := got.Status.State; st.Phase != batch.Pending || st.Reason != ReasonMinAvailableUnreachable || st.Message != strings.TrimPrefix(warned[0], "Warning "+ReasonMinAvailableUnreachable+" ") {
		t.Fatalf("status.state %+v, want Pending with the Event's reason and message", st)
	}

	// The user lowers minAvailable: the reason goes with the next sync.
	fixed := got.DeepCopy()
	fixed.Spec.MinAvailable, fixed.Generation, fixed.ResourceVersion = 1, 2, "11"
	f.cacheJob(t, fixed)
	if err := f.c.reconcile(ctx, "ns/d", syncReq); err != nil {
		t.Fatal(err)
	}
	got, err = f.vc.BatchV1alpha1().Jobs("ns").Get(ctx, "d", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st := got.Status.State; st.Reason != "" || st.Message != "" {
		t.Fatalf("after the fix status.state %+v, want no reason", st)
	}
}
