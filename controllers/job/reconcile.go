package job

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/controllers/job/state"
	"github.com/ringfire/ringfire/shard"
)

// recheckMissing is how often a Job waiting for a missing Queue or
// PriorityClass is looked at again.
const recheckMissing = 15 * time.Second

// ReasonInvalidReference is the reason, in status.state and in a Warning
// Event, of a Job waiting for a Queue or PriorityClass (missingReference).
const ReasonInvalidReference = "InvalidReference"

// reconcile handles one request for the Job at key: fetch, default, choose
// the action, act on the pods, write the status.
func (c *Controller) reconcile(ctx context.Context, key string, req request) error {
	c.woken(key, false)
	if !c.cfg.Cache.Listed(key, c.cfg.Ownership.Slots()) {
		// The slot was just gained and its objects are still being listed: on this partial
		// view the Job would create what its last owner made. SlotsReady brings every Job of
		// the slot back, and its Commands, once the list is in.
		return nil
	}
	if req.command != nil {
		apply, err := c.takeCommand(ctx, key, req)
		if err != nil || !apply {
			return err
		}
	}
	info, err := c.cfg.Cache.JobInfo(key)
	if err != nil {
		return err
	}
	if info == nil { // deleted: what it owns goes with it (owner references)
		c.delays.forget(key)
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

	choice := state.ApplyPolicies(job, req.Request)
	switch {
	case req.delay != 0:
		if !c.delays.take(key, req.delay) {
			return nil // the pod recovered, or another action ran first
		}
	case choice.Timeout > 0:
		delayed := req
		delayed.Action, delayed.delay = choice.Action, c.delays.add(key, req.PodName, req.Event)
		c.Disp.EnqueueAfter(key, delayed, choice.Timeout)
		c.Recorder.Eventf(job, corev1.EventTypeNormal, string(batch.ExecuteAction), "Execute action %s after %s", choice.Action, choice.Timeout)
		return nil
	}
	action := choice.Action
	if action != bus.SyncJobAction {
		c.delays.forget(key) // an action ran: timed ones of this job are moot
		if req.delay == 0 {
			// Volcano's words, trailing space included; a postponed action was told
			// when it was postponed, and is not told again when it runs.
			c.Recorder.Eventf(job, corev1.EventTypeNormal, string(batch.ExecuteAction), "Start to execute action %s ", action)
		}
	}

	spec := state.SpecOf(job)
	step := state.Plan(state.Input{
		Phase: job.Status.State.Phase, Action: action, Spec: spec,
		RetryCount: job.Status.RetryCount, Drained: drained(info),
	})
	// work is the Job the act may mark (plugins record what they made in
	// status.controlledResources); job stays as read, to compare against.
	work := job.DeepCopy()
	var counts podCounts
	switch {
	case step.Kill != state.KillNone:
		var ends bool
		counts, ends, err = c.kill(ctx, key, work, info, step.Kill, req.Request)
		// A full kill starts a new version of the Job, so that events of the pods it ends
		// are told from those of the pods made after. A kill that ends no pod of the current
		// version (a finished Job looked at again, a restart waiting for the old version's
		// pods to go) has none to tell apart: bumping then would only cost a status write.
		step.BumpVersion = step.BumpVersion && ends
	case step.Sync:
		if problem := state.TooLarge(job); problem != "" {
			// Nothing sized by the spec is built for it: no PodGroup, no pods, no plugin
			// objects. A change to its spec brings it back (onJobUpdate).
			return c.hold(ctx, key, job, state.ReasonTooLarge, problem)
		}
		if problem := c.missingReference(job); problem != "" {
			return c.waitFor(ctx, key, job, problem)
		}
		counts, err = c.sync(ctx, key, work, info)
		if err == nil {
			c.announcePodGroup(key, job, info.PodGroup, counts)
			step, counts, err = c.endNow(ctx, key, work, info, step, spec, counts, req.Request)
		}
	default:
		counts = countPods(job, info)
	}
	if err != nil {
		return err
	}
	return c.writeStatus(ctx, key, job, work.Status.ControlledResources, step, spec, counts)
}

// endNow runs, when the sync settles the Job into Completed or Failed, the
// kill of that final phase in the same reconcile (state.Ending), so that the
// phase and the version the kill starts cost one status write, not two.
func (c *Controller) endNow(ctx context.Context, key string, job *batch.Job, info *cache.JobInfo, step state.Step, spec state.Spec, counts podCounts, req state.Request) (state.Step, podCounts, error) {
	current := state.Normalize(job.Status.State.Phase)
	settled, set := step.Then.Settle(current, spec, job.Status.RetryCount, counts.Counts)
	end, ok := state.Ending(current, settled, set)
	if !ok {
		return step, counts, nil
	}
	killed, ends, err := c.kill(ctx, key, job, info, end.Kill, req)
	end.BumpVersion = end.BumpVersion && ends
	return end, killed, err
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

// waitFor records why a Job cannot be synced, in an Event and in its
// status message, and looks again later.
func (c *Controller) waitFor(ctx context.Context, key string, job *batch.Job, problem string) error {
	c.Disp.EnqueueAfter(key, request{Request: state.Request{Event: bus.OutOfSyncEvent}}, recheckMissing)
	return c.hold(ctx, key, job, ReasonInvalidReference, problem)
}

// hold records why a Job is not synced, in a Warning Event and in its
// status (reason and message), once: a Job held for the same problem is
// not told again.
func (c *Controller) hold(ctx context.Context, key string, job *batch.Job, reason, problem string) error {
	if job.Status.State.Reason == reason && job.Status.State.Message == problem {
		return nil
	}
	c.Recorder.Event(job, corev1.EventTypeWarning, reason, problem)
	updated := job.DeepCopy()
	if updated.Status.State.Phase == "" {
		updated.Status.State.Phase = batch.Pending
		updated.Status.State.LastTransitionTime = metav1.Now()
	}
	updated.Status.State.Reason, updated.Status.State.Message = reason, problem
	return c.updateStatus(ctx, key, job, updated)
}

// expire deletes a finished Job whose TTL has passed, or looks again when it will.
func (c *Controller) expire(ctx context.Context, key string, job *batch.Job) error {
	left, ok := ttlLeft(job)
	if !ok {
		return nil
	}
	if left > 0 {
		c.Disp.EnqueueAfter(key, request{ttl: true}, left)
		return nil
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
	c.Log.Info("deleted finished job after its TTL", "job", key, "ttl_seconds", *job.Spec.TTLSecondsAfterFinished)
	return nil
}

// ttlLeft is how long a finished Job with a TTL has left; ok is false for a
// Job that has no TTL or has not finished.
func ttlLeft(job *batch.Job) (time.Duration, bool) {
	if job.Spec.TTLSecondsAfterFinished == nil || !finished(job.Status.State.Phase) {
		return 0, false
	}
	at := job.Status.State.LastTransitionTime.Add(time.Duration(*job.Spec.TTLSecondsAfterFinished) * time.Second)
	return time.Until(at), true
}

func finished(phase batch.JobPhase) bool {
	return phase == batch.Completed || phase == batch.Failed || phase == batch.Terminated
}

// drained reports that the Job has no pod left but pods already being deleted.
func drained(info *cache.JobInfo) bool {
	for _, pods := range info.Pods {
		for _, p := range pods {
			if p.DeletionTimestamp == nil {
				return false
			}
		}
	}
	return true
}

// writeStatus settles the phase from the counts and writes the status if it changed.
func (c *Controller) writeStatus(ctx context.Context, key string, job *batch.Job, controlled map[string]string, step state.Step, spec state.Spec, counts podCounts) error {
	st := job.Status.DeepCopy()
	st.ControlledResources = controlled
	if step.BumpRetry {
		st.RetryCount++
	}
	if step.BumpVersion {
		st.Version++
	}
	current := state.Normalize(job.Status.State.Phase)
	phase, set := step.Then.Settle(current, spec, st.RetryCount, counts.Counts)
	st.Pending, st.Running, st.Succeeded, st.Failed = counts.Pending, counts.Running, counts.Succeeded, counts.Failed
	st.Unknown, st.Terminating = counts.Unknown, counts.Terminating
	st.MinAvailable = job.Spec.MinAvailable
	st.TaskStatusCount = counts.tasks
	now := metav1.Now().Rfc3339Copy() // as the API server stores it: the next look computes the same durations
	transition := job.Status.State.Phase == "" || (set && phase != current)
	if transition {
		st.State = batch.JobState{Phase: phase, LastTransitionTime: now}
		st.Conditions = append(st.Conditions, batch.JobCondition{Status: phase, LastTransitionTime: &now})
	} else if set && phase == current && st.State.Reason != "" {
		st.State.Reason, st.State.Message = "", "" // a reason from a wait is over
	}
	if step.Sync {
		st.State.Reason, st.State.Message = heldState(st.State.Phase, st.State.Reason, st.State.Message, gangProblem(job))
	}
	if start := runningSince(st); start != nil && (phase == batch.Running || finished(phase)) {
		end := now.Time
		if finished(phase) {
			end = st.State.LastTransitionTime.Time
		}
		st.RunningDuration = &metav1.Duration{Duration: end.Sub(start.Time).Round(time.Second)}
	}
	if finished(st.State.Phase) {
		if left, ok := ttlLeft(&batch.Job{Spec: job.Spec, Status: *st}); ok {
			c.Disp.EnqueueAfter(key, request{ttl: true}, max(left, 0))
		}
	}
	if equality.Semantic.DeepEqual(*st, job.Status) || onlyDurationDiffers(st, &job.Status) {
		// A running Job's duration grows by itself: it goes out with the next write that
		// changes anything else, and at the end it is fixed at the final transition.
		return nil
	}
	countsOnly := onlyCountsDiffer(st, &job.Status)
	if countsOnly {
		if wait := c.pacer.wait(key, time.Now()); wait > 0 {
			c.metrics.statusDeferred.Inc()
			c.wakeAfter(key, wait) // then the counts of that moment are written
			return nil
		}
	}
	updated := job.DeepCopy()
	updated.Status = *st
	if err := c.updateStatus(ctx, key, job, updated); err != nil {
		return err
	}
	c.pacer.wrote(key, time.Now())
	if transition {
		c.metrics.phaseWritten(job, &job.Status, phase, now.Time)
	}
	if st.State.Reason == ReasonMinAvailableUnreachable && st.State.Message != job.Status.State.Message {
		// Told once per Job: the message stays in its status while it waits.
		c.Recorder.Event(job, corev1.EventTypeWarning, ReasonMinAvailableUnreachable, st.State.Message)
	}
	kind := "phase"
	if countsOnly {
		kind = "counts"
	}
	c.metrics.statusWrites.WithLabelValues(kind).Inc()
	if c.Log.IsDebug() {
		c.Log.Debug("wrote job status", "job", key, "kind", kind, "phase", st.State.Phase, "changed", changedFields(st, &job.Status))
	}
	return nil
}

// onlyCountsDiffer reports whether two statuses differ in nothing but the
// pod counts and the running duration: a change a later write can carry.
func onlyCountsDiffer(a, b *batch.JobStatus) bool {
	x, y := *a, *b
	for _, st := range []*batch.JobStatus{&x, &y} {
		st.Pending, st.Running, st.Succeeded, st.Failed, st.Unknown, st.Terminating = 0, 0, 0, 0, 0, 0
		st.TaskStatusCount, st.RunningDuration = nil, nil
	}
	return equality.Semantic.DeepEqual(x, y)
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

// onlyDurationDiffers reports whether two statuses differ in runningDuration alone.
func onlyDurationDiffers(a, b *batch.JobStatus) bool {
	x := *a
	x.RunningDuration = b.RunningDuration
	return equality.Semantic.DeepEqual(x, *b)
}

// runningSince is when the Job last started Running, from its conditions.
func runningSince(st *batch.JobStatus) *metav1.Time {
	for i := len(st.Conditions) - 1; i >= 0; i-- {
		if st.Conditions[i].Status == batch.Running {
			return st.Conditions[i].LastTransitionTime
		}
	}
	return nil
}

// updateStatus writes updated's status over job's resourceVersion.
func (c *Controller) updateStatus(ctx context.Context, key string, job, updated *batch.Job) error {
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
