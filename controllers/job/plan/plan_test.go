package plan

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/controllers/job/build"
	"github.com/ringfire/ringfire/controllers/job/state"
	"github.com/ringfire/ringfire/controllers/kit"
)

var now = time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC)

// world is a Job's view for a row: the Job, its pods, its PodGroup (in a phase, or none).
type world struct {
	job  *batch.Job
	pods []*corev1.Pod
	pg   scheduling.PodGroupPhase // "" for no PodGroup
}

func (w world) input(action bus.Action, req state.Request, f flight) Input {
	var pg *scheduling.PodGroup
	if w.pg != "" {
		pg = build.PodGroup(w.job, 0, nil)
		pg.UID = "uid-pg"
		pg.Status.Phase = w.pg
	}
	return Input{Job: w.job, Pods: podsOf(w.pods...), PodGroup: pg, Action: action, Request: req, Now: now, InFlight: f}
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}

func with(job *batch.Job, edit func(*batch.Job)) *batch.Job { edit(job); return job }

func deleting(p *corev1.Pod) *corev1.Pod {
	p = p.DeepCopy()
	ts := metav1.NewTime(now)
	p.DeletionTimestamp = &ts
	return p
}

func versioned(p *corev1.Pod, v string) *corev1.Pod {
	p.Annotations[batch.JobVersion] = v
	return p
}

