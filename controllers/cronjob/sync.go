package cronjob

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
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/controllers/kit"
)

// The history limits when the CronJob sets none (the CRD's defaults, Kubernetes' too).
const (
	defaultSuccessfulHistory = 3
	defaultFailedHistory     = 1
)

// sync reconciles one CronJob: account for its Jobs, start the Job of the latest unmet
// schedule time if its policies allow, and write the status if it changed. It returns how
// long until the CronJob's next schedule time; 0 when there is none to wait for (suspended,
// deleted, or a schedule that needs fixing first).
func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := toolscache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	cached, err := c.cronJobs.CronJobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("get cronjob %s: %w", key, err)
	}
	base := c.written.Latest(toolscache.MetaObjectToName(cached).String(), cached)
	jobs, err := c.jobsOf(base)
	if err != nil {
		return 0, err
	}
	cj := base.DeepCopy()
	wait, syncErr := c.syncCronJob(ctx, cj, jobs)
	// What changed is written even when a step failed: a Job deleted or made is recorded.
	// The write checks ownership first, so a replica that lost the slot writes nothing.
	if err := c.writeStatus(ctx, base, cj.Status); err != nil {
		return 0, err
	}
	return wait, syncErr
}

// untilNewSchedule is how long to wait from now for the next time of the CronJob's schedule,
// just edited: as Kubernetes does, the change alone starts no Job for a time that has already
// passed, so the CronJob is next looked at then. ok is false when the CronJob is gone, or its
// schedule does not parse or names no time: the caller syncs now, which reports it.
func (c *Controller) untilNewSchedule(key string) (time.Duration, bool) {
	ns, name, err := toolscache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, false
	}
	cj, err := c.cronJobs.CronJobs(ns).Get(name)
	if err != nil {
		return 0, false
	}
	s, _, err := ParseSchedule(cj.Spec)
	if err != nil {
		return 0, false
	}
	return untilNext(s, c.clock.Now())
}

// syncCronJob decides and acts for cj, whose status it updates in place. Finished Jobs
// beyond the history limits are deleted last, and a failure there does not hold back
// scheduling: it is reported and tried again at the next reconcile.
func (c *Controller) syncCronJob(ctx context.Context, cj *batch.CronJob, jobs []*batch.Job) (wait time.Duration, err error) {
	recorded := cj.Status.LastScheduleTime.DeepCopy() // as the API server has it
	history := c.accountJobs(ctx, cj, jobs)
	defer func() {
		if left := c.cleanHistory(ctx, cj, history, recorded); left != nil && err == nil {
			err = left // looked at again soon, by the dispatcher's retry
		}
	}()
	if cj.DeletionTimestamp != nil {
		return 0, nil
	}
	key := toolscache.MetaObjectToName(cj).String()
	sched, tzPrefix, err := ParseSchedule(cj.Spec)
	if se := (*scheduleError)(nil); errors.As(err, &se) {
		c.Log.Warn("cronjob not scheduled until it is fixed", "cronjob", key, "reason", se.reason, "error", se.msg)
		c.Recorder.Event(cj, corev1.EventTypeWarning, se.reason, se.msg)
		return 0, nil
	}
	if ptr.Deref(cj.Spec.Suspend, false) {
		return 0, nil
	}
	if tzPrefix {
		c.Recorder.Eventf(cj, corev1.EventTypeWarning, "UnsupportedSchedule",
			"CRON_TZ or TZ in schedule %q is not officially supported and spec.timeZone is ignored: move the zone to spec.timeZone", cj.Spec.Schedule)
	}
	now := c.clock.Now()
	wait, ok := untilNext(sched, now)
	since := cj.CreationTimestamp.Time
	if cj.Status.LastScheduleTime != nil {
		since = cj.Status.LastScheduleTime.Time
	}
	unmet, err := UnmetTimes(sched, since, now)
	if !ok || err != nil {
		msg := fmt.Sprintf("invalid schedule %q: %v; fix spec.schedule", cj.Spec.Schedule, errNeverRuns)
		c.Log.Warn("cronjob not scheduled until it is fixed", "cronjob", key, "reason", "InvalidSchedule", "error", msg)
		c.Recorder.Event(cj, corev1.EventTypeWarning, "InvalidSchedule", msg)
		return 0, nil
	}
	if unmet.Latest.IsZero() {
		return wait, nil
	}
	scheduled := unmet.Latest
	c.noteMissed(cj, key, sched, since, unmet, now)
	if startingDeadlinePassed(cj.Spec, scheduled, now) {
		if c.memory.firstNote(key, missedDeadline, scheduled) {
			c.metrics.missed.WithLabelValues(missedDeadline).Inc()
			c.Recorder.Eventf(cj, corev1.EventTypeWarning, "MissSchedule",
				"Missed scheduled time to start a job: %s (more than startingDeadlineSeconds=%d ago)",
				scheduled.UTC().Format(time.RFC1123Z), *cj.Spec.StartingDeadlineSeconds)
		}
		return wait, nil
	}
	if activeHasName(&cj.Status, JobName(cj.Name, scheduled)) {
		return wait, nil
	}
	switch cj.Spec.ConcurrencyPolicy {
	case batch.ForbidConcurrent:
		if len(cj.Status.Active) > 0 {
			if c.memory.firstNote(key, missedForbid, scheduled) {
				c.metrics.missed.WithLabelValues(missedForbid).Inc()
			}
			c.Recorder.Event(cj, corev1.EventTypeNormal, "JobAlreadyActive",
				"Not starting job because prior execution is running and concurrency policy is Forbid")
			if name, reason, ok := c.quarantinedActive(cj); ok && c.memory.firstNote(key, noteQuarantined, scheduled) {
				c.Recorder.Eventf(cj, corev1.EventTypeWarning, "ActiveJobQuarantined",
					"Not starting job because prior execution %s is quarantined by ringfire and concurrency policy is Forbid; it waits until the Job is released (kubectl annotate --overwrite jobs.batch.volcano.sh/%s %s=<anything new>) or deleted. Why: %s",
					name, name, kit.ReleaseAnnotation, reason)
			}
			return wait, nil
		}
	case batch.ReplaceConcurrent:
		for _, ref := range slices.Clone(cj.Status.Active) {
			if err := c.deleteJob(ctx, cj, ref.Name, ref.UID, ""); err != nil {
				return 0, err
			}
		}
	}
	if err := c.startJob(ctx, cj, scheduled, sched.Location); err != nil {
		return 0, err
	}
	return wait, nil
}

