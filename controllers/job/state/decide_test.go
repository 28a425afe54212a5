package state

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
)

func TestDecideWholeTransitions(t *testing.T) {
	spec := Spec{MinAvailable: 2, MaxRetry: 3, Tasks: []Task{{Name: "worker", Replicas: 2}}}
	rows := []struct {
		name      string
		in        Input
		wantKill  Kill
		wantSync  bool
		wantPhase batch.JobPhase
		wantSet   bool
		wantRetry int32
		wantBump  bool
	}{
		{"Pending/SyncJob: pods started → Running", Input{Phase: batch.Pending, Action: bus.SyncJobAction, Spec: spec,
			Counts: Counts{Running: 2}}, KillNone, true, batch.Running, true, 0, false},
		{"empty phase is Pending", Input{Action: bus.SyncJobAction, Spec: spec,
			Counts: Counts{Pending: 2}}, KillNone, true, batch.Pending, false, 0, false},
		{"Running/RestartJob: kill all, Restarting, retry 0→1, version+1", Input{Phase: batch.Running, Action: bus.RestartJobAction,
			Spec: spec, Counts: Counts{Terminating: 2}}, KillAll, false, batch.Restarting, true, 1, true},
		{"Running/RestartPod: kill the pod, Restarting, retry+1, version kept", Input{Phase: batch.Running, Action: bus.RestartPodAction,
			Spec: spec, Counts: Counts{Running: 1, Terminating: 1}}, KillPod, false, batch.Restarting, true, 1, false},
		{"Running/SyncJob: all succeeded → Completed", Input{Phase: batch.Running, Action: bus.SyncJobAction, Spec: spec,
			Counts: Counts{Succeeded: 2}}, KillNone, true, batch.Completed, true, 0, false},
		{"Restarting/SyncJob: retry 3 of 3 → Failed", Input{Phase: batch.Restarting, Action: bus.SyncJobAction, Spec: spec,
			RetryCount: 3, Counts: Counts{}}, KillNone, true, batch.Failed, true, 3, false},
		{"Restarting/SyncJob: old pods gone → Pending", Input{Phase: batch.Restarting, Action: bus.SyncJobAction, Spec: spec,
			RetryCount: 1, Counts: Counts{}}, KillNone, true, batch.Pending, true, 1, false},
		{"Aborting/SyncJob: drained → Aborted", Input{Phase: batch.Aborting, Action: bus.SyncJobAction, Spec: spec,
			Counts: Counts{Succeeded: 1}}, KillSoft, false, batch.Aborted, true, 0, true},
		{"Aborted/ResumeJob: Restarting, retry+1", Input{Phase: batch.Aborted, Action: bus.ResumeJobAction, Spec: spec,
			RetryCount: 1, Counts: Counts{}}, KillSoft, false, batch.Restarting, true, 2, true},
		{"Aborted/SyncJob: stays Aborted", Input{Phase: batch.Aborted, Action: bus.SyncJobAction, Spec: spec,
			Counts: Counts{}}, KillSoft, false, batch.Aborted, false, 0, true},
		{"Completing/SyncJob: drained → Completed", Input{Phase: batch.Completing, Action: bus.SyncJobAction, Spec: spec,
			Counts: Counts{Succeeded: 2}}, KillSoft, false, batch.Completed, true, 0, true},
		{"Terminating/SyncJob: still terminating → stays", Input{Phase: batch.Terminating, Action: bus.SyncJobAction, Spec: spec,
			Counts: Counts{Terminating: 1}}, KillSoft, false, batch.Terminating, false, 0, true},
		{"Failed/RestartJob: finished stays Failed", Input{Phase: batch.Failed, Action: bus.RestartJobAction, Spec: spec,
			RetryCount: 3, Counts: Counts{Failed: 2}}, KillSoft, false, batch.Failed, false, 3, true},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			d := decide(row.in)
			if d.Kill != row.wantKill || d.Sync != row.wantSync {
				t.Errorf("kill %s, sync %v; want kill %s, sync %v", d.Kill, d.Sync, row.wantKill, row.wantSync)
			}
			if d.Phase != row.wantPhase || d.PhaseSet != row.wantSet {
				t.Errorf("phase %s (set %v), want %s (set %v)", d.Phase, d.PhaseSet, row.wantPhase, row.wantSet)
			}
			if d.RetryCount != row.wantRetry || d.BumpVersion != row.wantBump {
				t.Errorf("retryCount %d, version+1 %v; want %d, %v", d.RetryCount, d.BumpVersion, row.wantRetry, row.wantBump)
			}
		})
	}
}

