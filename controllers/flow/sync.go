package flow

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	flowv1 "volcano.sh/apis/pkg/apis/flow/v1alpha1"

	"github.com/ringfire/ringfire/controllers/kit"
)

// Warning reasons, each told once per flow until it is resolved.
const (
	reasonInvalid     = "InvalidFlow"      // spec.flows is not a DAG, or names an unknown step
	reasonNoTemplate  = "TemplateNotFound" // a step's JobTemplate does not exist (yet)
	reasonNameTaken   = "JobNameTaken"     // a Job of a step's name exists, made by someone else
	reasonCreateError = "FailedCreate"     // the API server refused a step's Job
	reasonIgnored     = "Ignored"          // a patch or probe the flow sets, not acted on
	reasonQuarantined = "JobQuarantined"   // a step's Job is quarantined: the flow waits on it
)

// errStale says the flow the reconcile read is older than the API server's: it is looked at
// again at once, from the newer one.
var errStale = errors.New("jobflow changed since it was read")

// Requeue delays: a step's Job the API server refused (a bad template, a quota, a closed queue)
// is tried again after refusedRetry, without spending the dispatcher's retries; a flow given up
// after MaxRequeue failures after giveUpRetry.
const (
	refusedRetry = 30 * time.Second
	giveUpRetry  = 5 * time.Minute
)

// reconcile is the dispatcher's handler for a JobFlow key.
func (c *Flows) reconcile(ctx context.Context, key string, _ request) error {
	ns, name, err := toolscache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.flows.JobFlows(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.forget(key)
		return nil
	}
	if err != nil {
		return fmt.Errorf("get jobflow %s: %w", key, err)
	}
	if cached.DeletionTimestamp != nil {
		return nil // its Jobs go with it, by their owner references
	}
	base := c.written.Latest(key, cached)
	jobs, err := c.jobsOf(base)
	if err != nil {
		return err
	}
	// A Succeeded flow that does not retain its Jobs deletes them, and its status stays as
	// it was when it Succeeded.
	if base.Status.State.Phase == flowv1.Succeed && base.Spec.JobRetainPolicy == flowv1.Delete {
		return c.deleteJobs(ctx, key, base, jobs)
	}
	graph, err := NewGraph(base.Spec.Flows)
	if err != nil {
		c.warn(key, base, reasonInvalid, err.Error()+"; fix spec.flows: no Job of the flow is made until then")
		return nil
	}
	c.memory.resolved(key, reasonInvalid)
	if msg := Ignored(base.Spec.Flows); msg != "" {
		c.warn(key, base, reasonIgnored, msg)
	}
	// The status goes on from the one held back, if any (writeStatus).
	prev := &base.Status
	if held, ok := c.memory.heldBack(key, base.ResourceVersion); ok {
		prev = held
	}
	byName := make(map[string]*batch.Job, len(jobs))
	for _, job := range jobs {
		byName[job.Name] = job
	}
	phase := func(step string) (batch.JobPhase, bool) {
		jobName := JobName(base.Name, step)
		if job, ok := byName[jobName]; ok {
			return job.Status.State.Phase, true
		}
		if CompletedBefore(prev, jobName) {
			return batch.Completed, true // done; its Job was deleted since
		}
		_, pending := c.expected(key, base.Namespace, jobName, "").Creating()
		return "", pending
	}
	var createErr error
	switch base.Status.State.Phase {
	case flowv1.Failed, flowv1.Succeed:
		// Final: a Failed flow starts nothing more, as under Volcano, and a Succeeded one does
		// not run again a Job that was deleted by hand.
	default:
		createErr = c.startReady(ctx, key, base, graph.Ready(phase))
		if errors.Is(createErr, errStale) {
			c.Disp.Enqueue(key, request{})
			return nil
		}
	}
	c.tellQuarantined(key, base, jobs)
	done := 0
	for _, step := range graph.Steps() {
		if p, ok := phase(step); ok && p == batch.Completed {
			done++
		}
	}
	if err := c.writeStatus(ctx, key, base, prev, jobs, done); err != nil {
		return err
	}
	return createErr
}

