package plan

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/controllers/job/build"
	"github.com/ringfire/ringfire/controllers/job/plugins"
	"github.com/ringfire/ringfire/controllers/job/state"
)

// MaxCreateBatch bounds the pods one sync creates: what a sync holds is the pods that exist
// and the names of one batch, whatever the replicas. The pods themselves are built one at a
// time as their creates are sent (PodCreates).
const MaxCreateBatch = 256

// InFlight tells which creates and deletes of the Job's objects are on their way to the
// cache: the controller's expectations, read as they are when the plan is made.
type InFlight interface {
	// Creating reports whether a create of r namespace/name is expected and not yet seen, or
	// the cache shows the object already, and how long until the expectation lapses.
	Creating(r cache.Resource, namespace, name string) (left time.Duration, pending bool)
	// Deleting reports whether a delete of the object of uid is expected and not yet seen.
	Deleting(r cache.Resource, namespace, name string, uid types.UID) (left time.Duration, pending bool)
}

// Input is what one reconcile of a Job decides from.
type Input struct {
	// Job is the Job as read (the latest of the cache's and the controller's own last write),
	// with the webhook's defaults filled in.
	Job *batch.Job
	// Pods are the Job's pods by task, then name; Foreign the pods, by name, of an earlier Job
	// of the name (another UID).
	Pods    map[string]map[string]*corev1.Pod
	Foreign map[string]*corev1.Pod
	// PodGroup is the Job's, nil when there is none.
	PodGroup *scheduling.PodGroup
	// PVCs are the names of the claims the Job owns.
	PVCs map[string]bool
	// Slot is the ring slot of the Job, for the labels of what it makes.
	Slot int
	// Request is what happened; Action what it leads to, after the policies.
	Request state.Request
	Action  bus.Action
	// Now is the time of the reconcile.
	Now      time.Time
	InFlight InFlight
	// PriorityOf values a PriorityClass; MissingReference names a Queue or PriorityClass the Job
	// needs that does not exist, or a queue it may not start on, or returns "". Both read the
	// cache, and neither writes.
	PriorityOf       build.PriorityLookup
	MissingReference func(*batch.Job) string
	// NewSSHKey is the plugins' key maker (plugins.Env); nil for the default.
	NewSSHKey plugins.KeyGenerator

	// Facts a write learned that no cache showed, for the plan made again after it.
	//
	// PluginNamesHeld: an object the plugins need has a name another UID's object holds; the
	// plugins' marks are not written, and nothing else of the sync is done.
	PluginNamesHeld bool
	// Taken are the names of pods whose create found a pod of another UID there.
	Taken map[string]bool
}

// Stage is where, in the order a plan is carried out, its Failure is reported.
type Stage uint8

const (
	// AtStart: before any write.
	AtStart Stage = iota
	// BeforePodCreates: after the plugin objects, the PodGroup and the claims are written.
	BeforePodCreates
	// AfterKill: after the kill's pod and PodGroup deletes.
	AfterKill
)

// Failure is a plugin error the plan met: the controller reports it (a PluginError Event)
// and fails the reconcile at Stage, after the writes before it.
type Failure struct {
	Stage Stage
	What  string
	Err   error
}

// Hold is why a Job is not synced: the status records it in its state's reason and message,
// and a Warning Event tells it; Recheck asks to look again after a while.
type Hold struct {
	Reason, Message string
	Recheck         bool
}

// Plan is one reconcile's decision. The controller carries it out in this order, each step
// only if the ones before it succeeded: the plugins' objects (SyncPlugins, stopping there if a
// name is held: the plan is made again with PluginNamesHeld), the PodGroup (CreatePodGroup,
// UpdatePodGroup), the claims (CreatePVCs), the pods (CreatePods; a name found taken makes
// the plan again with Taken), the deletes (DeletePods, DeletePodGroup, KillPlugins), then the
// status (Status) and the Events that follow it.
type Plan struct {
	// Step is the transition: the kill, the sync and the rule that settled the phase.
	Step state.Step
	// Hold, when set, is all the plan does besides the status.
	Hold *Hold
	// Failure, when set, is reported at its stage; nothing after it is done.
	Failure *Failure
	// Ignored are the plugin arguments skipped, told on the sync that runs their OnJobAdd.
	Ignored []error

	SyncPlugins    *plugins.Changes
	CreatePodGroup *scheduling.PodGroup
	UpdatePodGroup *scheduling.PodGroup
	CreatePVCs     []*corev1.PersistentVolumeClaim
	CreatePods     *PodCreates // nil for none
	DeletePods     []*corev1.Pod
	DeletePodGroup *scheduling.PodGroup
	KillPlugins    *plugins.Changes

	// Names, when set, are the names the Job's pods wait for (Held, possibly none): the
	// controller tells a new wait once.
	Names *[]Holder
	// PodGroupPending, when set, is the PodGroup's story after the sync.
	PodGroupPending *Story

	// Counts are the pods after the plan's writes; Controlled the status' controlledResources.
	Counts     Counts
	Controlled map[string]string
	// Status is the status to write, and what it means; see StatusPlan.
	Status StatusPlan
	// WakeAfter, when positive, asks to look at the Job again after it: a write expected and
	// not yet in the cache, or a held name the cache will not see go.
	WakeAfter time.Duration
}

