package job

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcscheme "volcano.sh/apis/pkg/client/clientset/versioned/scheme"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/controllers/job/plan"
	"github.com/ringfire/ringfire/controllers/job/state"
	"github.com/ringfire/ringfire/internal/guard"
	"github.com/ringfire/ringfire/shard"

	"github.com/ringfire/ringfire/controllers/kit"
)

// Config configures the Job controller.
type Config struct {
	kit.Config
	kit.Work
	Cache *cache.Cache
	// SchedulerName is the scheduler of Jobs that name none (Volcano's
	// webhook sets "volcano"); state.DefaultSchedulerName in DefaultConfig.
	SchedulerName string
	// PodParallelism bounds the pod creations and deletions of one Job in
	// flight at once, at least one; kit.DefaultPodParallelism in
	// DefaultConfig.
	PodParallelism int
	// StatusCoalesce is the window over which a Job's count-only status
	// changes are merged into one write: DefaultStatusCoalesce in
	// DefaultConfig; 0 or negative writes every change at once. A new
	// phase is always written at once.
	StatusCoalesce time.Duration
	// Observe, when set, is told of every reconcile: its Job key and when it
	// ran (for tests and tracing).
	Observe func(key string, start, end time.Time)
}

// DefaultWorkers is the Workers of DefaultConfig: Jobs reconciled in parallel.
const DefaultWorkers = 3

// DefaultConfig returns a Config with every default filled in; the caller
// adds the clients, the Cache and the ring's Ownership.
func DefaultConfig() Config {
	return Config{
		Work:           kit.DefaultWork(DefaultWorkers),
		SchedulerName:  state.DefaultSchedulerName,
		PodParallelism: kit.DefaultPodParallelism,
		StatusCoalesce: DefaultStatusCoalesce,
	}
}

// Validate reports every field of c that cannot work. It changes nothing:
// defaults come from DefaultConfig, not from here.
func (c *Config) Validate() error {
	errs := []error{c.Config.Validate(), c.Work.Validate()}
	if c.Volcano == nil {
		errs = append(errs, errors.New("a Volcano client is required"))
	}
	if c.Cache == nil {
		errs = append(errs, errors.New("a Cache is required"))
	}
	if c.SchedulerName == "" {
		errs = append(errs, errors.New("a scheduler name is required (state.DefaultSchedulerName is Volcano's)"))
	}
	if c.PodParallelism < 1 {
		errs = append(errs, fmt.Errorf("pod parallelism %d: at least 1", c.PodParallelism))
	}
	return errors.Join(errs...)
}

// Controller reconciles Jobs.
type Controller struct {
	kit.Base[request]
	kit.Fence
	cfg     Config
	clock   clock.PassiveClock
	metrics *metrics
	written cache.Written[*batch.Job]
	// memory is what the controller remembers of each Job between its
	// reconciles (memory.go).
	memory memory
	// taken remembers the Commands this replica took.
	taken kit.Commands
}

// request is what the dispatcher carries for a Job key.
type request struct {
	state.Request
	// command is set when the request comes from a Command, which is
	// deleted as the request is taken.
	command *kit.CommandRef
	// delay is set on an action a policy timeout postponed: it runs only if
	// nothing cancelled it meanwhile.
	delay uint64
	// ttl asks to delete the Job if it finished longer ago than its TTL.
	ttl bool
	// seen is set on a request a pod's update or delete made: the change
	// cancels the pod's postponed action it ends, and may end its task
	// (seePod). pending, restarts and podUID are the pod as the change showed it.
	seen     podSeen
	pending  bool
	restarts int32
	podUID   types.UID
}

// podSeen is what a pod's update or delete tells its Job's reconcile.
type podSeen uint8

const (
	podUnseen    podSeen = iota // not a pod's update or delete
	podChanged                  // the event says it all
	podSucceeded                // the pod has just succeeded: TaskCompleted if its task is done
	podRestarted                // pending or running, restarts counted: TaskFailed if its task's are too many
)