// noteQuarantined notes, once per schedule time, that a Forbid CronJob waits on a quarantined Job.
const noteQuarantined = "quarantined"

// quarantinedActive finds an active Job of cj that ringfire's Job controller quarantined: the
// name and why.
func (c *Controller) quarantinedActive(cj *batch.CronJob) (name, reason string, ok bool) {
	q := c.cfg.Quarantine
	if q == nil {
		return "", "", false
	}
	for _, ref := range cj.Status.Active {
		if reason, ok := q.Held("job", cj.Namespace+"/"+ref.Name, string(ref.UID)); ok {
			return ref.Name, reason, true
		}
	}
	return "", "", false
}

// The reasons a schedule time is counted in ringfire_cronjob_missed_schedules_total.
const (
	missedDeadline   = "starting_deadline" // too late to start: startingDeadlineSeconds passed
	missedForbid     = "forbid"            // held back by concurrencyPolicy Forbid
	missedSuperseded = "superseded"        // an older unmet time: only the latest starts
)

// noteMissed counts the unmet times older than the latest, which are never started, and
// warns when there are too many to count, as Kubernetes does.
// Each older time is counted once, though a time held back (Forbid) is looked at again at
// every later one: only the times after the latest counted before are new.
func (c *Controller) noteMissed(cj *batch.CronJob, key string, sched Schedule, since time.Time, unmet Unmet, now time.Time) {
	if unmet.Missed < 2 {
		return
	}
	prev, fresh := c.memory.note(key, missedSuperseded, unmet.Latest)
	if !fresh {
		return
	}
	if prev.After(since) {
		since = prev.Add(-time.Nanosecond) // the latest noted before is passed over now
	}
	if older, err := UnmetTimes(sched, since, unmet.Latest); err == nil && older.Missed > 1 {
		c.metrics.missed.WithLabelValues(missedSuperseded).Add(float64(older.Missed - 1))
	}
	if !unmet.TooMany() {
		return
	}
	if d := cj.Spec.StartingDeadlineSeconds; d != nil {
		// Kubernetes counts only the times within the deadline.
		if within, err := UnmetTimes(sched, now.Add(-time.Duration(*d)*time.Second), now); err != nil || !within.TooMany() {
			return
		}
	}
	c.Log.Warn("too many missed start times", "cronjob", key, "latest", unmet.Latest)
	c.Recorder.Event(cj, corev1.EventTypeWarning, "TooManyMissedTimes",
		"too many missed start times (more than 100); only the latest is started. Set or decrease .spec.startingDeadlineSeconds or check clock skew")
}