// builder carries what Make works on: work is the Job the plugins mark.
type builder struct {
	in   Input
	job  *batch.Job
	work *batch.Job
	p    Plan
}

func (b *builder) wake(d time.Duration) {
	if d > 0 && (b.p.WakeAfter == 0 || d < b.p.WakeAfter) {
		b.p.WakeAfter = d
	}
}

func (b *builder) fail(stage Stage, what string, err error) {
	if b.p.Failure == nil {
		b.p.Failure = &Failure{Stage: stage, What: what, Err: err}
	}
}

// Make decides the reconcile of in.Job for in.Action.
func Make(in Input) Plan {
	job := in.Job
	b := &builder{in: in, job: job, work: job.DeepCopy()}
	spec := state.SpecOf(job)
	step := state.Plan(state.Input{
		Phase: job.Status.State.Phase, Action: in.Action, Spec: spec,
		RetryCount: job.Status.RetryCount, Drained: drained(in.Pods),
		Unfinished: unfinished(in.Pods, job.Status.Version, state.LastRetry(job.Status.RetryCount, spec.MaxRetry)),
	})
	var counts Counts
	var settled *Settled // the phase the sync's counts settle, once it is known
	switch {
	case step.Kill != state.KillNone:
		var ends bool
		counts, ends = b.kill(step.Kill, nil)
		// A full kill starts a new version of the Job, so that events of the pods it ends are
		// told from those of the pods made after. A kill that ends no pod of the current
		// version (a finished Job looked at again, a restart waiting for the old version's
		// pods to go) has none to tell apart: bumping then would only cost a status write.
		step.BumpVersion = step.BumpVersion && ends
	case step.Sync:
		if problem := state.TooLarge(job); problem != "" {
			// Nothing sized by the spec is built for it: no PodGroup, no pods, no plugin
			// objects. A change to its spec brings it back.
			return b.hold(step, state.ReasonTooLarge, problem, false)
		}
		if in.MissingReference != nil {
			if problem := in.MissingReference(job); problem != "" {
				return b.hold(step, ReasonInvalidReference, problem, true)
			}
		}
		var ok bool
		counts, ok = b.sync()
		if ok {
			step, counts, settled = b.endNow(step, spec, counts)
		}
	default:
		counts = CountPods(in.Pods)
	}
	b.p.Step, b.p.Counts, b.p.Controlled = step, counts, b.work.Status.ControlledResources
	if b.p.Failure == nil {
		b.p.Status = Status(StatusInput{Job: job, Controlled: b.p.Controlled, Step: step, Spec: spec, Counts: counts, Now: in.Now, Settled: settled})
	}
	return b.p
}

// hold is the plan of a Job that is not synced for reason: its status says why, once.
func (b *builder) hold(step state.Step, reason, problem string, recheck bool) Plan {
	b.p.Step, b.p.Hold = step, &Hold{Reason: reason, Message: problem, Recheck: recheck}
	job := b.job
	if job.Status.State.Reason == reason && job.Status.State.Message == problem {
		return b.p // told already
	}
	st := job.Status.DeepCopy()
	if st.State.Phase == "" {
		st.State.Phase = batch.Pending
		st.State.LastTransitionTime = nowOf(b.in.Now)
	}
	st.State.Reason, st.State.Message = reason, problem
	b.p.Status = StatusPlan{Write: true, Next: *st, Phase: st.State.Phase}
	return b.p
}

// endNow settles the phase from the sync's counts and, when it settles the Job into Completed
// or Failed, adds the kill of that final phase (state.Ending), so that the phase and the
// version the kill starts cost one status write, not two. The phase settled is the status'
// either way: the ending step's rule sets the same one.
func (b *builder) endNow(step state.Step, spec state.Spec, counts Counts) (state.Step, Counts, *Settled) {
	current := state.Normalize(b.work.Status.State.Phase)
	phase, set := step.Then.Settle(current, spec, b.work.Status.RetryCount, counts.Counts)
	settled := &Settled{Phase: phase, Set: set}
	end, ok := state.Ending(current, phase, set)
	if !ok {
		return step, counts, settled
	}
	// The sync's deletes are on their way: the kill counts them as going, and does not
	// delete them again.
	going := map[types.UID]bool{}
	for _, p := range b.p.DeletePods {
		going[p.UID] = true
	}
	killed, ends := b.kill(end.Kill, going)
	end.BumpVersion = end.BumpVersion && ends
	return end, killed, settled
}