// New validates cfg, builds the controller and registers its handlers on
// the cache's informers; the cache must not have started yet.
func New(cfg Config) (*Controller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("job controller: %w", err)
	}
	cfg.Clock = cfg.ClockOr()
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	c := &Controller{Fence: kit.Fence{Valid: cfg.Valid}, cfg: cfg, clock: cfg.Clock, metrics: m}
	c.memory.pacer.Window = max(cfg.StatusCoalesce, 0)
	c.memory.wakes = &c.Wakes
	handler := c.reconcile
	if cfg.Observe != nil {
		handler = func(ctx context.Context, key string, req request) error {
			start := c.clock.Now()
			defer func() { cfg.Observe(key, start, c.clock.Now()) }()
			return c.reconcile(ctx, key, req)
		}
	}
	err = c.Init(kit.Settings[request]{
		Name: "job", Config: cfg.Config, Work: cfg.Work, Scheme: vcscheme.Scheme,
		Handler: handler, OnGiveUp: c.giveUp, OnWait: c.onWait,
		Coalesce:           func(queued, incoming request) bool { return queued == incoming && incoming.Event == bus.OutOfSyncEvent },
		ObjectOf:           c.jobObject,
		UIDOf:              c.cfg.Cache.JobUID,
		StatusOnQuarantine: c.statusOnQuarantine,
	})
	if err != nil {
		return nil, err
	}
	c.register()
	return c, nil
}

// SlotsReady enqueues every Job of slots whose objects the cache has just
// listed: this replica now owns them and must look at each.
// Commands still waiting for those Jobs are taken up again too.
//
// A start or a gain looks at thousands of Jobs, most of them settled. A
// settled Job (Running, or finished) waits in the dispatcher's low lane, so
// that the Jobs mid-way through something (new, Pending, restarting, ending)
// and the events that arrive meanwhile come first; a missed pod failure is an
// event and comes first too.
func (c *Controller) SlotsReady(slots []int) {
	for _, key := range c.cfg.Cache.JobsInSlots(slots, c.cfg.Ownership.Slots()) {
		info, err := c.cfg.Cache.JobInfo(key)
		if err == nil && info != nil {
			for _, req := range c.missedFailures(info) {
				c.Disp.Enqueue(key, req)
			}
		}
		sync := request{Request: state.Request{Event: bus.OutOfSyncEvent}}
		if err == nil && info != nil && settled(info.Job.Status.State.Phase) {
			c.Disp.EnqueueLow(key, sync)
		} else {
			c.Disp.Enqueue(key, sync)
		}
	}
	c.commandsOf(slots)
}

// EarlyJobsLimit bounds how many Jobs of slots gained together SlotsEarly
// looks at: each costs a list of its pods from the API server, and a gain of
// thousands of Jobs mid-way is the slot's list's work.
const EarlyJobsLimit = 256

// SlotsEarly looks at the Jobs of slots, just gained, that are not settled
// (new ones, and those mid-way through a start, a restart or an end), and
// the Commands that target Jobs of the slots, before the slots' pods are
// listed: each reads its Job's pods from the API server (early). The cache
// calls it once only the slots' pods are left to list; the events of those
// Jobs that came while the slots were not held were dropped, and SlotsReady
// would bring them back only once every pod is in. Settled Jobs wait for
// SlotsReady: they have nothing to do that cannot wait.
//
// Jobs that only wait for their pods to run (waitsForItsPods) come last, in
// the dispatcher's low lane, and only while the limit leaves room after the
// others.
func (c *Controller) SlotsEarly(slots []int) {
	var waiting []string
	n := 0
	for _, key := range c.cfg.Cache.JobsInSlots(slots, c.cfg.Ownership.Slots()) {
		job, ok, err := c.cfg.Cache.Job(key)
		if err != nil || !ok || settled(job.Status.State.Phase) {
			continue
		}
		if waitsForItsPods(job) {
			if len(waiting) < EarlyJobsLimit {
				waiting = append(waiting, key)
			}
			continue
		}
		if n++; n > EarlyJobsLimit {
			break
		}
		c.Disp.Enqueue(key, request{Request: state.Request{Event: bus.OutOfSyncEvent}})
	}
	room := max(0, EarlyJobsLimit-n)
	if len(waiting) > room {
		c.Log.Debug("more unsettled jobs on gained slots than are looked at before their pods are listed", "slots", len(slots), "limit", EarlyJobsLimit)
		waiting = waiting[:room]
	}
	for _, key := range waiting {
		c.Disp.EnqueueLow(key, request{Request: state.Request{Event: bus.OutOfSyncEvent}})
	}
	c.commandsOf(slots)
}