// tellQuarantined warns, once until it changes, that the flow waits on a step's Job that
// ringfire's Job controller quarantined.
func (c *Flows) tellQuarantined(key string, jf *flowv1.JobFlow, jobs []*batch.Job) {
	if q := c.cfg.Quarantine; q != nil {
		for _, job := range jobs {
			switch job.Status.State.Phase {
			case batch.Completed, batch.Failed, batch.Terminated, batch.Aborted:
				continue
			}
			if reason, ok := q.Held("job", jf.Namespace+"/"+job.Name, string(job.UID)); ok {
				c.warn(key, jf, reasonQuarantined, fmt.Sprintf(
					"the flow waits on its Job %s, which ringfire quarantined; release it with kubectl annotate --overwrite jobs.batch.volcano.sh/%s %s=<anything new>. Why: %s",
					job.Name, job.Name, kit.ReleaseAnnotation, reason))
				return
			}
		}
	}
	c.memory.resolved(key, reasonQuarantined)
}

// forget drops what is remembered of a flow that is gone.
func (c *Flows) forget(key string) {
	c.written.Forget(key)
	kit.Forget(key, &c.memory, &c.pace, &c.Wakes)
}

// startReady creates the Job of each ready step. A step whose template is missing waits for it
// (its add event brings the flow back); the other steps go on. Before the first create it reads
// the flow from the API server: a replica that just gained the flow's slot may hold an older
// copy than the Jobs it sees (a flow that has Succeeded and deleted its Jobs would look like one
// whose steps have not run), and a step must not be run on that.
func (c *Flows) startReady(ctx context.Context, key string, jf *flowv1.JobFlow, ready []string) error {
	if len(ready) == 0 {
		c.memory.resolved(key, reasonNoTemplate)
		return nil
	}
	live, err := c.cfg.Volcano.FlowV1alpha1().JobFlows(jf.Namespace).Get(ctx, jf.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("read jobflow %s: %w", key, err)
	case live.UID != jf.UID:
		return nil // replaced; the new one's events bring it
	case live.ResourceVersion != jf.ResourceVersion:
		c.written.Remember(key, jf.ResourceVersion, live)
		return errStale
	}
	var errs []error
	var missing []string
	for _, step := range ready {
		tmpl, err := c.templates.JobTemplates(jf.Namespace).Get(step)
		if apierrors.IsNotFound(err) {
			missing = append(missing, step)
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := c.createJob(ctx, key, jf, JobFor(jf, step, tmpl)); err != nil {
			errs = append(errs, err)
		}
	}
	if len(missing) > 0 {
		c.warn(key, jf, reasonNoTemplate, fmt.Sprintf("no JobTemplate %v in namespace %s: steps %v start once it is created", missing, jf.Namespace, missing))
	} else {
		c.memory.resolved(key, reasonNoTemplate)
	}
	if len(errs) > 0 {
		return fmt.Errorf("jobflow %s: %w", key, errors.Join(errs...))
	}
	return nil
}

// createJob creates a step's Job, once: the create is expected (kit.Create) until the
// informer shows the Job, and a Job of that name found already is not made again.
func (c *Flows) createJob(ctx context.Context, key string, jf *flowv1.JobFlow, job *batch.Job) error {
	if other, ok, _ := c.jobInf.GetIndexer().GetByKey(toolscache.MetaObjectToName(job).String()); ok {
		// In the namespace, not controlled by this flow (ours are in jobs, by the index). Its
		// delete wakes the flow (byJobName).
		if o, ok := other.(*batch.Job); ok {
			c.warn(key, jf, reasonNameTaken, nameTakenMessage(jf, o))
		}
		return nil
	}
	x := c.expected(key, job.Namespace, job.Name, "")
	sent, err := kit.Create(ctx, c.Guard, x, func(ctx context.Context) error {
		_, err := c.cfg.Volcano.BatchV1alpha1().Jobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{})
		return err
	})
	switch {
	case !sent:
		return err
	case err == nil:
		c.memory.resolved(key, reasonCreateError)
		c.Recorder.Eventf(jf, corev1.EventTypeNormal, "Created", "create a job named %v!", job.Name)
		return nil
	case apierrors.IsAlreadyExists(err):
		// The informer did not show a Job of the name (checked above): it is still to come.
		// Expected again, so that no step makes it twice meanwhile; once it comes, a Job not
		// this flow's is told as a name taken.
		x.ExpectCreate()
		return nil
	}
	if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
		// Refused for what it is (a bad template, a quota, a closed queue): told, and tried
		// again now and then, and when the template changes, rather than spending the retries.
		c.warn(key, jf, reasonCreateError, fmt.Sprintf("the API server refused Job %s: %v; fix JobTemplate %s (tried again every %v)", job.Name, err, job.Annotations[CreatedByJobTemplate], refusedRetry))
		c.WakeAfter(key, request{}, refusedRetry)
		return nil
	}
	return fmt.Errorf("create job %s/%s: %w", job.Namespace, job.Name, err)
}