// MaxPodDeletes is the most pod deletes one reconcile sends, as PodParallelism bounds its
// creates' batches: a kill of 10,000 pods at 200 requests a second would otherwise be one
// reconcile of 50 s, and three of them on one replica would pass the quarantine's time budget
// with no harm done. The kill goes on in the next reconcile (every phase a kill leads to kills
// again on each sync, and the deletes the cache has not seen are counted, not sent again): a
// kill of any size makes steady progress in short reconciles. The pods not yet deleted count
// as terminating already, so the phase settles as it would after one long reconcile.
const MaxPodDeletes = 256

// deleteRequeue is how soon a reconcile that left deletes for the next looks again, should no
// event of its deletes wake it sooner.
const deleteRequeue = time.Second

// deletePod adds the delete of p to the plan, unless MaxPodDeletes are in it already: then it
// asks for the next reconcile soon, and reports false.
func (b *builder) deletePod(p *corev1.Pod) bool {
	if len(b.p.DeletePods) >= MaxPodDeletes {
		b.wake(deleteRequeue)
		return false
	}
	b.p.DeletePods = append(b.p.DeletePods, p)
	return true
}

// kill plans the deletes of the pods the kill targets and counts the rest; a full kill deletes
// the PodGroup and the plugins' objects too, so that the scheduler admits the Job afresh. It
// reports whether the kill ends pods of the Job's current version, or issues a delete of one
// (or of the PodGroup): only then does it start a new version. The deletes of an earlier
// version's pods that a kill cut short by MaxPodDeletes left go on without one. going are pods
// whose delete the plan has already.
func (b *builder) kill(kill state.Kill, going map[types.UID]bool) (Counts, bool) {
	in, job := b.in, b.work
	var pc Counts
	partition := partitionOf(in.Pods, in.Request)
	current, issued := false, false
	for _, task := range sortedKeys(in.Pods) {
		for _, name := range sortedKeys(in.Pods[task]) {
			p := in.Pods[task][name]
			if p.DeletionTimestamp != nil {
				pc.Terminating++
				current = current || ofVersion(p, job.Status.Version)
				continue
			}
			if !targets(kill, p, task, in.Request, partition) {
				pc.Add(task, p.Status.Phase)
				continue
			}
			current = current || ofVersion(p, job.Status.Version)
			pc.Terminating++ // gone or going
			if going[p.UID] {
				continue
			}
			if _, pending := in.InFlight.Deleting(cache.Pods, p.Namespace, p.Name, p.UID); pending {
				continue // the cache will see it go
			}
			if b.deletePod(p) && ofVersion(p, job.Status.Version) {
				issued = true
			}
		}
	}
	if !kill.Full() {
		return pc, issued || current
	}
	if pg := in.PodGroup; pg != nil {
		if _, pending := in.InFlight.Deleting(cache.PodGroups, pg.Namespace, pg.Name, pg.UID); !pending {
			b.p.DeletePodGroup, issued = pg, true
		}
	}
	// The plugins' objects go with a full kill. A plugin set that cannot be built (a plugin
	// name or argument that is wrong) cannot say which those are: the kill is not done, and
	// the error is reported and retried like any other, as in Volcano.
	set, err := b.plugins()
	if err != nil {
		b.fail(AfterKill, "job plugins", err)
		return pc, issued || current
	}
	ch, err := set.OnJobDelete(job)
	if err != nil {
		b.fail(AfterKill, "job plugins on kill", err)
		return pc, issued || current
	}
	b.p.KillPlugins = &ch
	return pc, issued || current
}

func (b *builder) plugins() (plugins.Set, error) {
	return plugins.ForJob(b.work, plugins.Env{Slot: b.in.Slot, NewSSHKey: b.in.NewSSHKey})
}