// waitsForItsPods reports whether job is Pending with every pod it asks for
// counted in its status: it waits for them to run, and its look after a gain
// can wait behind the new Jobs and those mid-way through something. At
// 100,000 resident pods, where the fake nodes ran pods late, each survivor of
// a failover found some 190 such Jobs among the lost slots' unsettled ones;
// read early one after the other, 8 at a time, they kept the Jobs created at
// the kill from their PodGroups for 12 s (p50).
func waitsForItsPods(job *batch.Job) bool {
	if state.Normalize(job.Status.State.Phase) != batch.Pending {
		return false
	}
	var asked int64
	for _, t := range job.Spec.Tasks {
		asked += int64(t.Replicas)
	}
	s := job.Status
	made := int64(s.Pending) + int64(s.Running) + int64(s.Succeeded) + int64(s.Failed) + int64(s.Unknown)
	return asked > 0 && made >= asked
}

// commandsOf takes up again the Commands that target Jobs of slots.
func (c *Controller) commandsOf(slots []int) {
	held := shard.NewSlotSet(slots)
	for _, obj := range c.cfg.Cache.Commands().Informer().GetStore().List() {
		if cmd, ok := obj.(*bus.Command); ok && cmd.TargetObject != nil && held.HasKey(toolscache.NewObjectName(cmd.Namespace, cmd.TargetObject.Name).String(), c.cfg.Ownership.Slots()) {
			c.onCommand(cmd)
		}
	}
}

// settled reports whether a Job in phase is at rest: Running, or finished.
// Its look after a gain can wait behind the Jobs that are not.
func settled(phase batch.JobPhase) bool {
	switch phase {
	case batch.Running, batch.Completed, batch.Failed, batch.Terminated, batch.Aborted:
		return true
	}
	return false
}

