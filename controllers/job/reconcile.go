package job

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/controllers/job/plan"
	"github.com/ringfire/ringfire/controllers/job/state"
	"github.com/ringfire/ringfire/shard"
)

// recheckMissing is how often a Job waiting for a missing Queue or
// PriorityClass is looked at again.
const recheckMissing = 15 * time.Second

// ReasonInvalidReference is the reason, in status.state and in a Warning
// Event, of a Job waiting for a Queue or PriorityClass.
const ReasonInvalidReference = plan.ReasonInvalidReference

// reconcile handles one request for the Job at key, top to bottom: listed →
// the Command taken → read → the TTL → the policies and their delays →
// plan.Make → the plan carried out (carryOut), its status last.
func (c *Controller) reconcile(ctx context.Context, key string, req request) error {
	var ran bool
	err := c.reconcileJob(ctx, key, req, &ran)
	if err == nil && ran {
		// The request that took the Command has run its action: the Command is
		// done with. Only a retry of this request, after a failure, may find it
		// gone and run it again; other requests for the same Command (the
		// informer's add, the gained slot's look at its Commands, early and when
		// ready) then find it gone and not theirs to run. A RestartJob run twice
		// would count two retries. (Not deferred: a reconcile that panics has
		// not run it.)
		c.taken.Forget(req.command.UID)
	}
	return err
}

// reconcileJob is reconcile's work; it sets *ran once the request's Command
// is taken and its action is to run.
func (c *Controller) reconcileJob(ctx context.Context, key string, req request, ran *bool) error {
	var info *cache.JobInfo
	if slots := c.cfg.Ownership.Slots(); !c.cfg.Cache.Listed(key, slots) {
		// The slot was just gained and its objects are still being listed: on this partial
		// view the Job would create what its last owner made. SlotsReady brings every Job of
		// the slot back, and its Commands, once the list is in. Only the pods left to list,
		// the Job's own are read from the API server instead (early).
		if info = c.early(ctx, key, slots); info == nil {
			if req.command != nil {
				// Its Command may have been taken by an early reconcile that failed after: no
				// Command is left for SlotsReady to find, so the request itself waits.
				c.Disp.EnqueueAfter(key, req, commandWait)
			}
			return nil
		}
	} else if c.cfg.Cache.ReadEarly(key) {
		info = c.caughtUp(ctx, key)
	}
	if req.command != nil {
		apply, err := c.takeCommand(ctx, key, req)
		if err != nil || !apply {
			return err
		}
		*ran = true
	}
	if info == nil {
		var err error
		if info, err = c.cfg.Cache.JobInfo(key); err != nil {
			return err
		}
	}
	if info == nil { // deleted: what it owns goes with it (owner references)
		c.memory.forget(key)
		return nil
	}
	job := c.written.Latest(key, info.Job)
	if job.DeletionTimestamp != nil {
		return nil
	}
	if req.ttl {
		return c.expire(ctx, key, job)
	}
	job = c.defaulted(job)
	req = c.seePod(key, job, info.Pods, req)
	action, run := c.choose(key, job, info.Pods, req)
	if !run {
		return nil
	}
	in := c.planInput(key, job, info, req.Request, action)
	return c.carryOut(ctx, key, in, plan.Make(in))
}

// early returns the Job at key, with its pods read from the API server, when
// its slot is held and only the slot's pods are still being listed
// (cache.PodsListing): a failover's new Jobs, admitted PodGroups and Commands
// need not wait for the stream of the slot's pods, which on a large cluster
// takes tens of seconds. It returns nil, leaving the Job to SlotsReady as
// before, when any other part of the slot is still being listed, the Job is
// gone or has more than cache.EarlyPodsLimit pods, the read fails, or a pod
// failed that no controller acted on (missedFailures: SlotsReady tells it
// first, so that a sync does not end the Job before its policy runs).
func (c *Controller) early(ctx context.Context, key string, slots int) *cache.JobInfo {
	if !c.cfg.Cache.PodsListing(key, slots) {
		return nil
	}
	info, err := c.cfg.Cache.JobInfoFromServer(ctx, key)
	if err != nil {
		c.Log.Debug("job left to its slot's list", "job", key, "error", err)
		return nil
	}
	if info == nil || len(c.missedFailures(info)) > 0 {
		return nil
	}
	c.metrics.early.Inc()
	return info
}

