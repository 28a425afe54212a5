package state

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func newJob(mut ...func(*batchv1.Job)) *batchv1.Job {
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "ns", UID: "job-uid"},
		Spec: batchv1.JobSpec{
			ManagedBy:    ptr.To(ControllerName),
			Parallelism:  ptr.To[int32](2),
			Completions:  ptr.To[int32](3),
			BackoffLimit: ptr.To[int32](6),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "c", Image: "img"}},
				},
			},
		},
	}
	for _, m := range mut {
		m(j)
	}
	return j
}

func indexed(j *batchv1.Job) { j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion) }

type podOpt func(*corev1.Pod)

func newPod(name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "ns", UID: types.UID("uid-" + name),
			Finalizers:        []string{TrackingFinalizer},
			CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour)),
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }
func ready(p *corev1.Pod) {
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
}
func noFinalizer(p *corev1.Pod) { p.Finalizers = nil }
func deleting(p *corev1.Pod)    { p.DeletionTimestamp = ptr.To(metav1.NewTime(t0.Add(-time.Minute))) }
func index(ix int) podOpt {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[batchv1.JobCompletionIndexAnnotation] = strconv.Itoa(ix)
	}
}
func finishedAt(at time.Time) podOpt {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(at)}}}}
	}
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func hasCond(st *batchv1.JobStatus, t batchv1.JobConditionType) bool {
	c := findCondition(st.Conditions, t)
	return c != nil && c.Status == corev1.ConditionTrue
}

// validate checks a status write against the API server's rules for Jobs
// with spec.managedBy set (Kubernetes v1.36), old being the stored status.
func validate(old, new *batchv1.JobStatus) error {
	var errs []error
	bad := func(f string, a ...any) { errs = append(errs, fmt.Errorf(f, a...)) }
	if new.Active < 0 || new.Succeeded < 0 || new.Failed < 0 || ptr.Deref(new.Ready, 0) < 0 || ptr.Deref(new.Terminating, 0) < 0 {
		bad("negative counter")
	}
	if new.Ready != nil && *new.Ready > new.Active {
		bad("ready %d > active %d", *new.Ready, new.Active)
	}
	seen := map[types.UID]bool{}
	if u := new.UncountedTerminatedPods; u != nil {
		for _, id := range append(append([]types.UID(nil), u.Succeeded...), u.Failed...) {
			if id == "" || seen[id] {
				bad("empty or duplicate uncounted uid %q", id)
			}
			seen[id] = true
		}
	}
	complete, failed := hasCond(new, batchv1.JobComplete), hasCond(new, batchv1.JobFailed)
	target, scm := hasCond(new, batchv1.JobFailureTarget), hasCond(new, batchv1.JobSuccessCriteriaMet)
	finished := complete || failed
	switch {
	case complete && failed:
		bad("Complete and Failed")
	case complete && target:
		bad("Complete and FailureTarget")
	case scm && (failed || target):
		bad("SuccessCriteriaMet with Failed/FailureTarget")
	case failed && !target:
		bad("Failed without FailureTarget")
	case complete && !scm:
		bad("Complete without SuccessCriteriaMet")
	}
	if new.CompletionTime != nil && !complete {
		bad("completionTime without Complete")
	}
	if complete && new.CompletionTime == nil {
		bad("Complete without completionTime")
	}
	if new.StartTime != nil && new.CompletionTime != nil && new.CompletionTime.Before(new.StartTime) {
		bad("completionTime before startTime")
	}
	if finished {
		if new.Active > 0 {
			bad("finished with active pods")
		}
		if new.StartTime == nil {
			bad("finished without startTime")
		}
		if u := new.UncountedTerminatedPods; u != nil && len(u.Succeeded)+len(u.Failed) > 0 {
			bad("finished with uncounted pods")
		}
		if ptr.Deref(new.Terminating, 0) > 0 {
			bad("finished with terminating pods")
		}
	}
	for _, t := range []batchv1.JobConditionType{batchv1.JobFailed, batchv1.JobComplete, batchv1.JobFailureTarget, batchv1.JobSuccessCriteriaMet} {
		if hasCond(old, t) && !hasCond(new, t) {
			bad("%s=True removed", t)
		}
	}
	if hasCond(old, batchv1.JobComplete) && !hasCond(old, batchv1.JobSuccessCriteriaMet) && scm {
		bad("SuccessCriteriaMet added to Complete job")
	}
	if new.Failed < old.Failed || new.Succeeded < old.Succeeded {
		bad("counter decreased")
	}
	if old.CompletionTime != nil && new.CompletionTime != nil && !old.CompletionTime.Equal(new.CompletionTime) {
		bad("completionTime changed")
	}
	// The terminal conditions take their reason from the interim ones, and
	// the reasons are the ones the Job controller uses.
	failReasons := []string{batchv1.JobReasonBackoffLimitExceeded, batchv1.JobReasonDeadlineExceeded,
		batchv1.JobReasonPodFailurePolicy, batchv1.JobReasonMaxFailedIndexesExceeded, batchv1.JobReasonFailedIndexes}
	okReasons := []string{batchv1.JobReasonCompletionsReached, batchv1.JobReasonSuccessPolicy}
	reason := func(t batchv1.JobConditionType) string { return findCondition(new.Conditions, t).Reason }
	if target && !slices.Contains(failReasons, reason(batchv1.JobFailureTarget)) {
		bad("FailureTarget reason %q", reason(batchv1.JobFailureTarget))
	}
	if failed && target && reason(batchv1.JobFailed) != reason(batchv1.JobFailureTarget) {
		bad("Failed reason %q differs from FailureTarget's", reason(batchv1.JobFailed))
	}
	if scm && !slices.Contains(okReasons, reason(batchv1.JobSuccessCriteriaMet)) {
		bad("SuccessCriteriaMet reason %q", reason(batchv1.JobSuccessCriteriaMet))
	}
	if complete && scm && reason(batchv1.JobComplete) != reason(batchv1.JobSuccessCriteriaMet) {
		bad("Complete reason %q differs from SuccessCriteriaMet's", reason(batchv1.JobComplete))
	}
	if c := findCondition(old.Conditions, batchv1.JobFailureTarget); c != nil && c.Status == corev1.ConditionTrue {
		if n := findCondition(new.Conditions, batchv1.JobFailureTarget); n.Reason != c.Reason || n.Message != c.Message {
			bad("FailureTarget changed")
		}
	}
	return errors.Join(errs...)
}