// sync plans what brings the Job's objects to what its spec asks: the plugins' objects, the
// PodGroup, the PVCs, and, once the scheduler has admitted the PodGroup, the pods (tasks
// waiting on dependsOn later). ok is false when the plan stops short (a failure, or names the
// plugins need held).
func (b *builder) sync() (Counts, bool) {
	in, job := b.in, b.work
	set, err := b.plugins()
	if err != nil {
		b.fail(AtStart, "job plugins", err)
		return Counts{}, false
	}
	b.p.Ignored = set.Ignored(job)
	if len(set) > 0 {
		marks := maps.Clone(job.Status.ControlledResources)
		add, err := set.OnJobAdd(job)
		if err == nil {
			var update plugins.Changes
			update, err = set.OnJobUpdate(job)
			add.Create = append(add.Create, update.Create...)
			add.Apply = append(add.Apply, update.Apply...)
			add.Delete = append(add.Delete, update.Delete...)
		}
		if err != nil {
			b.fail(AtStart, "job plugins on sync", err)
			return Counts{}, false
		}
		b.p.SyncPlugins = &add
		if in.PluginNamesHeld {
			// Not all that OnJobAdd asked for is the Job's yet: the marks are not written, so
			// that it runs again, and makes the objects, once the names are free.
			job.Status.ControlledResources = marks
		}
	}
	if in.PluginNamesHeld {
		// Pods would mount or resolve an earlier Job's objects: nothing starts until the
		// names are this Job's.
		return CountPods(in.Pods), false
	}
	admitted := b.podGroup()
	b.pvcs()

	var pc Counts
	var create []podCreate
	var surplus []*corev1.Pod
	var held []Holder // pods of another UID holding names this Job's pods need
	for ti := range job.Spec.Tasks {
		task := &job.Spec.Tasks[ti]
		existing := in.Pods[task.Name]
		ready := admitted && DependenciesReady(job, task, in.Pods)
		checked := false
		for i := range int(task.Replicas) {
			name := build.PodName(job.Name, task.Name, i)
			if p, ok := existing[name]; ok {
				if p.DeletionTimestamp != nil {
					pc.Terminating++
				} else {
					pc.Add(task.Name, p.Status.Phase)
				}
				continue
			}
			if p, ok := in.Foreign[name]; ok {
				held = append(held, HolderOf("pod", p, true)) // never counted; its delete wakes the Job
				continue
			}
			if in.Taken[name] {
				continue // held by a pod the cache does not show; the controller tells it
			}
			if left, pending := in.InFlight.Creating(cache.Pods, job.Namespace, name); pending {
				pc.Add(task.Name, corev1.PodPending) // created, not in this view yet
				b.wake(left)
				continue
			}
			if !ready || len(create) >= MaxCreateBatch {
				continue // the rest when these creates reach the cache and bring the Job back
			}
			if !checked {
				// What a plugin refuses, it refuses of the Job or of the task (a head task
				// missing, an argument), not of one index: the task's first pod, built and
				// dropped, tells it before any write, as building every pod here did.
				if err := set.OnPodCreate(build.Pod(job, task, i, in.Slot), job); err != nil {
					b.fail(BeforePodCreates, "job plugins on pod create", err)
					return pc, false
				}
				checked = true
			}
			create = append(create, podCreate{name: name, task: ti, index: i})
		}
		for _, name := range sortedKeys(existing) {
			if p := existing[name]; !build.IsPodOf(job.Name, task, name) && p.DeletionTimestamp == nil {
				surplus = append(surplus, p)
			}
		}
	}
	for _, task := range sortedKeys(in.Pods) { // pods of tasks the spec no longer has
		if !hasTask(job, task) {
			for _, name := range sortedKeys(in.Pods[task]) {
				if p := in.Pods[task][name]; p.DeletionTimestamp == nil {
					surplus = append(surplus, p)
				}
			}
		}
	}
	slices.SortFunc(create, func(x, y podCreate) int { return strings.Compare(x.name, y.name) })
	for _, c := range create {
		pc.Add(build.TaskKey(&job.Spec.Tasks[c.task]), corev1.PodPending)
	}
	if len(create) > 0 {
		b.p.CreatePods = newPodCreates(job, in.Slot, set, create)
	}
	b.p.Names = &held
	for _, p := range surplus {
		pc.Terminating++ // gone or going
		if _, pending := in.InFlight.Deleting(cache.Pods, p.Namespace, p.Name, p.UID); !pending {
			b.deletePod(p)
		}
	}
	story := podGroupStory(b.job, in.PodGroup, pc)
	b.p.PodGroupPending = &story
	return pc, true
}