// commandWait is how long a Command's request waits for its Job's slot to be
// listed when it cannot run early.
const commandWait = time.Second

// caughtUp returns the Job at key with its pods read from the API server
// while the cache may still be older than an early read of them
// (cache.ReadEarly), or nil once the cache shows the pods as the API server
// does (or the read fails): the cache's view is the one to read then.
//
// A Job that has grown past cache.EarlyPodsLimit since it was read early is
// read from the cache from then on: reading it again on every reconcile
// would cost the API server a list of thousands of pods each time, and its
// names are fixed, so a create the older view repeats is refused as
// existing (and counted as such), never made twice.
func (c *Controller) caughtUp(ctx context.Context, key string) *cache.JobInfo {
	read, err := c.cfg.Cache.JobInfoFromServer(ctx, key)
	if errors.Is(err, cache.ErrTooManyPods) {
		c.Log.Debug("job read early has grown past what is read early; reading it from the cache", "job", key, "error", err)
		c.cfg.Cache.CaughtUp(key, nil)
		return nil
	}
	if err != nil || c.cfg.Cache.CaughtUp(key, read) {
		return nil
	}
	return read
}

// choose turns the request into the action to run now, through the Job's
// policies: an action a policy postpones is enqueued for later (run false),
// and one it postponed runs only if nothing cancelled it meanwhile and its
// pod, as the cache shows it among pods, has not moved on (movedOn).
func (c *Controller) choose(key string, job *batch.Job, pods map[string]map[string]*corev1.Pod, req request) (bus.Action, bool) {
	choice := state.ApplyPolicies(job, req.Request)
	switch {
	case req.delay != 0:
		if !c.memory.delays.take(key, req.delay) || movedOn(pods, req) {
			return "", false // the pod recovered, or another action ran first
		}
	case choice.Timeout > 0:
		delayed := req
		delayed.Action, delayed.delay = choice.Action, c.memory.delays.add(key, req.PodName, req.Event)
		delayed.seen = podUnseen // seen once, when it was postponed
		c.Disp.EnqueueAfter(key, delayed, choice.Timeout)
		c.Recorder.Eventf(job, corev1.EventTypeNormal, string(batch.ExecuteAction), "Execute action %s after %s", choice.Action, choice.Timeout)
		return "", false
	}
	action := choice.Action
	if action != bus.SyncJobAction {
		c.memory.delays.Forget(key) // an action ran: timed ones of this job are moot
		if req.delay == 0 {
			// Volcano's words, trailing space included; a postponed action was told
			// when it was postponed, and is not told again when it runs.
			c.Recorder.Eventf(job, corev1.EventTypeNormal, string(batch.ExecuteAction), "Start to execute action %s ", action)
		}
	}
	return action, true
}

// planInput gathers what plan.Make reads of the Job's world.
func (c *Controller) planInput(key string, job *batch.Job, info *cache.JobInfo, req state.Request, action bus.Action) plan.Input {
	slot := c.slotOf(key)
	pvcs := map[string]bool{}
	if len(job.Spec.Volumes) > 0 {
		owned, _ := c.cfg.Cache.OwnedBy(cache.PVCs, key, job.UID)
		for _, o := range owned {
			pvcs[o.(*corev1.PersistentVolumeClaim).Name] = true
		}
	}
	return plan.Input{
		Job: job, Pods: info.Pods, Foreign: info.Foreign, PodGroup: info.PodGroup, PVCs: pvcs,
		Slot: slot, Request: req, Action: action, Now: c.clock.Now(),
		InFlight:   inFlight{c: c.cfg.Cache, slot: slot, key: key},
		PriorityOf: c.priorityOf, MissingReference: c.missingReference,
	}
}

// inFlight reads the cache's expectations of the Job at key for plan.Make.
type inFlight struct {
	c    *cache.Cache
	slot int
	key  string
}

func (f inFlight) Creating(r cache.Resource, namespace, name string) (time.Duration, bool) {
	return f.c.Creating(f.slot, f.key, r, namespace, name)
}