// TestMake walks the cases a Volcano Job meets, the side-by-side harness's among them
// (e2e/sidebyside/scenarios: basic, unschedulable, task-completed, policy-*, command-*,
// depends-on, min-success, no-policy-failure, ttl): what the plan creates and deletes, the
// phase it writes, and the version and retry count.
func TestMake(t *testing.T) {
	pending := func() *batch.Job { return newJob(batch.Pending, task("w", 2)) }
	running := func() *batch.Job { return newJob(batch.Running, task("w", 2)) }
	restartOnFail := func(j *batch.Job) {
		j.Spec.Policies = []batch.LifecyclePolicy{{Event: bus.PodFailedEvent, Action: bus.RestartJobAction}}
	}
	rows := []struct {
		name   string
		w      world
		action bus.Action
		req    state.Request
		f      flight

		create, delete []string
		createPG       bool
		deletePG       bool
		write          bool
		phase          batch.JobPhase
		version, retry int32
		terminating    int32
	}{
		{name: "basic: a new Job makes its PodGroup first, no pods",
			w: world{job: newJob("", task("w", 2))}, action: bus.SyncJobAction,
			createPG: true, write: true, phase: batch.Pending, version: 2},
		{name: "unschedulable: PodGroup Pending, no pods yet, nothing to write",
			w:      world{job: with(pending(), func(j *batch.Job) { j.Status.MinAvailable = 2 }), pg: scheduling.PodGroupPending},
			action: bus.SyncJobAction, phase: batch.Pending, version: 2},
		{name: "basic: PodGroup admitted, the pods are created and counted pending",
			w: world{job: pending(), pg: scheduling.PodGroupInqueue}, action: bus.SyncJobAction,
			create: []string{"j-w-0", "j-w-1"}, write: true, phase: batch.Pending, version: 2},
		{name: "a create in flight is not made again, and counts as pending",
			w: world{job: pending(), pg: scheduling.PodGroupInqueue}, action: bus.SyncJobAction,
			f:      flight{creating: map[string]bool{"j-w-0": true}},
			create: []string{"j-w-1"}, write: true, phase: batch.Pending, version: 2},
		{name: "basic: the pods run → Running",
			w: world{job: pending(), pg: scheduling.PodGroupRunning, pods: []*corev1.Pod{
				podOf(pending(), "w", 0, corev1.PodRunning), podOf(pending(), "w", 1, corev1.PodRunning)}},
			action: bus.SyncJobAction, write: true, phase: batch.Running, version: 2},
		{name: "basic: all succeeded → Completed, with the final kill in the same write (version+1)",
			w: world{job: running(), pg: scheduling.PodGroupRunning, pods: []*corev1.Pod{
				podOf(running(), "w", 0, corev1.PodSucceeded), podOf(running(), "w", 1, corev1.PodSucceeded)}},
			action: bus.SyncJobAction, deletePG: true, write: true, phase: batch.Completed, version: 3},
		{name: "min-success: one succeeded of minSuccess 1 → Completed, the running pod killed",
			w: world{job: with(running(), func(j *batch.Job) { one := int32(1); j.Spec.MinSuccess = &one }),
				pg: scheduling.PodGroupRunning, pods: []*corev1.Pod{
					podOf(running(), "w", 0, corev1.PodSucceeded), podOf(running(), "w", 1, corev1.PodRunning)}},
			action: bus.SyncJobAction, delete: []string{"j-w-1"}, deletePG: true, write: true,
			phase: batch.Completed, version: 3, terminating: 1},
		{name: "no-policy-failure: all ended, one failed → Failed",
			w: world{job: running(), pg: scheduling.PodGroupRunning, pods: []*corev1.Pod{
				podOf(running(), "w", 0, corev1.PodSucceeded), podOf(running(), "w", 1, corev1.PodFailed)}},
			action: bus.SyncJobAction, deletePG: true, write: true, phase: batch.Failed, version: 3},
		{name: "policy-restart-job: RestartJob kills every pod and the PodGroup, Restarting, retry+1, version+1",
			w: world{job: with(running(), restartOnFail), pg: scheduling.PodGroupRunning, pods: []*corev1.Pod{
				podOf(running(), "w", 0, corev1.PodFailed), podOf(running(), "w", 1, corev1.PodRunning)}},
			action: bus.RestartJobAction, delete: []string{"j-w-0", "j-w-1"}, deletePG: true, write: true,
			phase: batch.Restarting, version: 3, retry: 1, terminating: 2},
		{name: "policy-restart-job: a delete in flight is counted, not sent again",
			w: world{job: with(running(), restartOnFail), pg: scheduling.PodGroupRunning, pods: []*corev1.Pod{
				podOf(running(), "w", 0, corev1.PodFailed), podOf(running(), "w", 1, corev1.PodRunning)}},
			f:      flight{deleting: map[types.UID]bool{"uid-j-w-0": true, "uid-pg": true}},
			action: bus.RestartJobAction, delete: []string{"j-w-1"}, write: true,
			phase: batch.Restarting, version: 3, retry: 1, terminating: 2},
		{name: "policy-restart-job: restarting, old pods gone → Pending, no new version",
			w:      world{job: with(newJob(batch.Restarting, task("w", 2)), func(j *batch.Job) { j.Status.RetryCount = 1 })},
			action: bus.SyncJobAction, createPG: true, write: true, phase: batch.Pending, version: 2, retry: 1},
		{name: "policy-evicted: RestartTask kills the task's pods only, keeps the PodGroup",
			w: world{job: newJob(batch.Running, task("a", 1), task("b", 1)), pg: scheduling.PodGroupRunning, pods: []*corev1.Pod{
				podOf(newJob(batch.Running, task("a", 1), task("b", 1)), "a", 0, corev1.PodRunning),
				podOf(newJob(batch.Running, task("a", 1), task("b", 1)), "b", 0, corev1.PodRunning)}},
			action: bus.RestartTaskAction, req: state.Request{TaskName: "a"},
			delete: []string{"j-a-0"}, write: true, phase: batch.Restarting, version: 2, retry: 1, terminating: 1},
		{name: "policy-exit-code: RestartPod kills that pod",
			w: world{job: running(), pg: scheduling.PodGroupRunning, pods: []*corev1.Pod{
				podOf(running(), "w", 0, corev1.PodFailed), podOf(running(), "w", 1, corev1.PodRunning)}},
			action: bus.RestartPodAction, req: state.Request{PodName: "j-w-0"},
			delete: []string{"j-w-0"}, write: true, phase: batch.Restarting, version: 2, retry: 1, terminating: 1},
		{name: "command-abort-resume: AbortJob keeps finished pods, kills the rest → Aborting",
			w: world{job: running(), pg: scheduling.PodGroupRunning, pods: []*corev1.Pod{
				podOf(running(), "w", 0, corev1.PodSucceeded), podOf(running(), "w", 1, corev1.PodRunning)}},
			action: bus.AbortJobAction, delete: []string{"j-w-1"}, deletePG: true, write: true,
			phase: batch.Aborting, version: 3, terminating: 1},
		{name: "command-abort-resume: Aborted, ResumeJob → Restarting, retry+1",
			w:      world{job: newJob(batch.Aborted, task("w", 2))},
			action: bus.ResumeJobAction, write: true, phase: batch.Restarting, version: 2, retry: 1},
		{name: "command-restart-terminate: TerminateJob → Terminating",
			w: world{job: running(), pg: scheduling.PodGroupRunning, pods: []*corev1.Pod{
				podOf(running(), "w", 0, corev1.PodRunning), podOf(running(), "w", 1, corev1.PodRunning)}},
			action: bus.TerminateJobAction, delete: []string{"j-w-0", "j-w-1"}, deletePG: true, write: true,
			phase: batch.Terminating, version: 3, terminating: 2},
		{name: "command-restart-terminate: Terminating, pods gone → Terminated",
			w: world{job: newJob(batch.Terminating, task("w", 2)), pods: []*corev1.Pod{
				podOf(running(), "w", 0, corev1.PodFailed)}},
			action: bus.SyncJobAction, write: true, phase: batch.Terminated, version: 2},
		{name: "a finished Job looked at again: no new version, nothing written",
			w: world{job: with(newJob(batch.Completed, task("w", 1)), func(j *batch.Job) {
				j.Status.Succeeded, j.Status.MinAvailable = 1, 1
				j.Status.TaskStatusCount = map[string]batch.TaskState{"w": {Phase: map[corev1.PodPhase]int32{corev1.PodSucceeded: 1}}}
			}), pods: []*corev1.Pod{versioned(podOf(running(), "w", 0, corev1.PodSucceeded), "1")}},
			action: bus.SyncJobAction, phase: batch.Completed, version: 2},
		{name: "a pod of a task the spec no longer has is deleted",
			w: world{job: running(), pg: scheduling.PodGroupRunning, pods: []*corev1.Pod{
				podOf(running(), "w", 0, corev1.PodRunning), podOf(running(), "w", 1, corev1.PodRunning),
				podOf(newJob(batch.Running, task("old", 1)), "old", 0, corev1.PodRunning)}},
			action: bus.SyncJobAction, delete: []string{"j-old-0"}, write: true, phase: batch.Running, version: 2, terminating: 1},
		{name: "a pod being deleted counts as terminating and is not recreated",
			w: world{job: running(), pg: scheduling.PodGroupRunning, pods: []*corev1.Pod{
				deleting(podOf(running(), "w", 0, corev1.PodRunning)), podOf(running(), "w", 1, corev1.PodRunning)}},
			action: bus.SyncJobAction, write: true, phase: batch.Running, version: 2, terminating: 1},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			p := Make(row.w.input(row.action, row.req, row.f))
			if p.Failure != nil || p.Hold != nil {
				t.Fatalf("failure %+v, hold %+v", p.Failure, p.Hold)
			}
			if got := p.CreatePods.Names(); !slices.Equal(got, row.create) {
				t.Errorf("creates %v, want %v", got, row.create)
			}
			if got := names(p.DeletePods); !slices.Equal(got, row.delete) {
				t.Errorf("deletes %v, want %v", got, row.delete)
			}
			if (p.CreatePodGroup != nil) != row.createPG || (p.DeletePodGroup != nil) != row.deletePG {
				t.Errorf("PodGroup create %v, delete %v; want %v, %v", p.CreatePodGroup != nil, p.DeletePodGroup != nil, row.createPG, row.deletePG)
			}
			s := p.Status
			if s.Write != row.write {
				t.Errorf("write %v, want %v (next %+v)", s.Write, row.write, s.Next.State)
			}
			if s.Next.State.Phase != row.phase || s.Next.Version != row.version || s.Next.RetryCount != row.retry {
				t.Errorf("phase %s version %d retry %d; want %s %d %d", s.Next.State.Phase, s.Next.Version, s.Next.RetryCount, row.phase, row.version, row.retry)
			}
			if s.Next.Terminating != row.terminating {
				t.Errorf("terminating %d, want %d", s.Next.Terminating, row.terminating)
			}
			if s.Transition && !s.Next.State.LastTransitionTime.Time.Equal(now) {
				t.Errorf("transition at %v, want %v", s.Next.State.LastTransitionTime, now)
			}
		})
	}
}