// validateForJob adds the rules that depend on the Job's spec.
func validateForJob(job *batchv1.Job, new *batchv1.JobStatus) error {
	old := &job.Status
	if old.StartTime != nil && !ptr.Equal(old.StartTime, new.StartTime) && !ptr.Deref(job.Spec.Suspend, false) {
		return fmt.Errorf("startTime changed on unsuspended job")
	}
	if !isIndexed(job) {
		if new.CompletedIndexes != "" {
			return fmt.Errorf("completedIndexes on NonIndexed job")
		}
		return reasonsFitSpec(job, new)
	}
	if new.FailedIndexes != nil && job.Spec.BackoffLimitPerIndex == nil {
		return fmt.Errorf("failedIndexes without backoffLimitPerIndex")
	}
	comps := int(*job.Spec.Completions)
	if err := checkIndexesFormat(new.CompletedIndexes, comps); err != nil {
		return err
	}
	if new.FailedIndexes != nil {
		if err := checkIndexesFormat(*new.FailedIndexes, comps); err != nil {
			return fmt.Errorf("failedIndexes: %w", err)
		}
		done, failed := parseIndexSet(new.CompletedIndexes, comps), parseIndexSet(*new.FailedIndexes, comps)
		if n := done.overlap(failed); n > 0 {
			return fmt.Errorf("failedIndexes %q overlap completedIndexes %q", *new.FailedIndexes, new.CompletedIndexes)
		}
		if prev := parseIndexSet(ptr.Deref(old.FailedIndexes, ""), comps); prev.overlap(failed) != prev.count() {
			return fmt.Errorf("failedIndexes %q lost some of %q", *new.FailedIndexes, *old.FailedIndexes)
		}
	}
	if err := reasonsFitSpec(job, new); err != nil {
		return err
	}
	return nil
}

// reasonsFitSpec: a reason only appears when the spec has the feature
// behind it.
func reasonsFitSpec(job *batchv1.Job, st *batchv1.JobStatus) error {
	for _, c := range st.Conditions {
		switch c.Reason {
		case batchv1.JobReasonPodFailurePolicy:
			if job.Spec.PodFailurePolicy == nil {
				return fmt.Errorf("reason %s without podFailurePolicy", c.Reason)
			}
		case batchv1.JobReasonFailedIndexes, batchv1.JobReasonMaxFailedIndexesExceeded:
			if job.Spec.BackoffLimitPerIndex == nil {
				return fmt.Errorf("reason %s without backoffLimitPerIndex", c.Reason)
			}
		case batchv1.JobReasonSuccessPolicy:
			if job.Spec.SuccessPolicy == nil {
				return fmt.Errorf("reason %s without successPolicy", c.Reason)
			}
		}
	}
	return nil
}

func checkIndexesFormat(s string, completions int) error {
	if s == "" {
		return nil
	}
	last := -1
	for _, part := range strings.Split(s, ",") {
		b := strings.Split(part, "-")
		if len(b) > 2 {
			return fmt.Errorf("bad interval %q", part)
		}
		lo, err := strconv.Atoi(b[0])
		if err != nil || lo >= completions || lo <= last {
			return fmt.Errorf("bad interval %q in %q", part, s)
		}
		hi := lo
		if len(b) == 2 {
			if hi, err = strconv.Atoi(b[1]); err != nil || hi >= completions || hi <= lo {
				return fmt.Errorf("bad interval %q in %q", part, s)
			}
		}
		last = hi
	}
	return nil
}