func (f inFlight) Deleting(r cache.Resource, namespace, name string, uid types.UID) (time.Duration, bool) {
	if !cache.Watched(r) {
		return 0, false
	}
	return f.c.Expectations().Deleting(f.slot, f.key, r, namespace, name, uid)
}

// carryOut makes the plan's writes in the plan's one order (plan.Plan), each
// only if those before it succeeded, and the status last, but for a kill that
// moves the Job to a new phase: that status goes before its deletes. A write that learns
// what the cache did not show (a name another UID holds) has the plan made
// again with that fact, and carries out what is left of it.
func (c *Controller) carryOut(ctx context.Context, key string, in plan.Input, p plan.Plan) error {
	job := in.Job
	if p.WakeAfter > 0 {
		c.wakeAfter(key, p.WakeAfter)
	}
	if p.Hold != nil {
		if p.Hold.Recheck {
			c.Disp.EnqueueAfter(key, request{Request: state.Request{Event: bus.OutOfSyncEvent}}, recheckMissing)
		}
		if !p.Status.Write {
			return nil // told already
		}
		c.Recorder.Event(job, corev1.EventTypeWarning, p.Hold.Reason, p.Hold.Message)
		return c.updateStatus(ctx, key, job, p.Status.Next)
	}
	failed := func(stage plan.Stage) error {
		if f := p.Failure; f != nil && f.Stage == stage {
			return c.pluginFailed(job, f.What, f.Err)
		}
		return nil
	}
	for _, err := range p.Ignored {
		c.Log.Warn("job plugin arguments ignored", "job", key, "error", err)
		c.Recorder.Eventf(job, corev1.EventTypeWarning, PluginArgumentsIgnored, "%v", err)
	}
	if err := failed(plan.AtStart); err != nil {
		return err
	}
	if p.SyncPlugins != nil {
		held, err := c.write(ctx, key, job.UID, *p.SyncPlugins)
		if err != nil {
			return c.pluginFailed(job, "job plugins on sync", err)
		}
		if len(held) > 0 {
			in.PluginNamesHeld = true
			p = plan.Make(in)
			c.waitForNames(key, job, held)
		}
	}
	if err := c.writePodGroup(ctx, key, job, p); err != nil {
		c.Recorder.Eventf(job, corev1.EventTypeWarning, string(batch.PodGroupError), "Failed to create PodGroup, err: %v", err)
		return err
	}
	if err := c.createPVCs(ctx, key, job, p.CreatePVCs); err != nil {
		c.Recorder.Eventf(job, corev1.EventTypeWarning, string(batch.PVCError), "Failed to create PVC, err: %v", err)
		return err
	}
	if err := failed(plan.BeforePodCreates); err != nil {
		return err
	}
	taken, err := c.createPods(ctx, key, job, p.CreatePods)
	if len(taken) > 0 && err == nil {
		in.Taken = map[string]bool{}
		for _, h := range taken {
			in.Taken[h.Name] = true
		}
		p = plan.Make(in)
	}
	if p.Names != nil {
		c.waitForNames(key, job, append(slices.Clone(*p.Names), taken...))
	}
	if err != nil {
		return err
	}
	if p.Status.Write && p.Status.Transition && (len(p.DeletePods) > 0 || p.DeletePodGroup != nil) {
		// A kill that moves the Job (AbortJob, RestartJob, an ending) writes its new phase
		// before its deletes: a Command is taken before its reconcile, and a reconcile cut
		// short among its deletes (its replica paused, killed or moved) would otherwise leave
		// a Running Job whose abort no replica remembers. The phase's rule goes on with the
		// kill in the next reconcile, on any replica.
		if err := c.writeStatus(ctx, key, job, p.Status); err != nil {
			return err
		}
		p.Status = plan.StatusPlan{}
	}
	if err := c.deletePods(ctx, key, job, p.DeletePods); err != nil {
		return err
	}
	if p.PodGroupPending != nil && c.memory.told.change(key, p.PodGroupPending.Key) {
		c.Recorder.Event(job, corev1.EventTypeWarning, string(batch.PodGroupPending), p.PodGroupPending.Message)
	}
	if p.DeletePodGroup != nil {
		if err := c.deletePodGroup(ctx, key, p.DeletePodGroup); err != nil {
			return err
		}
	}
	if err := failed(plan.AfterKill); err != nil {
		return err
	}
	if p.KillPlugins != nil {
		if _, err := c.write(ctx, key, job.UID, *p.KillPlugins); err != nil {
			return c.pluginFailed(job, "job plugins on kill", err)
		}
	}
	return c.writeStatus(ctx, key, job, p.Status)
}