// dependsOn: the pods of a task that depends on another wait until that one runs.
func TestMakeDependsOn(t *testing.T) {
	job := newJob(batch.Pending, task("a", 1), task("b", 1))
	job.Spec.Tasks[1].DependsOn = &batch.DependsOn{Name: []string{"a"}}
	job.Spec.MinAvailable = 1
	in := world{job: job, pg: scheduling.PodGroupInqueue}.input(bus.SyncJobAction, state.Request{}, flight{})
	if got := Make(in).CreatePods.Names(); !slices.Equal(got, []string{"j-a-0"}) {
		t.Errorf("creates %v before a runs, want only a's", got)
	}
	in = world{job: job, pg: scheduling.PodGroupRunning, pods: []*corev1.Pod{podOf(job, "a", 0, corev1.PodRunning)}}.
		input(bus.SyncJobAction, state.Request{}, flight{})
	if got := Make(in).CreatePods.Names(); !slices.Equal(got, []string{"j-b-0"}) {
		t.Errorf("creates %v once a runs, want b's", got)
	}
}

// A name held: by a pod of an earlier Job in the cache (Foreign), or by one a create met
// (Taken): the pod is neither created nor counted, and the cached holder is told.
func TestMakeHeldNames(t *testing.T) {
	job := newJob(batch.Pending, task("w", 2))
	in := world{job: job, pg: scheduling.PodGroupInqueue}.input(bus.SyncJobAction, state.Request{}, flight{})
	old := podOf(job, "w", 0, corev1.PodRunning)
	old.OwnerReferences[0].UID = "uid-earlier"
	in.Foreign = map[string]*corev1.Pod{old.Name: old}
	in.Taken = map[string]bool{"j-w-1": true}
	p := Make(in)
	if p.CreatePods.Len() != 0 || p.Status.Next.Pending != 0 {
		t.Errorf("creates %v, pending %d; want none", p.CreatePods.Names(), p.Status.Next.Pending)
	}
	if p.Names == nil || len(*p.Names) != 1 || (*p.Names)[0].Name != "j-w-0" || !(*p.Names)[0].Cached {
		t.Errorf("names waited for %+v, want the cached j-w-0", p.Names)
	}
}