// accountJobs brings status.active, lastScheduleTime and lastSuccessfulTime up to date with
// the Jobs, and returns the finished Jobs beyond the history limits, to delete.
//
// lastScheduleTime moves up to the newest time a Job exists for: an earlier owner of the
// slot may have made that Job and lost the slot (or failed its status write) before
// recording the time, and that time must not be found unmet and run again.
func (c *Controller) accountJobs(ctx context.Context, cj *batch.CronJob, jobs []*batch.Job) []*batch.Job {
	st := &cj.Status
	owned := make(map[types.UID]bool, len(jobs))
	var succeeded, failed []*batch.Job
	for _, job := range jobs {
		owned[job.UID] = true
		if at, ok := ScheduledTime(cj.Name, job); ok && (st.LastScheduleTime == nil || at.After(st.LastScheduleTime.Time)) {
			st.LastScheduleTime = &metav1.Time{Time: at}
		}
		done, ok := finished(job)
		switch {
		case !done && !activeHas(st, job.UID):
			// Made by an earlier owner of the slot (or before a status write failed), and not
			// in status.active yet: it runs, so it counts for the concurrency policy.
			st.Active = append(st.Active, refOf(job))
			c.Recorder.Eventf(cj, corev1.EventTypeNormal, "UnexpectedJob",
				"Job %s is controlled by this CronJob but was missing from status.active; added it", job.Name)
		case done && activeHas(st, job.UID):
			dropActive(st, job.UID)
			c.Recorder.Eventf(cj, corev1.EventTypeNormal, "SawCompletedJob", "Saw completed job: %s, phase: %s", job.Name, job.Status.State.Phase)
		}
		if !done {
			continue
		}
		if at := job.Status.State.LastTransitionTime; ok && !at.IsZero() && (st.LastSuccessfulTime == nil || at.After(st.LastSuccessfulTime.Time)) {
			st.LastSuccessfulTime = at.DeepCopy()
		}
		switch {
		case job.DeletionTimestamp != nil: // on its way out: no longer history
		case ok:
			succeeded = append(succeeded, job)
		default:
			failed = append(failed, job)
		}
	}
	c.dropMissing(ctx, cj, owned)
	return append(beyondHistory(succeeded, limitOr(cj.Spec.SuccessfulJobsHistoryLimit, defaultSuccessfulHistory)),
		beyondHistory(failed, limitOr(cj.Spec.FailedJobsHistoryLimit, defaultFailedHistory))...)
}

// cleanHistory deletes the finished Jobs beyond the history limits, except a Job whose time
// the API server does not have as lastScheduleTime yet: if the status write of this
// reconcile failed, the next one would find that time unmet and run it again. Such a Job
// goes at a later reconcile, and so does one that changed since it was read (the delete's
// resourceVersion precondition) or whose delete failed (FailedDelete event). The error it
// returns names what is left, so that the CronJob is looked at again soon: a Job left for
// the next schedule time could wait a day.
func (c *Controller) cleanHistory(ctx context.Context, cj *batch.CronJob, history []*batch.Job, recorded *metav1.Time) error {
	var left []error
	for _, job := range history {
		if at, ok := ScheduledTime(cj.Name, job); ok && (recorded == nil || at.After(recorded.Time)) {
			left = append(left, fmt.Errorf("job %s: its time is not recorded as lastScheduleTime yet", job.Name))
			continue
		}
		if err := c.deleteJob(ctx, cj, job.Name, job.UID, job.ResourceVersion); err != nil {
			left = append(left, err)
		}
	}
	if len(left) == 0 {
		return nil
	}
	return fmt.Errorf("finished jobs beyond the history limit left for another pass: %w", errors.Join(left...))
}

func limitOr(limit *int32, def int32) int32 {
	if limit == nil {
		return def
	}
	return *limit
}

// dropMissing removes from status.active the Jobs that no longer exist. The informer may lag
// behind a Job just made, so a Job it lacks is asked of the API server before it is dropped;
// one the API server cannot tell about now stays, and is asked about again next time.
func (c *Controller) dropMissing(ctx context.Context, cj *batch.CronJob, owned map[types.UID]bool) {
	for _, ref := range slices.Clone(cj.Status.Active) {
		if owned[ref.UID] {
			continue
		}
		job, err := c.cfg.Volcano.BatchV1alpha1().Jobs(cj.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err) || (err == nil && job.UID != ref.UID):
			dropActive(&cj.Status, ref.UID)
			c.Recorder.Eventf(cj, corev1.EventTypeNormal, "MissingJob", "Active job went missing: %s", ref.Name)
		case err != nil:
			c.Log.Warn("cannot tell whether an active job still exists; kept in status.active", "cronjob", toolscache.MetaObjectToName(cj).String(), "job", ref.Name, "error", err)
		}
	}
}