// writeStatus writes the planned status, if it changed; a change of the pod
// counts alone waits for the pacer's window, and is written then with the
// counts of that moment.
func (c *Controller) writeStatus(ctx context.Context, key string, job *batch.Job, s plan.StatusPlan) error {
	if s.TTL != nil {
		c.Disp.EnqueueAfter(key, request{ttl: true}, *s.TTL)
	}
	if !s.Write {
		return nil
	}
	if s.CountsOnly {
		if wait := c.memory.pacer.Wait(key, c.clock.Now()); wait > 0 {
			c.metrics.statusDeferred.Inc()
			c.wakeAfter(key, wait) // then the counts of that moment are written
			return nil
		}
	}
	if err := c.updateStatus(ctx, key, job, s.Next); err != nil {
		return err
	}
	c.memory.pacer.Wrote(key, c.clock.Now())
	if s.Transition {
		c.metrics.phaseWritten(job, &job.Status, s.Phase, s.At)
	}
	if s.Unreachable != "" {
		c.Recorder.Event(job, corev1.EventTypeWarning, ReasonMinAvailableUnreachable, s.Unreachable)
	}
	kind := "phase"
	if s.CountsOnly {
		kind = "counts"
	}
	c.metrics.statusWrites.WithLabelValues(kind).Inc()
	if c.Log.IsDebug() {
		c.Log.Debug("wrote job status", "job", key, "kind", kind, "phase", s.Next.State.Phase, "changed", changedFields(&s.Next, &job.Status))
	}
	return nil
}

// expire deletes a finished Job whose TTL has passed, or looks again when it will.
func (c *Controller) expire(ctx context.Context, key string, job *batch.Job) error {
	remove, after, ok := plan.TTL(job, c.clock.Now())
	if !ok {
		return nil
	}
	if !remove {
		c.Disp.EnqueueAfter(key, request{ttl: true}, after)
		return nil
	}
	if uid, ok := c.memory.expired.Get(key); ok && uid == job.UID {
		return nil // deleted already; the cache shows it soon (DeletionTimestamp, or gone)
	}
	if err := c.Guard(ctx); err != nil {
		return err
	}
	policy := metav1.DeletePropagationForeground // as Volcano: the Job stays, being deleted, until its pods are gone
	err := c.cfg.Volcano.BatchV1alpha1().Jobs(job.Namespace).Delete(ctx, job.Name, metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: &job.UID, ResourceVersion: &job.ResourceVersion},
		PropagationPolicy: &policy,
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete job after its TTL: %w", err)
	}
	c.memory.expired.Set(key, job.UID)
	c.Log.Info("deleted finished job after its TTL", "job", key, "ttl_seconds", *job.Spec.TTLSecondsAfterFinished)
	return nil
}

// takeCommand deletes the Command behind req, so that it runs once
// (kit.Commands). It reports whether to apply the action: a Command found
// gone is applied only if this replica took it (an earlier try of this same
// request); one taken elsewhere — a stale copy seen after a handover — is
// not applied twice.
func (c *Controller) takeCommand(ctx context.Context, key string, req request) (bool, error) {
	cmd := req.command
	run, took, err := c.taken.Take(ctx, c.cfg.Volcano, *cmd, c.Guard)
	if err != nil || !took {
		return run, err
	}
	c.metrics.commandTaken(req.Action)
	if job, ok, _ := c.cfg.Cache.Job(key); ok {
		if !knownAction(req.Action) {
			c.Recorder.Eventf(job, corev1.EventTypeWarning, "UnknownCommandAction",
				"Command %s asks for action %q, which no Job knows; it was removed and nothing else done", cmd.Name, req.Action)
		} else {
			c.Recorder.Eventf(job, corev1.EventTypeNormal, string(batch.CommandIssued),
				"Start to execute command %s, and clean it up to make sure executed not more than once.", req.Action)
		}
	}
	return true, nil
}