// A Job too large, or waiting for a queue, is held: its status says why, once.
func TestMakeHolds(t *testing.T) {
	job := newJob("", task("w", 1))
	in := world{job: job}.input(bus.SyncJobAction, state.Request{}, flight{})
	in.MissingReference = func(*batch.Job) string { return "queue \"q\" does not exist" }
	p := Make(in)
	if p.Hold == nil || p.Hold.Reason != ReasonInvalidReference || !p.Hold.Recheck || !p.Status.Write {
		t.Fatalf("hold %+v, write %v; want InvalidReference, recheck, written", p.Hold, p.Status.Write)
	}
	if p.Status.Next.State.Phase != batch.Pending || p.CreatePodGroup != nil {
		t.Errorf("phase %q, PodGroup %v; want Pending and none", p.Status.Next.State.Phase, p.CreatePodGroup)
	}
	job.Status = p.Status.Next
	if again := Make(in); again.Hold == nil || again.Status.Write {
		t.Errorf("told again: %+v", again.Status)
	}
}

// A plugin that cannot be built fails the sync before any write; on a kill, after the pods'
// deletes.
func TestMakePluginFailures(t *testing.T) {
	job := newJob(batch.Running, task("w", 1))
	job.Spec.Plugins = map[string][]string{"nosuch": nil}
	pods := []*corev1.Pod{podOf(job, "w", 0, corev1.PodRunning)}
	p := Make(world{job: job, pods: pods, pg: scheduling.PodGroupRunning}.input(bus.SyncJobAction, state.Request{}, flight{}))
	if p.Failure == nil || p.Failure.Stage != AtStart || p.Status.Write || p.CreatePods.Len() != 0 {
		t.Errorf("sync: failure %+v, write %v", p.Failure, p.Status.Write)
	}
	p = Make(world{job: job, pods: pods, pg: scheduling.PodGroupRunning}.input(bus.AbortJobAction, state.Request{}, flight{}))
	if p.Failure == nil || p.Failure.Stage != AfterKill || len(p.DeletePods) != 1 || p.Status.Write {
		t.Errorf("kill: failure %+v, deletes %v", p.Failure, names(p.DeletePods))
	}
}