// TestDecideRestartsUntilMaxRetryThenFails walks a job whose pods keep failing under a
// PodFailed → RestartJob policy: with maxRetry 3 it is restarted three times, the third restart
// keeps its failed pods (last retry), and the job then fails.
func TestDecideRestartsUntilMaxRetryThenFails(t *testing.T) {
	spec := Spec{MinAvailable: 2, MaxRetry: 3, Tasks: []Task{{Name: "worker", Replicas: 2}}}
	phase, retry := batch.Running, int32(0)
	var kills []Kill
	for step := 0; step < 20 && phase != batch.Failed; step++ {
		var in Input
		switch phase {
		case batch.Running:
			in = Input{Phase: phase, Action: bus.RestartJobAction, Counts: Counts{Terminating: 2}}
		case batch.Restarting:
			in = Input{Phase: phase, Action: bus.SyncJobAction, Counts: Counts{}}
		case batch.Pending:
			in = Input{Phase: phase, Action: bus.SyncJobAction, Counts: Counts{Running: 2}}
		default:
			t.Fatalf("unexpected phase %s", phase)
		}
		in.Spec, in.RetryCount = spec, retry
		d := decide(in)
		if d.Kill.Full() {
			kills = append(kills, d.Kill)
		}
		phase, retry = d.Phase, d.RetryCount
	}
	if phase != batch.Failed || retry != 3 {
		t.Fatalf("ended %s with retryCount %d, want Failed with 3", phase, retry)
	}
	if want := []Kill{KillAll, KillAll, KillSoft}; !reflect.DeepEqual(kills, want) {
		t.Errorf("kills %v, want %v", kills, want)
	}
}

func TestKillDeletes(t *testing.T) {
	phases := []corev1.PodPhase{corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed, corev1.PodUnknown}
	want := map[Kill][]bool{
		KillAll:  {true, true, true, true, true},
		KillSoft: {true, true, false, false, true},
		KillNone: {false, false, false, false, false},
	}
	for kill, deletes := range want {
		for i, phase := range phases {
			if got := kill.Deletes(phase); got != deletes[i] {
				t.Errorf("%s kill deletes a %s pod: %v, want %v", kill, phase, got, deletes[i])
			}
		}
	}
	for _, k := range []Kill{KillTask, KillPod, KillPartition} {
		if k.Full() || !k.targeted() {
			t.Errorf("%s: full %v, targeted %v; want a targeted kill", k, k.Full(), k.targeted())
		}
	}
}

func TestCountsAndSpecOfAJob(t *testing.T) {
	job := &batch.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "j"},
		Spec: batch.JobSpec{
			MinAvailable: 3, MinSuccess: i32(2), MaxRetry: 4,
			Tasks: []batch.TaskSpec{{Name: "master", Replicas: 1, MinAvailable: i32(1)}, {Name: "worker", Replicas: 3}},
		},
		Status: batch.JobStatus{
			Pending: 1, Running: 2, Succeeded: 3, Failed: 4, Unknown: 5, Terminating: 6,
			TaskStatusCount: map[string]batch.TaskState{
				"master": {Phase: map[corev1.PodPhase]int32{corev1.PodSucceeded: 1}},
				"worker": {Phase: map[corev1.PodPhase]int32{corev1.PodRunning: 2}},
			},
		},
	}
	wantCounts := Counts{Pending: 1, Running: 2, Succeeded: 3, Failed: 4, Unknown: 5, Terminating: 6,
		TaskSucceeded: map[string]int32{"master": 1, "worker": 0}}
	if got := countsOf(job.Status); !reflect.DeepEqual(got, wantCounts) {
		t.Errorf("countsOf = %+v, want %+v", got, wantCounts)
	}
	spec := SpecOf(job)
	if spec.MinAvailable != 3 || *spec.MinSuccess != 2 || spec.MaxRetry != 4 || len(spec.Tasks) != 2 {
		t.Errorf("SpecOf = %+v", spec)
	}
	if spec.Replicas() != 4 || spec.taskMinAvailable() != 4 {
		t.Errorf("replicas %d, task minAvailable %d; want 4, 4 (a task without one counts its replicas)",
			spec.Replicas(), spec.taskMinAvailable())
	}
}

func TestStringsNameEveryValue(t *testing.T) {
	for k := KillNone; k <= KillPartition; k++ {
		if k.String() == "invalid" {
			t.Errorf("kill %d has no name", k)
		}
	}
	for r := Keep; r <= ToFailed; r++ {
		if r.String() == "invalid" {
			t.Errorf("rule %d has no name", r)
		}
	}
	for r := ReasonExplicit; r <= ReasonNoPolicy; r++ {
		if r.String() == "invalid" {
			t.Errorf("reason %d has no name", r)
		}
	}
}
