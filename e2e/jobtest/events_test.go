package jobtest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/ringfire/ringfire/controllers/job"
	"github.com/ringfire/ringfire/controllers/scheduler"
	"github.com/ringfire/ringfire/e2e/stack"
	"github.com/ringfire/ringfire/e2e/vcjob"
	"github.com/ringfire/ringfire/shard"
)

// The Events the Job controller records on a Job are those Volcano's
// vc-controller-manager records on the same Job beside vc-scheduler (as
// docs/jobs.md "Events" lists them, found by running both): a plain Job
// none; an action Volcano's words; a gang the scheduler cannot start a
// PodGroupPending, once; a PodPending policy's timeout "Execute action ...
// after ..." and its action run from the pod's creation, whatever the pod's
// later changes. And ringfire's own: a minAvailable that counts pods of tasks
// waiting on dependsOn is told once, in an Event and in the status. The gang
// scheduler runs in the test, so that PodGroups carry its conditions.
func TestJobEvents(t *testing.T) {
	s := stack.Start(t, stack.Options{})
	runGangScheduler(t, s)
	ctx := context.Background()

	plain := vcjob.New(ns, "plain", vcjob.Task("w", 2, "1s", ""))
	abort := vcjob.New(ns, "abort", vcjob.Task("w", 1, "1s", "3"))
	three := int32(3)
	abort.Spec.Policies = []batch.LifecyclePolicy{{ExitCode: &three, Action: bus.AbortJobAction}}
	// b's pods are made only once a's run, and minAvailable (left out: 2) counts them.
	depmin := vcjob.New(ns, "depmin", vcjob.Task("a", 1, "1h", ""), vcjob.Task("b", 1, "1s", ""))
	depmin.Spec.Tasks[1].DependsOn = &batch.DependsOn{Name: []string{"a"}}
	// More cpu than the cluster has: the scheduler never admits it.
	huge := vcjob.New(ns, "huge", vcjob.TaskOf("w", 1, vcjob.Runs("1s", ""), "100000", vcjob.Memory))
	// a runs; b's pod can never be placed (minAvailable 0 lets a start alone) and its
	// PodPending timeout restarts the Job.
	zero := int32(0)
	pend := vcjob.New(ns, "pend", vcjob.Task("a", 1, "1h", ""),
		vcjob.TaskOf("b", 1, vcjob.Runs("1s", ""), "100000", vcjob.Memory))
	pend.Spec.Tasks[1].MinAvailable = &zero
	pend.Spec.MaxRetry = 100
	pend.Spec.Policies = []batch.LifecyclePolicy{{Event: bus.PodPendingEvent, Action: bus.RestartJobAction,
		Timeout: &metav1.Duration{Duration: 3 * time.Second}}}
	for _, j := range []*batch.Job{plain, abort, depmin, huge, pend} {
		vcjob.Create(t, s.Volcano, j)
	}

	// The pending pod of pend changes every half second (a label, as anyone may set): its
	// PodPending timeout still runs from its creation, and the Job restarts.
	first := waitPod(t, s, "pend-b-0")
	restarted := false
	for i := 0; !restarted && i < 120; i++ {
		patch := fmt.Sprintf(`{"metadata":{"labels":{"poke":"%d"}}}`, i)
		_, _ = s.Kube.CoreV1().Pods(ns).Patch(ctx, "pend-b-0", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		time.Sleep(500 * time.Millisecond)
		p, err := s.Kube.CoreV1().Pods(ns).Get(ctx, "pend-b-0", metav1.GetOptions{})
		restarted = err == nil && p.UID != first
	}
	if !restarted {
		t.Fatalf("pend: its pending pod was not replaced in 60s of changes to it\n%s", s.Describe(ns, "pend"))
	}

	s.WaitPhase(ns, "plain", 60*time.Second, batch.Completed)
	s.WaitPhase(ns, "abort", 60*time.Second, batch.Aborted)
	stack.WaitUntil(t, "depmin and huge told why they wait", 60*time.Second, func() bool {
		return len(s.Events(ns, "depmin", string(batch.PodGroupPending))) > 0 && len(s.Events(ns, "huge", string(batch.PodGroupPending))) > 0
	})
	// Later looks tell nothing again: the scheduler rewrites nothing, and the Jobs' syncs
	// find the same story.
	time.Sleep(3 * time.Second)

	expect := func(name, reason string, want ...string) {
		t.Helper()
		got := s.Events(ns, name, reason)
		if len(got) != len(want) {
			t.Errorf("%s: %d %s Events %q, want %d\n%s", name, len(got), reason, got, len(want), s.Describe(ns, name))
			return
		}
		for i := range want {
			if !strings.HasPrefix(got[i], want[i]) {
				t.Errorf("%s: %s Event %q, want it to begin %q", name, reason, got[i], want[i])
			}
		}
	}
	if d := s.Describe(ns, "plain"); strings.Contains(d, "event ") {
		t.Errorf("plain: Events on a Job that ran as asked, want none\n%s", d)
	}
	expect("abort", string(batch.ExecuteAction), "Start to execute action AbortJob ")
	if got := s.Events(ns, "abort", string(batch.ExecuteAction)); len(got) == 1 && got[0] != "Start to execute action AbortJob " {
		t.Errorf("abort: %q, want Volcano's words exactly", got[0])
	}
	expect("depmin", job.ReasonMinAvailableUnreachable, "minAvailable 2 counts the pods of task b")
	expect("depmin", string(batch.PodGroupPending),
		"PodGroup default:depmin unschedulable, reason: Not enough valid tasks for gang-scheduling, valid: ")
	// huge's story names what other gangs reserve, which moves while the other Jobs of this
	// test are admitted and end: each new figure is a new Event, the same one never twice.
	hugeEvents := s.Events(ns, "huge", string(batch.PodGroupPending))
	seen := map[string]bool{}
	for _, e := range hugeEvents {
		if !strings.HasPrefix(e, "PodGroup default:huge unschedulable, reason: ") || seen[e] {
			t.Errorf("huge: PodGroupPending Events %q, want each to begin %q, none twice", hugeEvents, "PodGroup default:huge unschedulable, reason: ")
			break
		}
		seen[e] = true
	}
	got, err := s.Volcano.BatchV1alpha1().Jobs(ns).Get(ctx, "depmin", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st := got.Status.State; st.Phase != batch.Pending || st.Reason != job.ReasonMinAvailableUnreachable ||
		!strings.HasPrefix(st.Message, "minAvailable 2 counts the pods of task b") {
		t.Errorf("depmin: status.state %+v, want Pending, held with the reason", st)
	}
	for _, msg := range s.Events(ns, "pend", string(batch.ExecuteAction)) {
		if msg != "Execute action RestartJob after 3s" {
			t.Errorf("pend: ExecuteAction %q: a postponed action is told when postponed, and only then", msg)
		}
	}
	if len(s.Events(ns, "pend", string(batch.ExecuteAction))) == 0 {
		t.Errorf("pend: no Event told the postponed RestartJob\n%s", s.Describe(ns, "pend"))
	}
}

// waitPod waits until the pod exists, and returns its UID.
func waitPod(t *testing.T, s *stack.Stack, name string) types.UID {
	t.Helper()
	var uid types.UID
	stack.WaitUntil(t, "pod "+name, 60*time.Second, func() bool {
		p, err := s.Kube.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil {
			uid = p.UID
			return true
		}
		return false
	})
	return uid
}

// runGangScheduler runs ringfire's gang scheduler beside the stack's replicas (which run
// none) until the test ends, writing the conditions of waiting gangs within a second.
func runGangScheduler(t *testing.T, s *stack.Stack) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cfg := scheduler.DefaultConfig()
	cfg.Kube, cfg.Volcano, cfg.Ownership = s.Kube, s.Volcano, shard.HoldAll{Ctx: ctx, S: 64}
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: "scheduler", Level: hclog.Warn, Output: logWriter{t}})
	cfg.PodsQuiet, cfg.MessageQuiet = time.Second, time.Second
	ctrl, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); ctrl.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

type logWriter struct{ t testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