// The svc plugin's objects are planned with the sync, and marked once; they are deleted with a
// full kill.
func TestMakePlugins(t *testing.T) {
	job := newJob(batch.Pending, task("w", 1))
	job.Spec.Plugins = map[string][]string{"svc": nil}
	p := Make(world{job: job}.input(bus.SyncJobAction, state.Request{}, flight{}))
	if p.SyncPlugins == nil || len(p.SyncPlugins.Create)+len(p.SyncPlugins.Apply) == 0 {
		t.Fatalf("plugin objects %+v, want the svc plugin's", p.SyncPlugins)
	}
	if p.Controlled["plugin-svc"] != "svc" {
		t.Errorf("controlled %v, want the svc mark", p.Controlled)
	}
	in := world{job: job}.input(bus.SyncJobAction, state.Request{}, flight{})
	in.PluginNamesHeld = true
	held := Make(in)
	if held.CreatePodGroup != nil || held.Controlled["plugin-svc"] != "" || held.Names != nil {
		t.Errorf("names held: PodGroup %v, controlled %v; want neither", held.CreatePodGroup, held.Controlled)
	}
	job.Status.ControlledResources = p.Controlled
	job.Status.State.Phase = batch.Running
	kill := Make(world{job: job}.input(bus.TerminateJobAction, state.Request{}, flight{}))
	if kill.KillPlugins == nil || len(kill.KillPlugins.Delete) == 0 || kill.Controlled["plugin-svc"] != "" {
		t.Errorf("kill: plugin deletes %+v, controlled %v", kill.KillPlugins, kill.Controlled)
	}
}