// podGroup plans the create or update of the Job's PodGroup and reports whether the scheduler
// has admitted it (its phase is set and not Pending). While a create or delete of it has not
// reached the cache yet, it waits: the cache's add or delete brings the Job back.
func (b *builder) podGroup() bool {
	in, job := b.in, b.work
	desired := build.PodGroup(job, in.Slot, in.PriorityOf)
	existing := in.PodGroup
	if existing != nil {
		if left, pending := in.InFlight.Deleting(cache.PodGroups, existing.Namespace, existing.Name, existing.UID); pending {
			b.wake(left)
			return false
		}
	}
	if existing == nil || existing.Name != desired.Name {
		if left, pending := in.InFlight.Creating(cache.PodGroups, desired.Namespace, desired.Name); pending {
			b.wake(left)
			return false
		}
		b.p.CreatePodGroup = desired
		return false // its phase arrives with the informer
	}
	if updated, changed := build.UpdatePodGroup(existing, desired); changed {
		b.p.UpdatePodGroup = updated
	}
	phase := existing.Status.Phase
	return phase != "" && phase != scheduling.PodGroupPending
}

// pvcs plans the creates of the claims of job.spec.volumes that carry a claim spec. A volume
// that names its claim is only mounted, as in Volcano: that includes the claims
// vc-controller-manager made, whose generated names it wrote back into the Job's volumes
// beside their claim spec.
func (b *builder) pvcs() {
	in, job := b.in, b.work
	for i := range job.Spec.Volumes {
		name := build.ClaimName(job, i)
		pvc := build.PVC(job, i, in.Slot)
		if pvc == nil || in.PVCs[name] {
			continue
		}
		if _, pending := in.InFlight.Creating(cache.PVCs, job.Namespace, name); pending {
			continue
		}
		b.p.CreatePVCs = append(b.p.CreatePVCs, pvc)
	}
}

func hasTask(job *batch.Job, name string) bool {
	for _, t := range job.Spec.Tasks {
		if t.Name == name {
			return true
		}
	}
	return false
}

// DependenciesReady reports whether the tasks that task dependsOn run: each (or, with
// iteration any, one) has at least its minimum of pods Running or Succeeded.
func DependenciesReady(job *batch.Job, task *batch.TaskSpec, pods map[string]map[string]*corev1.Pod) bool {
	dep := task.DependsOn
	if dep == nil || len(dep.Name) == 0 {
		return true
	}
	readyCount := 0
	for _, name := range dep.Name {
		var need int32 = 1
		for i := range job.Spec.Tasks {
			if job.Spec.Tasks[i].Name == name {
				need = build.MinTaskMember(&job.Spec.Tasks[i])
			}
		}
		var up int32
		for _, p := range pods[name] {
			if p.DeletionTimestamp == nil && (p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodSucceeded) {
				up++
			}
		}
		if up >= max(need, 1) {
			readyCount++
		}
	}
	if dep.Iteration == batch.IterationAny {
		return readyCount > 0
	}
	return readyCount == len(dep.Name)
}

// targets reports whether the kill deletes pod p of task.
func targets(kill state.Kill, p *corev1.Pod, task string, req state.Request, partition string) bool {
	switch kill {
	case state.KillTask:
		return task == req.TaskName
	case state.KillPod:
		return p.Name == req.PodName
	case state.KillPartition:
		return task == req.TaskName && partition != "" && p.Labels[batch.TaskPartitionID] == partition
	}
	return kill.Deletes(p.Status.Phase)
}

// partitionOf is the partition of the request's pod, if it has one.
func partitionOf(pods map[string]map[string]*corev1.Pod, req state.Request) string {
	if p := pods[req.TaskName][req.PodName]; p != nil {
		return p.Labels[batch.TaskPartitionID]
	}
	return ""
}

// ofVersion reports whether pod was made for version of its Job.
func ofVersion(pod *corev1.Pod, version int32) bool {
	v, err := strconv.Atoi(pod.Annotations[batch.JobVersion])
	return err == nil && int32(v) == version
}

// unfinished reports that a pod of an earlier version than the Job's is live and not being
// deleted, of those a restart's full kill deletes (KillAll, or KillSoft at the last retry):
// a kill cut short by MaxPodDeletes left it.
func unfinished(pods map[string]map[string]*corev1.Pod, version int32, lastRetry bool) bool {
	kill := state.KillAll
	if lastRetry {
		kill = state.KillSoft
	}
	for _, byName := range pods {
		for _, p := range byName {
			if p.DeletionTimestamp != nil || !kill.Deletes(p.Status.Phase) {
				continue
			}
			if v, err := strconv.Atoi(p.Annotations[batch.JobVersion]); err == nil && int32(v) < version {
				return true
			}
		}
	}
	return false
}

// drained reports that the Job has no pod left but pods already being deleted.
func drained(pods map[string]map[string]*corev1.Pod) bool {
	for _, byName := range pods {
		for _, p := range byName {
			if p.DeletionTimestamp == nil {
				return false
			}
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