// deleteJob deletes one of the CronJob's Jobs, its pods in the background, and drops it from
// status.active. The UID precondition makes it delete that Job only, never a later one of the
// same name; with a resourceVersion (history) also only as it was seen, so a stale owner's
// view deletes nothing that changed since. A Job already gone counts as deleted.
func (c *Controller) deleteJob(ctx context.Context, cj *batch.CronJob, name string, uid types.UID, rv string) error {
	if err := c.Guard(ctx); err != nil {
		return err
	}
	pre := &metav1.Preconditions{UID: &uid}
	if rv != "" {
		pre.ResourceVersion = &rv
	}
	err := c.cfg.Volcano.BatchV1alpha1().Jobs(cj.Namespace).Delete(ctx, name, metav1.DeleteOptions{
		Preconditions:     pre,
		PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
	})
	switch {
	case err == nil:
		c.metrics.deleted.Inc()
		c.Recorder.Eventf(cj, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted job %s", name)
	case apierrors.IsConflict(err) && rv != "":
		// Changed since it was read: the history decision is made again on what it is now.
		return fmt.Errorf("job %s changed since it was read; not deleted", name)
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
	default:
		c.Recorder.Eventf(cj, corev1.EventTypeWarning, "FailedDelete", "Deleting job %s: %v", name, err)
		return fmt.Errorf("delete job %s/%s: %w", cj.Namespace, name, err)
	}
	dropActive(&cj.Status, uid)
	return nil
}

// startJob creates the Job for the scheduled time and records it in the status. A Job of that
// name that already exists was made by an earlier try or an earlier owner of the slot: that is
// success, and it is recorded as if made now.
func (c *Controller) startJob(ctx context.Context, cj *batch.CronJob, scheduled time.Time, loc *time.Location) error {
	if err := c.Guard(ctx); err != nil {
		return err
	}
	want := JobFor(cj, scheduled, loc)
	job, err := c.cfg.Volcano.BatchV1alpha1().Jobs(cj.Namespace).Create(ctx, want, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		if job, err = c.cfg.Volcano.BatchV1alpha1().Jobs(cj.Namespace).Get(ctx, want.Name, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("get job %s/%s, which exists: %w", cj.Namespace, want.Name, err)
		}
		if _, uid, ok := ownerOf(job); !ok || uid != cj.UID {
			c.Recorder.Eventf(cj, corev1.EventTypeWarning, "ForeignJob",
				"Job %s exists and is not controlled by this CronJob, so the run of %s is skipped: delete or rename that Job",
				want.Name, scheduled.UTC().Format(time.RFC3339))
			return nil
		}
		c.Log.Debug("job already exists", "cronjob", toolscache.MetaObjectToName(cj).String(), "job", want.Name)
	case err != nil:
		c.Recorder.Eventf(cj, corev1.EventTypeWarning, "FailedCreate", "Error creating job %s: %v", want.Name, err)
		return fmt.Errorf("create job %s/%s: %w", cj.Namespace, want.Name, err)
	default:
		skew := c.clock.Since(scheduled)
		c.metrics.created.Inc()
		c.metrics.skew.Observe(skew.Seconds())
		c.Log.Debug("created job", "cronjob", toolscache.MetaObjectToName(cj).String(), "job", job.Name, "late_by", skew)
		c.Recorder.Eventf(cj, corev1.EventTypeNormal, "SuccessfulCreate", "Created job %s", job.Name)
	}
	if done, _ := finished(job); !done && !activeHas(&cj.Status, job.UID) {
		cj.Status.Active = append(cj.Status.Active, refOf(job))
	}
	cj.Status.LastScheduleTime = &metav1.Time{Time: scheduled}
	return nil
}

// writeStatus writes status over the CronJob as read: the update carries the resourceVersion
// it was computed from, so a write from a stale view, or a stale owner, fails and is retried.
func (c *Controller) writeStatus(ctx context.Context, base *batch.CronJob, status batch.CronJobStatus) error {
	if equality.Semantic.DeepEqual(base.Status, status) {
		return nil
	}
	if err := c.Guard(ctx); err != nil {
		return err
	}
	updated := base.DeepCopy()
	updated.Status = status
	got, err := c.cfg.Volcano.BatchV1alpha1().CronJobs(base.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("update status of cronjob %s/%s: %w", base.Namespace, base.Name, err)
	}
	c.written.Remember(toolscache.MetaObjectToName(got).String(), base.ResourceVersion, got)
	return nil
}