// The status: count-only changes are marked so (the controller paces them), the running
// duration alone is no change, the TTL of a finished Job is scheduled, and a gang that can
// never start is told once.
func TestStatus(t *testing.T) {
	spec := state.Spec{MinAvailable: 2, MaxRetry: 3, Tasks: []state.Task{{Name: "w", Replicas: 2}}}
	started := metav1.NewTime(now.Add(-time.Minute))
	running := &batch.Job{Spec: batch.JobSpec{MinAvailable: 2, Tasks: []batch.TaskSpec{task("w", 2)}},
		Status: batch.JobStatus{State: batch.JobState{Phase: batch.Running, LastTransitionTime: started}, MinAvailable: 2,
			Running: 2, Conditions: []batch.JobCondition{{Status: batch.Running, LastTransitionTime: &started}}}}
	counts := func(run, done int32) Counts {
		var c Counts
		for range run {
			c.Add("w", corev1.PodRunning)
		}
		for range done {
			c.Add("w", corev1.PodSucceeded)
		}
		return c
	}
	s := Status(StatusInput{Job: running, Step: state.Step{Sync: true, Then: state.RunningRule}, Spec: spec, Counts: counts(1, 1), Now: now})
	if !s.Write || !s.CountsOnly || s.Transition {
		t.Errorf("a count change: write %v, counts only %v, transition %v", s.Write, s.CountsOnly, s.Transition)
	}
	running.Status.TaskStatusCount = counts(2, 0).Tasks
	running.Status.RunningDuration = &metav1.Duration{Duration: time.Second}
	s = Status(StatusInput{Job: running, Step: state.Step{Sync: true, Then: state.RunningRule}, Spec: spec, Counts: counts(2, 0), Now: now})
	if s.Write {
		t.Errorf("the running duration alone is written: %+v", s.Next)
	}
	ttl := int32(30)
	done := running.DeepCopy()
	done.Spec.TTLSecondsAfterFinished = &ttl
	s = Status(StatusInput{Job: done, Step: state.Step{Sync: true, Then: state.RunningRule}, Spec: spec, Counts: counts(0, 2), Now: now})
	if s.Phase != batch.Completed || !s.Transition || s.TTL == nil || *s.TTL != 30*time.Second {
		t.Errorf("completed: phase %s transition %v ttl %v; want Completed, a transition, 30s", s.Phase, s.Transition, s.TTL)
	}
	if got := s.Next.RunningDuration.Duration; got != time.Minute {
		t.Errorf("running duration %v, want 1m", got)
	}
	if remove, _, ok := TTL(&batch.Job{Spec: done.Spec, Status: s.Next}, now.Add(31*time.Second)); !ok || !remove {
		t.Errorf("TTL after 31s: remove %v ok %v", remove, ok)
	}

	gang := newJob(batch.Pending, task("a", 1), task("b", 1))
	gang.Spec.Tasks[1].DependsOn = &batch.DependsOn{Name: []string{"a"}}
	s = Status(StatusInput{Job: gang, Step: state.Step{Sync: true, Then: state.PendingRule}, Spec: state.SpecOf(gang), Now: now})
	if s.Unreachable == "" || s.Next.State.Reason != ReasonMinAvailableUnreachable {
		t.Fatalf("a gang that cannot start: reason %q, told %q", s.Next.State.Reason, s.Unreachable)
	}
	gang.Status = s.Next
	if again := Status(StatusInput{Job: gang, Step: state.Step{Sync: true, Then: state.PendingRule}, Spec: state.SpecOf(gang), Now: now}); again.Unreachable != "" || again.Write {
		t.Errorf("told again: %q, write %v", again.Unreachable, again.Write)
	}
}

// A Job reconciled again after its quarantine has the Quarantined reason its replica wrote
// cleared, in the same write as its counts, whatever else changed.
func TestStatusClearsAQuarantine(t *testing.T) {
	job := newJob(batch.Running, task("w", 1))
	job.Status.State.Reason, job.Status.State.Message = kit.ReasonQuarantined, "ringfire stopped reconciling this object"
	s := Status(StatusInput{Job: job, Step: state.Step{}, Spec: state.SpecOf(job), Counts: CountPods(nil), Now: now})
	if !s.Write || s.CountsOnly || s.Next.State.Reason != "" || s.Next.State.Message != "" || s.Next.State.Phase != batch.Running {
		t.Errorf("write %v counts only %v state %+v; want the reason and message cleared at once, the phase kept", s.Write, s.CountsOnly, s.Next.State)
	}
}

// The PodGroup's pending story is told after a sync, unless it only says the pods are too few
// while the Job has made them all.
func TestMakePodGroupStory(t *testing.T) {
	job := newJob(batch.Pending, task("w", 1))
	w := world{job: job, pg: scheduling.PodGroupPending}
	in := w.input(bus.SyncJobAction, state.Request{}, flight{})
	in.PodGroup.Status.Conditions = []scheduling.PodGroupCondition{{Type: scheduling.PodGroupUnschedulableType,
		Status: corev1.ConditionTrue, Reason: "NotEnoughResources", Message: "1/1 tasks in gang unschedulable"}}
	p := Make(in)
	if p.PodGroupPending == nil || !strings.Contains(p.PodGroupPending.Message, "PodGroup ns:j unschedulable") {
		t.Errorf("story %+v", p.PodGroupPending)
	}
	in.PodGroup.Status.Conditions[0].Reason = scheduling.NotEnoughPodsReason
	in.Pods = podsOf(podOf(job, "w", 0, corev1.PodPending))
	if p := Make(in); p.PodGroupPending == nil || p.PodGroupPending.Key != "" {
		t.Errorf("too few pods while all are made: story %+v, want none", p.PodGroupPending)
	}
}