// decide runs Decide and checks every status it returns against validation.
func decide(t *testing.T, in Input) Decision {
	t.Helper()
	if in.Now.IsZero() {
		in.Now = t0
	}
	before := in.Job.DeepCopy()
	d := Decide(in)
	if !equalJobs(before, in.Job) {
		t.Fatalf("Decide modified its input job")
	}
	if d.Status != nil {
		if err := validate(&in.Job.Status, d.Status); err != nil {
			t.Fatalf("invalid status: %v\n%+v", err, d.Status)
		}
		if err := validateForJob(in.Job, d.Status); err != nil {
			t.Fatalf("invalid status: %v\n%+v", err, d.Status)
		}
	}
	return d
}

func equalJobs(a, b *batchv1.Job) bool { return fmt.Sprintf("%+v", a) == fmt.Sprintf("%+v", b) }

// cluster simulates the API server and kubelet around Decide, for
// multi-step sequences.
type cluster struct {
	t       *testing.T
	job     *batchv1.Job
	pods    []*corev1.Pod
	backoff Backoff
	now     time.Time
	created int
	events  []Event
	// plainPodFor builds pods with the package's PodFor, as a caller that
	// ignores Decision.IndexFailures would.
	plainPodFor bool
}

func newCluster(t *testing.T, job *batchv1.Job) *cluster {
	return &cluster{t: t, job: job, now: t0}
}

// step runs one sync and applies its decision.
func (c *cluster) step() Decision {
	c.t.Helper()
	d := decide(c.t, Input{Job: c.job, Pods: c.pods, Now: c.now, Backoff: c.backoff})
	if d.Status != nil {
		c.job = c.job.DeepCopy()
		c.job.Status = *d.Status.DeepCopy()
	}
	c.backoff = d.Backoff
	c.events = append(c.events, d.Events...)
	for _, p := range d.RemoveFinalizers {
		if q := c.pod(p.Name); q != nil {
			q.Finalizers = nil
		}
	}
	for _, p := range d.Delete {
		if q := c.pod(p.Name); q != nil && q.DeletionTimestamp == nil {
			q.DeletionTimestamp = ptr.To(metav1.NewTime(c.now))
		}
	}
	for _, ix := range d.Create {
		pod := d.PodFor(c.job, ix)
		if c.plainPodFor {
			pod = PodFor(c.job, ix)
		}
		pod.Name = fmt.Sprintf("%s%d", pod.GenerateName, c.created)
		pod.UID = types.UID("uid-" + pod.Name)
		pod.CreationTimestamp = metav1.NewTime(c.now)
		pod.Status.Phase = corev1.PodPending
		c.created++
		c.pods = append(c.pods, pod)
	}
	c.gc()
	return d
}

func (c *cluster) pod(name string) *corev1.Pod {
	for _, p := range c.pods {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// gc drops pods that are deleted and terminal (or never ran) and have no
// finalizers left.
func (c *cluster) gc() {
	var keep []*corev1.Pod
	for _, p := range c.pods {
		if p.DeletionTimestamp != nil && len(p.Finalizers) == 0 && isTerminal(p) {
			continue
		}
		keep = append(keep, p)
	}
	c.pods = keep
}

// kubeletStops makes every deleted pod terminal (Failed).
func (c *cluster) kubeletStops() {
	for _, p := range c.pods {
		if p.DeletionTimestamp != nil && !isTerminal(p) {
			p.Status.Phase = corev1.PodFailed
		}
	}
	c.gc()
}

func (c *cluster) finish(name string, ph corev1.PodPhase) {
	c.t.Helper()
	p := c.pod(name)
	if p == nil {
		c.t.Fatalf("no pod %s", name)
	}
	p.Status.Phase = ph
	finishedAt(c.now)(p)
}

// exit ends a pod with the given exit code in its container (0 succeeds).
func (c *cluster) exit(name string, code int32) {
	c.t.Helper()
	ph := corev1.PodFailed
	if code == 0 {
		ph = corev1.PodSucceeded
	}
	c.finish(name, ph)
	p := c.pod(name)
	p.Status.ContainerStatuses[0].State.Terminated.ExitCode = code
}

// run makes every pod that is running (not being deleted) start; used to
// move Pending pods to Running.
func (c *cluster) run() {
	for _, p := range c.pods {
		if isActive(p) {
			p.Status.Phase = corev1.PodRunning
		}
	}
}

func (c *cluster) activeNames() []string {
	var out []string
	for _, p := range c.pods {
		if isActive(p) {
			out = append(out, p.Name)
		}
	}
	return out
}

// settle runs syncs until nothing changes any more.
func (c *cluster) settle() {
	c.t.Helper()
	for i := 0; i < 20; i++ {
		d := c.step()
		c.kubeletStops()
		if d.Status == nil && len(d.Create) == 0 && len(d.Delete) == 0 && len(d.RemoveFinalizers) == 0 {
			return
		}
	}
	c.t.Fatalf("did not settle")
}
