package job

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/controllers/job/state"
	"github.com/ringfire/ringfire/shard"
)

// A phase transition is counted and timed once it is written: a write that
// failed and was tried again counts once; the first Running is timed from the
// Job's creation, a later Running (after a restart) is not; a final phase is
// timed by phase.
func TestPhaseWritesAreTimedOnce(t *testing.T) {
	ctx := context.Background()
	job := runningJob()
	job.CreationTimestamp = metav1.NewTime(time.Now().Add(-30 * time.Second))
	job.Status.State = batch.JobState{Phase: batch.Pending}
	job.Status.Running, job.Status.Pending = 0, 2
	job.Status.Conditions = []batch.JobCondition{{Status: batch.Pending}}

	reg := prometheus.NewRegistry()
	kube, vc := kubefake.NewClientset(), vcfake.NewSimpleClientset(job)
	cfg := DefaultConfig()
	cfg.Kube, cfg.Volcano, cfg.Cache = kube, vc, cache.New(cache.Config{Kube: kube, Volcano: vc})
	cfg.Ownership, cfg.StatusCoalesce, cfg.Registerer = shard.HoldAll{}, -1, reg
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	failures := 1
	vc.PrependReactor("update", "jobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" && failures > 0 {
			failures--
			return true, nil, errors.New("connection reset by peer")
		}
		return false, nil, nil
	})
	spec := state.SpecOf(job)
	toRunning := state.Step{Then: state.PendingRule}
	if err := c.writeStatusOf(ctx, "ns/a", job, nil, toRunning, spec, counts(2, 0)); err == nil {
		t.Fatal("the first write did not fail")
	}
	if err := c.writeStatusOf(ctx, "ns/a", job, nil, toRunning, spec, counts(2, 0)); err != nil {
		t.Fatal(err)
	}
	running, err := vc.BatchV1alpha1().Jobs("ns").Get(ctx, "a", metav1.GetOptions{})
	if err != nil || running.Status.State.Phase != batch.Running {
		t.Fatalf("phase %v (%v), want Running", running.Status.State.Phase, err)
	}
	// A restart brings the Job to Running again: a transition, not a first Running.
	again := running.DeepCopy()
	again.Status.State.Phase = batch.Pending
	again.Status.Conditions = append(again.Status.Conditions, batch.JobCondition{Status: batch.Restarting}, batch.JobCondition{Status: batch.Pending})
	if err := c.writeStatusOf(ctx, "ns/a", again, nil, toRunning, spec, counts(2, 0)); err != nil {
		t.Fatal(err)
	}
	done, err := vc.BatchV1alpha1().Jobs("ns").Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.writeStatusOf(ctx, "ns/a", done, nil, state.Step{Then: state.RunningRule}, spec, counts(0, 2)); err != nil {
		t.Fatal(err)
	}
	final, err := vc.BatchV1alpha1().Jobs("ns").Get(ctx, "a", metav1.GetOptions{})
	if err != nil || final.Status.State.Phase != batch.Completed {
		t.Fatalf("phase %v (%v), want Completed", final.Status.State.Phase, err)
	}

	want := `
# HELP ringfire_job_phase_transitions_total Job phase transitions this replica wrote, by new phase.
# TYPE ringfire_job_phase_transitions_total counter
ringfire_job_phase_transitions_total{phase="Completed"} 1
ringfire_job_phase_transitions_total{phase="Running"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "ringfire_job_phase_transitions_total"); err != nil {
		t.Error(err)
	}
	if got := histogramCount(t, reg, "ringfire_job_running_seconds", ""); got != 1 {
		t.Errorf("ringfire_job_running_seconds observed %d times, want once", got)
	}
	if got := histogramCount(t, reg, "ringfire_job_completion_seconds", "Completed"); got != 1 {
		t.Errorf(`ringfire_job_completion_seconds{phase="Completed"} observed %d times, want once`, got)
	}
}

// Commands are counted by action, every known action's series there from
// the start; an action no Job knows is counted as Unknown, so that what a
// Command says cannot grow the label.
func TestCommandsTakenAreCountedByBoundedAction(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := newMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.commandTaken(bus.AbortJobAction)
	m.commandTaken(bus.AbortJobAction)
	m.commandTaken("DropTables")
	m.commandTaken("SomethingElse")
	want := `
# HELP ringfire_job_commands_taken_total Job Commands this replica took (deleted and ran), by action; an action no Job knows counts as Unknown.
# TYPE ringfire_job_commands_taken_total counter
ringfire_job_commands_taken_total{action="AbortJob"} 2
ringfire_job_commands_taken_total{action="CompleteJob"} 0
ringfire_job_commands_taken_total{action="RestartJob"} 0
ringfire_job_commands_taken_total{action="RestartPartition"} 0
ringfire_job_commands_taken_total{action="RestartPod"} 0
ringfire_job_commands_taken_total{action="RestartTask"} 0
ringfire_job_commands_taken_total{action="ResumeJob"} 0
ringfire_job_commands_taken_total{action="SyncJob"} 0
ringfire_job_commands_taken_total{action="TerminateJob"} 0
ringfire_job_commands_taken_total{action="Unknown"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "ringfire_job_commands_taken_total"); err != nil {
		t.Error(err)
	}
}

// histogramCount is the sample count of a histogram's series whose phase
// label is phase ("" for a histogram with no labels).
func histogramCount(t *testing.T, reg *prometheus.Registry, name, phase string) uint64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			label := ""
			for _, l := range s.GetLabel() {
				if l.GetName() == "phase" {
					label = l.GetValue()
				}
			}
			if label == phase {
				n += s.GetHistogram().GetSampleCount()
			}
		}
	}
	return n
}