// missedFailures are the PodFailed requests of the Job at key that no
// controller has acted on: a pod of the Job's current version that failed
// while the slot had no ready owner (between vc-controller-manager stopping
// and the adopting replica's slot being ready, or during a handover). Its
// failure reaches this replica only as a list's add (OutOfSync, onPodAdd),
// or as an update that reconcile dropped because the slot was not listed
// yet; a sync alone would then end a Running Job whose pods have all
// finished as Failed, never running its PodFailed policy (a RestartJob with
// retries left). An action taken on a failed pod deletes it or, by a full
// kill, moves the Job to a newer version, so a failed pod of the current
// version, not being deleted, of a Pending, Running or Restarting Job has not
// been acted on (a Restarting Job too: vc-controller-manager stopped after
// creating a restart's pod, before writing Pending, and that pod failed;
// a sync would take it Pending, then Running, then Failed). Only failures a
// policy acts on are told again: for the others the OutOfSync that follows
// is the same.
func (c *Controller) missedFailures(info *cache.JobInfo) []request {
	if info.Job.DeletionTimestamp != nil {
		return nil
	}
	job := info.Job
	switch state.Normalize(job.Status.State.Phase) {
	case batch.Pending, batch.Running, batch.Restarting:
	default:
		return nil // ending or ended: no policy acts any more
	}
	var pods []*corev1.Pod
	for _, byName := range info.Pods {
		for _, p := range byName {
			if p.Status.Phase == corev1.PodFailed && p.DeletionTimestamp == nil {
				pods = append(pods, p)
			}
		}
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	var reqs []request
	for _, p := range pods {
		_, req, ok := podRequest(p, bus.PodFailedEvent)
		if !ok || req.JobVersion != job.Status.Version {
			continue
		}
		if cs := p.Status.ContainerStatuses; len(cs) > 0 && cs[0].State.Terminated != nil {
			req.ExitCode = cs[0].State.Terminated.ExitCode
		}
		if state.ApplyPolicies(job, req.Request).Action == bus.SyncJobAction {
			continue
		}
		reqs = append(reqs, req)
	}
	return reqs
}

// SlotsLost forgets what this replica remembers of the slots' Jobs (memory).
// It implements shard.Listener.
func (c *Controller) SlotsLost(slots []int) { c.memory.lost(slots, c.cfg.Ownership.Slots()) }

// SlotsGained is a no-op: the Jobs of gained slots are enqueued once the
// cache has listed them (SlotsReady). It implements shard.Listener.
func (c *Controller) SlotsGained([]int) {}

// Run reconciles until ctx is done.
func (c *Controller) Run(ctx context.Context) { c.Base.Run(ctx, nil, "") }

// register adds the controller's handlers to the cache's informers.
func (c *Controller) register() {
	c.cfg.Cache.Jobs().AddEventHandler(guard.Handler("job", c.Log, toolscache.ResourceEventHandlerFuncs{
		AddFunc:    c.onJobAdd,
		UpdateFunc: c.onJobUpdate,
		DeleteFunc: c.onJobDelete,
	}, guard.Quarantine(c.Disp)))
	c.cfg.Cache.Commands().Informer().AddEventHandler(guard.Handler("job", c.Log, toolscache.ResourceEventHandlerFuncs{
		AddFunc: c.onCommand,
	}))
	c.cfg.Cache.Owned(cache.Pods).AddHandler(guard.Handler("job", c.Log, toolscache.ResourceEventHandlerFuncs{
		AddFunc:    c.onPodAdd,
		UpdateFunc: c.onPodUpdate,
		DeleteFunc: c.onPodDelete,
	}, guard.QuarantineBy(c.Disp, jobKeyOfPod)))
	c.cfg.Cache.Owned(cache.PodGroups).AddHandler(guard.Handler("job", c.Log, toolscache.ResourceEventHandlerFuncs{
		AddFunc:    c.onPodGroupAdd,
		UpdateFunc: c.onPodGroupUpdate,
		DeleteFunc: c.onPodGroupDelete,
	}, guard.QuarantineBy(c.Disp, jobKeyOf)))
	// A plugin object of an earlier Job of the name, going, frees a name the Job may wait for.
	// (A Secret is in no cache: a Job waiting for one looks again after recheckForeign.)
	for _, r := range []cache.Resource{cache.Services, cache.ConfigMaps, cache.NetworkPolicies} {
		c.cfg.Cache.Owned(r).AddHandler(guard.Handler("job", c.Log, toolscache.ResourceEventHandlerFuncs{DeleteFunc: c.onForeignDelete}))
	}
}

func (c *Controller) onJobAdd(obj any) {
	job, ok := obj.(*batch.Job)
	if !ok {
		return
	}
	c.Disp.Enqueue(keyOf(job), request{Request: state.Request{Event: bus.OutOfSyncEvent}})
}

// onJobUpdate looks at a Job again when its spec, phase or deletion changed. A status write
// that keeps the phase is the controller's own bookkeeping (counts, running duration, the
// version a kill bumps), as in Volcano: reacting to it would make every finished Job write its
// status again and again, each write bumping the version and causing the next.
func (c *Controller) onJobUpdate(old, new any) {
	oldJob, ok1 := old.(*batch.Job)
	newJob, ok2 := new.(*batch.Job)
	if !ok1 || !ok2 || oldJob.ResourceVersion == newJob.ResourceVersion {
		return
	}
	release := kit.Changed(oldJob, newJob) // a new spec may no longer be a poison; or the user asks
	if release {
		c.Disp.Release(keyOf(newJob))
	}
	if !release && !jobChanged(oldJob, newJob) {
		return
	}
	c.Disp.Enqueue(keyOf(newJob), request{Request: state.Request{Event: bus.OutOfSyncEvent}})
}

// jobChanged reports whether an update of a Job asks for a reconcile: a new spec (the API
// server bumps the generation of a Job, which has a status subresource, on every spec
// change), a new phase, or a deletion begun.
func jobChanged(old, cur *batch.Job) bool {
	return old.Generation != cur.Generation || old.Status.State.Phase != cur.Status.State.Phase ||
		(old.DeletionTimestamp == nil) != (cur.DeletionTimestamp == nil)
}

func (c *Controller) onJobDelete(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if job, ok := obj.(*batch.Job); ok {
		c.Disp.Release(keyOf(job))
		c.written.Forget(keyOf(job))
		c.memory.forget(keyOf(job))
	}
}

func (c *Controller) onCommand(obj any) {
	cmd, ok := obj.(*bus.Command)
	if !ok || cmd.TargetObject == nil || cmd.TargetObject.Kind != "Job" {
		return // Queue commands belong to the queue controller
	}
	key := toolscache.NewObjectName(cmd.Namespace, cmd.TargetObject.Name).String()
	c.Disp.Enqueue(key, request{
		Request: state.Request{Event: bus.CommandIssuedEvent, Action: bus.Action(cmd.Action)},
		command: kit.RefOf(cmd),
	})
}

// jobKeyOfPod is the key of the Job whose request a pod's event makes: the one quarantined
// when a pod's handler panics.
func jobKeyOfPod(obj any) string {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return ""
	}
	key, _, _ := podRequest(pod, bus.OutOfSyncEvent)
	return key
}