// Make is the same for the same input: it does no I/O and reads no clock.
func TestMakeIsPure(t *testing.T) {
	job := newJob(batch.Running, task("w", 3))
	w := world{job: job, pg: scheduling.PodGroupRunning, pods: []*corev1.Pod{podOf(job, "w", 0, corev1.PodRunning)}}
	a := Make(w.input(bus.SyncJobAction, state.Request{}, flight{}))
	b := Make(w.input(bus.SyncJobAction, state.Request{}, flight{}))
	if !slices.Equal(a.CreatePods.Names(), b.CreatePods.Names()) || a.Status.Next.State != b.Status.Next.State {
		t.Errorf("two plans of one input differ")
	}
	if job.Status.State.Phase != batch.Running || job.Status.Pending != 0 {
		t.Errorf("Make changed its input Job: %+v", job.Status)
	}
}

// A kill of more pods than MaxPodDeletes sends that many deletes a reconcile and asks to look
// again soon; the next reconciles send the rest, the deletes in flight counted and not sent
// again; every pod targeted counts as terminating from the first, and the restart starts one
// new version, not one a round.
func TestMakeKillIsBoundedPerReconcile(t *testing.T) {
	const replicas = 2*MaxPodDeletes + 88
	for _, c := range []struct {
		action bus.Action
		then   batch.JobPhase
	}{{bus.RestartJobAction, batch.Restarting}, {bus.AbortJobAction, batch.Aborting}} {
		t.Run(string(c.action), func(t *testing.T) {
			job := newJob(batch.Running, task("w", replicas))
			var pods []*corev1.Pod
			for i := range replicas {
				pods = append(pods, podOf(job, "w", i, corev1.PodRunning))
			}
			f := flight{deleting: map[types.UID]bool{}}
			action, sent := c.action, 0
			for round := 0; sent < replicas; round++ {
				if round > 3 {
					t.Fatalf("%d of %d pods deleted after %d rounds", sent, replicas, round)
				}
				p := Make(world{job: job, pods: pods, pg: scheduling.PodGroupRunning}.input(action, state.Request{}, f))
				want := min(MaxPodDeletes, replicas-sent)
				if len(p.DeletePods) != want {
					t.Fatalf("round %d: %d deletes, want %d", round, len(p.DeletePods), want)
				}
				if left := replicas - sent - want; left > 0 && (p.WakeAfter <= 0 || p.WakeAfter > deleteRequeue) {
					t.Errorf("round %d: %d deletes left and WakeAfter %v", round, left, p.WakeAfter)
				}
				if p.DeletePodGroup != nil {
					f.deleting[p.DeletePodGroup.UID] = true
				}
				for _, d := range p.DeletePods {
					if f.deleting[d.UID] {
						t.Fatalf("round %d: %s deleted again while its delete is in flight", round, d.Name)
					}
					f.deleting[d.UID] = true
				}
				sent += len(p.DeletePods)
				next := p.Status.Next
				if next.State.Phase != c.then || next.Terminating != replicas {
					t.Errorf("round %d: phase %s terminating %d, want %s %d", round, next.State.Phase, next.Terminating, c.then, replicas)
				}
				if next.Version != 3 { // both kills are full: one new version, at the first round
					t.Errorf("round %d: version %d, want 3", round, next.Version)
				}
				job = with(job, func(j *batch.Job) { j.Status = next })
				action = bus.SyncJobAction
			}
		})
	}
}