// jobActions are the actions a Job knows.
var jobActions = []bus.Action{bus.AbortJobAction, bus.RestartJobAction, bus.RestartTaskAction, bus.RestartPodAction,
	bus.RestartPartitionAction, bus.TerminateJobAction, bus.CompleteJobAction, bus.ResumeJobAction,
	bus.SyncJobAction}

func knownAction(a bus.Action) bool { return slices.Contains(jobActions, a) }

// defaulted returns the Job with what Volcano's mutating webhook would have
// set (the scheduler name is this controller's), in memory only: the API
// server sets the same defaults at admission where it serves ringfire's
// MutatingAdmissionPolicy (deploy/crds), and a write only to store them
// would cost every Job one more Update (docs/jobs.md). A Job that needs
// none is returned as it is.
func (c *Controller) defaulted(job *batch.Job) *batch.Job {
	d := job.DeepCopy()
	named := d.Spec.SchedulerName == ""
	if named {
		d.Spec.SchedulerName = c.cfg.SchedulerName
	}
	if len(state.Defaults(d)) == 0 && !named {
		return job
	}
	return d
}

// missingReference names a Queue or PriorityClass the Job needs that does
// not exist, or a queue it may not start on (queueProblem), or returns "".
func (c *Controller) missingReference(job *batch.Job) string {
	queue := job.Spec.Queue
	if queue == "" {
		queue = state.DefaultQueue
	}
	if _, err := c.cfg.Cache.Queues().Lister().Get(queue); err != nil {
		return fmt.Sprintf("queue %q does not exist: create it, or set spec.queue to an existing one", queue)
	}
	if problem := c.queueProblem(job, queue); problem != "" {
		return problem
	}
	names := []string{job.Spec.PriorityClassName}
	for _, t := range job.Spec.Tasks {
		names = append(names, t.Template.Spec.PriorityClassName)
	}
	for _, pc := range names {
		if pc == "" {
			continue
		}
		if _, err := c.cfg.Cache.PriorityClasses().Lister().Get(pc); err != nil {
			return fmt.Sprintf("priority class %q does not exist: create it, or fix the priorityClassName", pc)
		}
	}
	return ""
}

// changedFields names the fields of the status that differ, for the debug log.
func changedFields(a, b *batch.JobStatus) []string {
	var out []string
	add := func(name string, differ bool) {
		if differ {
			out = append(out, name)
		}
	}
	add("state", !equality.Semantic.DeepEqual(a.State, b.State))
	add("conditions", len(a.Conditions) != len(b.Conditions))
	add("counts", a.Pending != b.Pending || a.Running != b.Running || a.Succeeded != b.Succeeded ||
		a.Failed != b.Failed || a.Unknown != b.Unknown || a.Terminating != b.Terminating)
	add("taskStatusCount", !equality.Semantic.DeepEqual(a.TaskStatusCount, b.TaskStatusCount))
	add("runningDuration", !equality.Semantic.DeepEqual(a.RunningDuration, b.RunningDuration))
	add("minAvailable", a.MinAvailable != b.MinAvailable)
	add("version", a.Version != b.Version)
	add("retryCount", a.RetryCount != b.RetryCount)
	add("controlledResources", !equality.Semantic.DeepEqual(a.ControlledResources, b.ControlledResources))
	return out
}

// updateStatus writes status over job's resourceVersion.
func (c *Controller) updateStatus(ctx context.Context, key string, job *batch.Job, status batch.JobStatus) error {
	updated := job.DeepCopy()
	updated.Status = status
	if err := c.Guard(ctx); err != nil {
		return err
	}
	written, err := c.cfg.Volcano.BatchV1alpha1().Jobs(job.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil // deleted since the cache saw it: its delete event ends the key
	}
	if err != nil {
		return fmt.Errorf("update status: %w", err)
	}
	c.written.Remember(key, job.ResourceVersion, written)
	return nil
}

// slotOf is the ring slot of a Job key.
func (c *Controller) slotOf(key string) int { return shard.SlotOf(key, c.cfg.Ownership.Slots()) }