// jobKeyOf is the key of the Job an object of the Job's carries (cache.JobKey): the one
// quarantined when its handler panics.
func jobKeyOf(obj any) string {
	key, _ := cache.JobKey(obj)
	return key
}

// podRequest is the request a pod's event makes: its Job, task, version.
func podRequest(pod *corev1.Pod, event bus.Event) (string, request, bool) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != "Job" {
		return "", request{}, false
	}
	job := pod.Annotations[batch.JobNameKey]
	if job == "" {
		job = ref.Name
	}
	// A version past int32 is no version this controller wrote: not one to wrap around.
	version, err := strconv.ParseInt(pod.Annotations[batch.JobVersion], 10, 32)
	if err != nil {
		return "", request{}, false
	}
	return toolscache.NewObjectName(pod.Namespace, job).String(), request{Request: state.Request{
		Event: event, TaskName: pod.Annotations[batch.TaskSpecKey], PodName: pod.Name,
		JobVersion: int32(version), JobUID: ref.UID,
	}}, true
}

// onPodAdd raises PodPending for a pod that enters the cache pending (one just created), as
// Volcano does: a PodPending policy's timeout runs from there, and the pod's later changes
// while it stays pending do not start it again. Volcano raises PodPending for every pod it
// adds, running ones too (after its own restart, whose list adds them all); ringfire raises
// OutOfSync for a pod that is not pending, whose PodPending timeout no PodRunning would end.
// The pods of a slot's first list are left to SlotsReady.
func (c *Controller) onPodAdd(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	event := bus.OutOfSyncEvent
	if pending(pod) {
		event = bus.PodPendingEvent
	}
	if key, req, ok := podRequest(pod, event); ok && c.cfg.Cache.Listed(key, c.cfg.Ownership.Slots()) {
		c.Disp.Enqueue(key, req)
	}
}