// deleteJobs deletes the Jobs of a Succeeded flow that keeps none, each once, with the Job's
// UID as a precondition.
func (c *Flows) deleteJobs(ctx context.Context, key string, jf *flowv1.JobFlow, jobs []*batch.Job) error {
	for _, job := range jobs {
		x := c.expected(key, job.Namespace, job.Name, job.UID)
		if _, pending := x.Deleting(); job.DeletionTimestamp != nil || pending {
			continue
		}
		sent, err := kit.Delete(ctx, c.Guard, x, func(ctx context.Context) error {
			return c.cfg.Volcano.BatchV1alpha1().Jobs(job.Namespace).Delete(ctx, job.Name, metav1.DeleteOptions{
				Preconditions: &metav1.Preconditions{UID: ptr.To(job.UID)},
			})
		})
		if !sent {
			return err
		}
		// Gone already (NotFound, nil here) or replaced by another Job of the name
		// (Conflict): nothing of this one left to delete.
		if err != nil && !apierrors.IsConflict(err) {
			return fmt.Errorf("delete job %s/%s of jobflow %s: %w", job.Namespace, job.Name, key, err)
		}
	}
	return nil
}

// writeStatus writes the flow's status if it changed. A change that does not move the flow's
// phase waits a StatusCoalesce window (kit.Pacer: from the first change held, and from the
// last write), so that a busy flow costs at most one write per window.
func (c *Flows) writeStatus(ctx context.Context, key string, base *flowv1.JobFlow, prev *flowv1.JobFlowStatus, jobs []*batch.Job, done int) error {
	now := c.clock.Now()
	st := Status(*prev, jobs, now)
	for {
		next := NextPhase(st.State.Phase, &st, done, len(base.Spec.Flows))
		if next == st.State.Phase {
			break
		}
		st.State.Phase = next
	}
	if equality.Semantic.DeepEqual(base.Status, st) {
		return nil
	}
	if !significant(&base.Status, &st) && c.cfg.StatusCoalesce > 0 {
		if wait := c.pace.Wait(key, now); wait > 0 {
			c.memory.holdBack(key, base.ResourceVersion, &st)
			c.WakeAfter(key, request{}, wait)
			return nil
		}
	}
	if err := c.Guard(ctx); err != nil {
		return err
	}
	updated := base.DeepCopy()
	updated.Status = st
	got, err := c.cfg.Volcano.FlowV1alpha1().JobFlows(base.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("update status of jobflow %s: %w", key, err)
	}
	c.memory.wrote(key)
	c.pace.Wrote(key, now)
	c.written.Remember(key, base.ResourceVersion, got)
	if from, to := base.Status.State.Phase, st.State.Phase; from != to {
		c.Log.Debug("jobflow phase", "jobflow", key, "from", from, "to", to)
	}
	return nil
}

// significant reports whether a status change is one to write at once: the flow's phase moved.
// The rest (a Job added or moved on, its counts) is what the flow reports of its Jobs, which
// no decision of the flow reads back: steps start from the Jobs themselves.
func significant(old, cur *flowv1.JobFlowStatus) bool {
	return old.State.Phase != cur.State.Phase
}

// warn tells a fault of the flow in a Warning Event and a log line, once until it changes.
func (c *Flows) warn(key string, jf *flowv1.JobFlow, reason, msg string) {
	if !c.memory.tell(key, reason, msg) {
		return
	}
	c.Log.Warn("jobflow waits until fixed", "jobflow", key, "reason", reason, "error", msg)
	c.Recorder.Event(jf, corev1.EventTypeWarning, reason, msg)
}

// nameTakenMessage says why the flow does not make the Job of other's name. A Job of an
// earlier JobFlow of this name (deleted and made again, the Job left for the garbage collector)
// is waited for; any other is someone else's to remove.
func nameTakenMessage(jf *flowv1.JobFlow, other *batch.Job) string {
	if name, uid, ok := FlowOf(other); ok && name == jf.Name && uid != jf.UID {
		return fmt.Sprintf("waiting for Job %s of an earlier JobFlow %s (uid %s) to be deleted by the garbage collector", other.Name, name, uid)
	}
	return fmt.Sprintf("Job %s exists and is not this JobFlow's (controller: %v): rename the step or delete that Job", other.Name, ownerName(other))
}

func ownerName(job *batch.Job) string {
	if ref := metav1.GetControllerOf(job); ref != nil {
		return ref.Kind + " " + ref.Name
	}
	return "none"
}