// pending reports whether the pod has not started: phase Pending, or none yet.
func pending(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodPending || pod.Status.Phase == ""
}

// onPodUpdate turns a pod's change into the request Volcano's event would be:
// PodFailed with the exit code, PodRunning when it starts running, OutOfSync
// otherwise (PodPending is the add's). A change that may end the pod's task,
// a success, or a pending or running pod's restarts, is recorded in the
// request as the handler saw it (seen, restarts), and the reconcile raises
// TaskCompleted or TaskFailed from it (seePod): the handler only enqueues.
// The order is Volcano's, as its controller shows it: a pod that starts
// running raises PodRunning even when the task has failed; its next change
// raises TaskFailed.
func (c *Controller) onPodUpdate(old, new any) {
	oldPod, ok1 := old.(*corev1.Pod)
	newPod, ok2 := new.(*corev1.Pod)
	if !ok1 || !ok2 || oldPod.ResourceVersion == newPod.ResourceVersion {
		return
	}
	if newPod.DeletionTimestamp != nil {
		c.onPodDelete(newPod)
		return
	}
	event, seen := bus.OutOfSyncEvent, podChanged
	var exitCode, restarts int32
	switch newPod.Status.Phase {
	case corev1.PodFailed:
		if oldPod.Status.Phase != corev1.PodFailed {
			event = bus.PodFailedEvent
			if cs := newPod.Status.ContainerStatuses; len(cs) > 0 && cs[0].State.Terminated != nil {
				exitCode = cs[0].State.Terminated.ExitCode
			}
		}
	case corev1.PodSucceeded:
		if oldPod.Status.Phase != corev1.PodSucceeded {
			seen = podSucceeded
		}
	case corev1.PodPending:
		seen, restarts = podRestarted, state.PodRestarts(newPod)
	case corev1.PodRunning:
		if oldPod.Status.Phase != corev1.PodRunning {
			event = bus.PodRunningEvent
		} else {
			seen, restarts = podRestarted, state.PodRestarts(newPod)
		}
	}
	key, req, ok := podRequest(newPod, event)
	if !ok {
		return
	}
	req.ExitCode, req.seen, req.pending, req.restarts, req.podUID = exitCode, seen, pending(newPod), restarts, newPod.UID
	c.Disp.Enqueue(key, req)
}

func (c *Controller) onPodDelete(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if key, req, ok := podRequest(pod, bus.PodEvictedEvent); ok {
		req.seen = podChanged
		c.Disp.Enqueue(key, req)
	}
}

// onPodGroupAdd looks at the Job of a PodGroup that enters the cache of a listed slot: a
// PodGroup created, or one a relist brings after a broken watch (the API server restarted)
// already past the phase change its Job waits for, which no update will report. The adds
// of a slot's first list are left to SlotsReady.
func (c *Controller) onPodGroupAdd(obj any) {
	pg, ok := obj.(*scheduling.PodGroup)
	if !ok {
		return
	}
	key, ok := cache.JobKey(pg)
	if slots := c.cfg.Ownership.Slots(); !ok || !c.cfg.Cache.Listed(key, slots) && !c.cfg.Cache.PodsListing(key, slots) {
		return
	}
	event := bus.OutOfSyncEvent
	if pg.Status.Phase == scheduling.PodGroupUnknown {
		event = bus.JobUnknownEvent
	}
	c.Disp.Enqueue(key, request{Request: state.Request{Event: event}})
}

// onPodGroupUpdate looks at the Job of a PodGroup whose phase changed, as Volcano does, or
// whose condition tells a new story of why it waits (pendingStory), which the Job reports in a
// PodGroupPending Event: the scheduler may write that without a change of phase.
func (c *Controller) onPodGroupUpdate(old, new any) {
	oldPG, ok1 := old.(*scheduling.PodGroup)
	newPG, ok2 := new.(*scheduling.PodGroup)
	if !ok1 || !ok2 {
		return
	}
	if oldPG.Status.Phase == newPG.Status.Phase &&
		plan.PendingStory(plan.PendingCondition(oldPG)) == plan.PendingStory(plan.PendingCondition(newPG)) {
		return
	}
	key, ok := cache.JobKey(newPG)
	if !ok {
		return
	}
	event := bus.OutOfSyncEvent
	if newPG.Status.Phase == scheduling.PodGroupUnknown {
		event = bus.JobUnknownEvent
	}
	c.Disp.Enqueue(key, request{Request: state.Request{Event: event}})
}

// onPodGroupDelete looks at the Job of a PodGroup that left the cache.
func (c *Controller) onPodGroupDelete(obj any) {
	if key, ok := cache.JobKey(obj); ok {
		c.Disp.Enqueue(key, request{Request: state.Request{Event: bus.OutOfSyncEvent}})
	}
}

// giveUp ends a Job whose request failed for good MaxRequeue times: TerminateJob,
// with an Event saying why. Transient errors never come here (kit.Classify): they are
// retried for as long as they last, and told by waiting.
func (c *Controller) giveUp(key string, req request, err error) {
	c.Log.Error("request failed too often; terminating the job", "job", key, "event", req.Event, "action", req.Action, "error", err)
	if job, ok, _ := c.cfg.Cache.Job(key); ok {
		c.Recorder.Eventf(job, corev1.EventTypeWarning, "RetryLimitReached",
			"Job failed on %s for retry limit reached (%d retries), terminating it: %v", describe(req), c.MaxRequeue, err)
	}
	if req.Action == bus.TerminateJobAction {
		return // terminating failed too: leave it to the next event
	}
	c.Disp.Enqueue(key, request{Request: state.Request{Event: bus.OutOfSyncEvent, Action: bus.TerminateJobAction}})
}

// onWait tells in an Event why a Job waits on a transient error: once per wait story.
func (c *Controller) onWait(key, reason string, err error) {
	if job, ok, _ := c.cfg.Cache.Job(key); ok {
		c.Recorder.Event(job, corev1.EventTypeWarning, kit.EventWaiting, kit.WaitMessage(reason, err))
	}
}

func describe(req request) string {
	if req.Action != "" {
		return "action " + string(req.Action)
	}
	return "event " + string(req.Event)
}

func keyOf(job *batch.Job) string { return toolscache.MetaObjectToName(job).String() }

// statusOnQuarantine writes into a quarantined Job's status.state its reason Quarantined
// and a message saying why and how to release it, keeping its phase: `kubectl get vcjob`
// and `vcctl` show it, and the CronJob or JobFlow that waits on the Job hears of it (their
// controllers then tell it on their own objects). The write is over the latest version
// this replica knows (a conflict leaves it to the Event), and none is made when the Job's
// status says it already. The Job's next reconcile, once released, clears it (plan.Status).
func (c *Controller) statusOnQuarantine(ctx context.Context, key, reason string) error {
	cached, ok, _ := c.cfg.Cache.Job(key)
	if !ok {
		return nil
	}
	job := c.written.Latest(key, cached)
	msg := kit.QuarantineMessage("jobs.batch.volcano.sh/"+job.Name, reason)
	if job.Status.State.Reason == kit.ReasonQuarantined && job.Status.State.Message == msg {
		return nil
	}
	status := *job.Status.DeepCopy()
	status.State.Reason, status.State.Message = kit.ReasonQuarantined, msg
	return c.updateStatus(ctx, key, job, status)
}

// jobObject is the cached Job of key, for an Event, or nil.
func (c *Controller) jobObject(key string) runtime.Object {
	if job, ok, _ := c.cfg.Cache.Job(key); ok {
		return job
	}
	return nil
}
