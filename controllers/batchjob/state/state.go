package state

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

const (
	// ControllerName is the spec.managedBy value of the Jobs ringfire runs.
	ControllerName = "ringfire.io/job-controller"
	// TrackingFinalizer keeps a finished pod around until it is counted.
	TrackingFinalizer = batchv1.JobTrackingFinalizer

	// MaxUncountedPods bounds how many pods one sync adds to
	// status.uncountedTerminatedPods (and completedIndexes), keeping the
	// status small and a sync of a huge Job short.
	MaxUncountedPods = 500
	// MaxPodCreateDeletePerSync bounds the pods created or deleted per sync.
	MaxPodCreateDeletePerSync = 500
	// PodFailureBackoff is the delay before replacing a pod after the first
	// failure; it doubles with each further failure up to MaxPodFailureBackoff.
	PodFailureBackoff = 10 * time.Second
	// MaxPodFailureBackoff caps the pod-failure backoff.
	MaxPodFailureBackoff = 10 * time.Minute

	defaultBackoffLimit = 6

	reasonSuspended  = "JobSuspended"
	reasonResumed    = "JobResumed"
	msgBackoffLimit  = "Job has reached the specified backoff limit"
	msgDeadline      = "Job was active longer than specified deadline"
	msgCompletions   = "Reached expected number of succeeded pods"
	eventCompleted   = "Completed"
	eventTooManyPods = "TooManySucceededPods"
	eventSuspended   = "Suspended"
	eventResumed     = "Resumed"
	eventUnknownMode = "UnknownCompletionMode"
)

// Input is what one sync of a Job decides from.
type Input struct {
	Job *batchv1.Job
	// Pods holds every pod whose controller owner reference is the Job (UID
	// match), terminating and terminal ones included.
	Pods []*corev1.Pod
	Now  time.Time
	// Backoff is the controller's memory of pod failures for this Job (the
	// zero value for a Job it has not seen before).
	Backoff Backoff
}

// Backoff is the pod-failure backoff record of one Job: the failures seen
// since the last success and when the latest of them happened. The
// controller keeps it in memory between syncs and drops it when the Job is
// finished or deleted.
type Backoff struct {
	FailuresAfterLastSuccess int32
	LastFailure              time.Time
}

// Decision is what the controller must do after one sync.
type Decision struct {
	// Status is the full status to write, nil when it would not change.
	Status *batchv1.JobStatus
	// Create lists the pods to create: completion indexes (ascending) for an
	// Indexed Job, one -1 per pod for a NonIndexed Job. Build them with
	// Decision.PodFor, which adds the index's failure history for a Job with
	// backoffLimitPerIndex (the package function PodFor starts every index
	// afresh).
	Create []int
	// IndexFailures holds, for the indexes in Create that take over from a
	// failed pod of a Job with backoffLimitPerIndex, the failure counts the
	// new pod must carry. Indexes not in it start at zero.
	IndexFailures map[int]IndexFailures
	// Delete lists the pods to delete, by name.
	Delete []*corev1.Pod
	// RemoveFinalizers lists the pods that may lose TrackingFinalizer now,
	// by name: pods whose accounting is already recorded in the input status,
	// pods that need no accounting, pods of a finished Job, and pods in
	// Delete that are removed for suspension or as excess (those lose the
	// finalizer before the delete, so they never count as failures).
	RemoveFinalizers []*corev1.Pod
	// Backoff is the Job's pod-failure record after this sync.
	Backoff Backoff
	// RequeueAfter asks for another sync after this long; 0 means none is
	// needed beyond the usual watch events.
	RequeueAfter time.Duration
	// Events are to be recorded on the Job, in order.
	Events []Event
}

// Event is one event to record on the Job.
type Event struct{ Type, Reason, Message string }

// sync holds the working state of one Decide call.
type sync struct {
	in      Input
	job     *batchv1.Job
	st      *batchv1.JobStatus // the status being built
	indexed bool
	comps   int // spec.completions, 0 when unset

	active      []*corev1.Pod
	activeCount int32
	ready       int32
	terminating int32

	inUncountedOK   map[types.UID]bool
	inUncountedFail map[types.UID]bool

	succeeded int32 // succeeded pods, counted, uncounted and new
	failed    int32 // failed pods, counted, uncounted and new

	prevDone indexSet // completedIndexes of the input status
	done     indexSet // prevDone plus indexes of succeeded pods seen now

	// backoffLimitPerIndex: the indexes that failed for good (the input
	// status's and new ones), and per index without a running pod the failed
	// pod whose finalizer waits for the replacement to be created.
	failedIx indexSet
	delayed  map[int]*corev1.Pod

	verdicts map[*corev1.Pod]verdict       // pod failure policy, per pod
	byIndex  map[int][]*corev1.Pod         // pods per completion index
	history  map[*corev1.Pod]IndexFailures // failuresBefore, per pod

	backoff  Backoff
	finish   *batchv1.JobCondition // the condition the Job is heading to
	dec      Decision
	requeue  []time.Duration
	stripped map[types.UID]bool
}

// Decide computes one sync of a Job run by ringfire. It is deterministic and
// does not modify its input.
func Decide(in Input) Decision {
	s := &sync{in: in, job: in.Job, stripped: map[types.UID]bool{}}
	if isFinished(&in.Job.Status) {
		return s.finished()
	}
	if m := in.Job.Spec.CompletionMode; m != nil && *m != batchv1.NonIndexedCompletion && *m != batchv1.IndexedCompletion {
		return Decision{Backoff: in.Backoff, Events: []Event{{corev1.EventTypeWarning, eventUnknownMode, "Skipped Job sync because completion mode is unknown"}}}
	}
	s.indexed = isIndexed(in.Job)
	s.comps = int(ptr.Deref(in.Job.Spec.Completions, 0))
	s.st = in.Job.Status.DeepCopy()
	if s.st.UncountedTerminatedPods == nil {
		s.st.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	}
	s.run()
	return s.dec
}

// finished handles a Job that already has Complete or Failed: nothing more
// is created or counted; every pod still holding the finalizer is released.
func (s *sync) finished() Decision {
	var rm []*corev1.Pod
	for _, p := range s.in.Pods {
		if hasFinalizer(p) {
			rm = append(rm, p)
		}
	}
	sortByName(rm)
	return Decision{RemoveFinalizers: rm}
}

func (s *sync) run() {
	job, now := s.job, s.in.Now
	s.inUncountedOK = uidSet(s.st.UncountedTerminatedPods.Succeeded)
	s.inUncountedFail = uidSet(s.st.UncountedTerminatedPods.Failed)

	for _, p := range s.in.Pods {
		switch {
		case isActive(p):
			s.active = append(s.active, p)
			if isReady(p) {
				s.ready++
			}
		case isTerminating(p):
			s.terminating++
		}
	}
	sortByName(s.active)
	s.activeCount = int32(len(s.active))

	newOK, newFailed := s.newlyFinished()
	s.succeeded = s.st.Succeeded + int32(len(newOK)) + int32(len(s.inUncountedOK))
	// Failures an Ignore rule matched count neither here nor in
	// status.failed, but they do lengthen the pod-failure backoff below.
	s.failed = s.st.Failed + s.countedFailures(newFailed) + int32(len(s.inUncountedFail))

	if s.st.StartTime == nil && !suspended(job) {
		s.st.StartTime = ptr.To(metav1.NewTime(now))
	}
	s.backoff = nextBackoff(s.in.Backoff, newOK, newFailed)

	// Decide where the Job is heading: an earlier sync's verdict first,
	// then failure, then success.
	if c := findCondition(s.st.Conditions, batchv1.JobSuccessCriteriaMet); c != nil && c.Status == corev1.ConditionTrue {
		s.finish = c.DeepCopy()
	} else if c := findCondition(s.st.Conditions, batchv1.JobFailureTarget); c != nil && c.Status == corev1.ConditionTrue {
		s.finish = newCondition(batchv1.JobFailed, c.Reason, c.Message, now)
	} else if msg, ok := s.failJobMessage(); ok {
		s.finish = newCondition(batchv1.JobFailureTarget, batchv1.JobReasonPodFailurePolicy, msg, now)
	}
	if s.finish == nil {
		limit := ptr.Deref(job.Spec.BackoffLimit, defaultBackoffLimit)
		switch {
		case s.failed > limit || s.restartsPastLimit(limit):
			s.finish = newCondition(batchv1.JobFailureTarget, batchv1.JobReasonBackoffLimitExceeded, msgBackoffLimit, now)
		case s.pastDeadline():
			s.finish = newCondition(batchv1.JobFailureTarget, batchv1.JobReasonDeadlineExceeded, msgDeadline, now)
		case job.Spec.ActiveDeadlineSeconds != nil && !suspended(job):
			left := time.Duration(*job.Spec.ActiveDeadlineSeconds)*time.Second - now.Sub(s.st.StartTime.Time)
			s.requeue = append(s.requeue, left)
		}
	}
	if s.indexed {
		s.prevDone = parseIndexSet(s.st.CompletedIndexes, s.comps)
		s.done = s.prevDone
		for _, p := range s.in.Pods {
			if ix := completionIndex(p); p.Status.Phase == corev1.PodSucceeded && s.validIndex(ix) && hasFinalizer(p) {
				s.done = s.done.with(ix)
			}
		}
		s.succeeded = int32(s.done.count())
		if perIndex(job) {
			s.computeFailedIndexes()
			if s.finish == nil {
				nFailed := s.failedIx.count()
				switch {
				case job.Spec.MaxFailedIndexes != nil && nFailed > int(*job.Spec.MaxFailedIndexes):
					s.finish = newCondition(batchv1.JobFailureTarget, batchv1.JobReasonMaxFailedIndexesExceeded, msgMaxFailedIndexes, now)
				case nFailed > 0 && nFailed+s.done.count() >= s.comps:
					s.finish = newCondition(batchv1.JobFailureTarget, batchv1.JobReasonFailedIndexes, msgFailedIndexes, now)
				}
			}
			s.pickDelayed()
		}
		if s.finish == nil {
			if msg, ok := successPolicyMet(job.Spec.SuccessPolicy, s.done, s.comps); ok {
				s.finish = newCondition(batchv1.JobSuccessCriteriaMet, batchv1.JobReasonSuccessPolicy, msg, now)
			}
		}
	}

	if s.finish != nil {
		// Heading to a terminal state: stop everything still running. The
		// finalizers stay so the pods are counted as they go.
		for _, p := range s.active {
			s.dec.Delete = append(s.dec.Delete, p)
			if isReady(p) {
				s.ready--
			}
		}
		s.terminating += s.activeCount
		s.activeCount = 0
	} else {
		managed := false
		if job.DeletionTimestamp == nil {
			s.manage()
			managed = true
		}
		var complete bool
		if job.Spec.Completions == nil {
			complete = s.succeeded > 0 && s.activeCount == 0
		} else {
			complete = s.succeeded >= *job.Spec.Completions && s.activeCount == 0
		}
		switch {
		case complete:
			s.finish = newCondition(batchv1.JobSuccessCriteriaMet, batchv1.JobReasonCompletionsReached, msgCompletions, now)
		case managed && suspended(job):
			if s.ensureCondition(batchv1.JobSuspended, corev1.ConditionTrue, reasonSuspended, "Job suspended") {
				s.event(corev1.EventTypeNormal, eventSuspended, "Job suspended")
				// The clock of activeDeadlineSeconds stops while suspended.
				s.st.StartTime = nil
			}
		case managed:
			if s.ensureCondition(batchv1.JobSuspended, corev1.ConditionFalse, reasonResumed, "Job resumed") {
				s.event(corev1.EventTypeNormal, eventResumed, "Job resumed")
				s.st.StartTime = ptr.To(metav1.NewTime(now))
			}
		}
	}
	s.st.Active = s.activeCount
	s.st.Ready = ptr.To(s.ready)
	s.st.Terminating = ptr.To(s.terminating)
	s.track()

	if !equality.Semantic.DeepEqual(s.st, normalized(&s.job.Status)) {
		s.dec.Status = s.st
		s.dec.Backoff = s.backoff
	} else {
		s.dec.Backoff = s.in.Backoff
	}
	sortByName(s.dec.Delete)
	sortByName(s.dec.RemoveFinalizers)
	for _, d := range s.requeue {
		if d > 0 && (s.dec.RequeueAfter == 0 || d < s.dec.RequeueAfter) {
			s.dec.RequeueAfter = d
		}
	}
	if isFinished(s.st) {
		// The controller forgets the record of a finished Job.
		s.dec.Backoff = Backoff{}
	}
}

// newlyFinished returns the pods that finished but are neither counted nor
// recorded as uncounted yet.
func (s *sync) newlyFinished() (ok, failed []*corev1.Pod) {
	for _, p := range s.in.Pods {
		if !hasFinalizer(p) {
			continue
		}
		if s.indexed && !s.validIndex(completionIndex(p)) {
			continue
		}
		if p.Status.Phase == corev1.PodSucceeded && !s.inUncountedOK[p.UID] {
			ok = append(ok, p)
		}
		if s.countsAsFailed(p) && !s.inUncountedFail[p.UID] {
			failed = append(failed, p)
		}
	}
	return ok, failed
}

func (s *sync) validIndex(ix int) bool { return ix != noIndex && ix < s.comps }

// countsAsFailed: a pod in phase Failed, or — unless the Job only replaces
// failed pods — a pod being deleted before it succeeded, which may never
// reach a terminal phase.
func (s *sync) countsAsFailed(p *corev1.Pod) bool {
	if p.Status.Phase == corev1.PodFailed {
		return true
	}
	if onlyReplaceFailed(s.job) {
		return false
	}
	return p.DeletionTimestamp != nil && p.Status.Phase != corev1.PodSucceeded
}

// restartsPastLimit applies backoffLimit to container restarts when the
// pods restart in place (restartPolicy OnFailure).
func (s *sync) restartsPastLimit(limit int32) bool {
	if s.job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		return false
	}
	var restarts int32
	for _, p := range s.in.Pods {
		if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodPending {
			continue
		}
		for _, c := range p.Status.InitContainerStatuses {
			restarts += c.RestartCount
		}
		for _, c := range p.Status.ContainerStatuses {
			restarts += c.RestartCount
		}
	}
	if limit == 0 {
		return restarts > 0
	}
	return restarts >= limit
}

func (s *sync) pastDeadline() bool {
	ads := s.job.Spec.ActiveDeadlineSeconds
	if ads == nil || s.st.StartTime == nil || suspended(s.job) {
		return false
	}
	return s.in.Now.Sub(s.st.StartTime.Time) >= time.Duration(*ads)*time.Second
}

// manage brings the number of active pods to what the spec asks for,
// deleting before creating: one sync never does both.
func (s *sync) manage() {
	job := s.job
	if suspended(job) {
		s.remove(s.pickForRemoval(len(s.active)))
		return
	}
	parallelism := ptr.Deref(job.Spec.Parallelism, 1)
	var want int32
	switch {
	case job.Spec.Completions == nil && s.succeeded > 0:
		// Work-queue mode after a success: let the running pods finish.
		want = s.activeCount
	case job.Spec.Completions == nil:
		want = parallelism
	default:
		want = max(0, min(parallelism, *job.Spec.Completions-s.succeeded))
	}
	excess := max(0, int(s.activeCount-want))
	if rm := s.pickForRemoval(excess); len(rm) > 0 {
		if len(rm) > MaxPodCreateDeletePerSync {
			rm = rm[:MaxPodCreateDeletePerSync]
		}
		s.remove(rm)
		return
	}
	var waiting int32
	if onlyReplaceFailed(job) {
		waiting = s.terminating
	}
	missing := want - waiting - s.activeCount
	if missing <= 0 {
		return
	}
	if !perIndex(job) {
		// With backoffLimitPerIndex each index waits on its own (below).
		if left := backoffLeft(s.backoff, s.in.Now); left > 0 {
			s.requeue = append(s.requeue, left)
			return
		}
	}
	missing = min(missing, MaxPodCreateDeletePerSync)
	if s.indexed {
		busy := s.done
		for _, p := range s.active {
			if ix := completionIndex(p); ix != noIndex {
				busy = busy.with(ix)
			}
		}
		if onlyReplaceFailed(job) {
			for _, p := range s.in.Pods {
				if ix := completionIndex(p); isTerminating(p) && ix != noIndex {
					busy = busy.with(ix)
				}
			}
		}
		busy = busy.union(s.failedIx)
		s.dec.Create = busy.lowestMissing(int(missing), s.comps)
		if perIndex(job) {
			var wait time.Duration
			s.dec.Create, wait = s.readyIndexes(s.dec.Create)
			if wait > 0 {
				s.requeue = append(s.requeue, wait)
			}
			for _, ix := range s.dec.Create {
				if p := s.delayed[ix]; p != nil {
					if s.dec.IndexFailures == nil {
						s.dec.IndexFailures = map[int]IndexFailures{}
					}
					s.dec.IndexFailures[ix] = s.failuresAfter(p)
				}
			}
		}
	} else {
		for range missing {
			s.dec.Create = append(s.dec.Create, noIndex)
		}
	}
	s.activeCount += int32(len(s.dec.Create))
}

// pickForRemoval chooses active pods to delete: for an Indexed Job every pod
// without a valid index and every duplicate of an index (keeping the one
// furthest along), then at least n pods overall, least progressed first.
func (s *sync) pickForRemoval(n int) []*corev1.Pod {
	var rm, keep []*corev1.Pod
	if s.indexed {
		byIndex := map[int][]*corev1.Pod{}
		var order []int
		for _, p := range s.active {
			ix := completionIndex(p)
			if !s.validIndex(ix) {
				rm = append(rm, p)
				continue
			}
			if _, seen := byIndex[ix]; !seen {
				order = append(order, ix)
			}
			byIndex[ix] = append(byIndex[ix], p)
		}
		for _, ix := range order {
			group := byIndex[ix]
			sortByRemovalCost(group)
			rm = append(rm, group[:len(group)-1]...)
			keep = append(keep, group[len(group)-1])
		}
	} else {
		keep = append(keep, s.active...)
	}
	if len(rm) < n {
		sortByRemovalCost(keep)
		rm = append(rm, keep[:n-len(rm)]...)
	}
	return rm
}

// remove deletes pods that are not wanted any more. Their finalizer goes
// first, so they are not counted as failures.
func (s *sync) remove(pods []*corev1.Pod) {
	for _, p := range pods {
		s.dec.Delete = append(s.dec.Delete, p)
		if hasFinalizer(p) {
			s.release(p)
		}
		if isReady(p) {
			s.ready--
		}
	}
	s.activeCount -= int32(len(pods))
	s.terminating += int32(len(pods))
}

func (s *sync) release(p *corev1.Pod) {
	if !s.stripped[p.UID] {
		s.stripped[p.UID] = true
		s.dec.RemoveFinalizers = append(s.dec.RemoveFinalizers, p)
	}
}

// track does the finalizer bookkeeping: counts pods whose finalizer is gone,
// records newly finished pods as uncounted, releases finalizers whose
// accounting has been written, and finally marks the Job finished.
func (s *sync) track() {
	st, job := s.st, s.job
	withFinalizer := map[types.UID]bool{}
	for _, p := range s.in.Pods {
		if hasFinalizer(p) && !s.stripped[p.UID] {
			withFinalizer[p.UID] = true
		}
	}
	// Pods recorded as uncounted whose finalizer is gone are counted now.
	okLeft := keepUIDs(st.UncountedTerminatedPods.Succeeded, withFinalizer)
	failLeft := keepUIDs(st.UncountedTerminatedPods.Failed, withFinalizer)
	st.Succeeded += int32(len(st.UncountedTerminatedPods.Succeeded) - len(okLeft))
	st.Failed += int32(len(st.UncountedTerminatedPods.Failed) - len(failLeft))
	st.UncountedTerminatedPods.Succeeded, st.UncountedTerminatedPods.Failed = okLeft, failLeft

	pods := append([]*corev1.Pod(nil), s.in.Pods...)
	sortByName(pods)
	if s.indexed {
		sortByIndex(pods)
	}
	failing := s.finish != nil && s.finish.Type != batchv1.JobSuccessCriteriaMet && s.finish.Type != batchv1.JobComplete
	var newDone []int
	full := false
	for _, p := range pods {
		if !hasFinalizer(p) || s.stripped[p.UID] {
			continue
		}
		failedNow := s.countsAsFailed(p)
		if !(job.DeletionTimestamp != nil || s.finish != nil || p.Status.Phase == corev1.PodSucceeded || failedNow) {
			continue // still running: nothing to account for yet
		}
		if failedNow && s.finish == nil && job.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && s.delayed[completionIndex(p)] == p {
			continue // keeps the finalizer until its replacement exists
		}
		recorded := s.inUncountedOK[p.UID] || s.inUncountedFail[p.UID]
		pending := false // accounting added by this sync, not yet written
		ix := completionIndex(p)
		switch {
		case p.Status.Phase == corev1.PodSucceeded && !s.inUncountedFail[p.UID]:
			if s.indexed {
				if s.validIndex(ix) && !s.prevDone.has(ix) {
					newDone = append(newDone, ix)
					pending = true
				}
			} else if !s.inUncountedOK[p.UID] {
				st.UncountedTerminatedPods.Succeeded = append(st.UncountedTerminatedPods.Succeeded, p.UID)
				pending = true
			}
		case failedNow || failing:
			// A failure an Ignore rule matched is not counted: the pod just
			// loses its finalizer.
			if !s.inUncountedFail[p.UID] && (!s.indexed || s.validIndex(ix)) && s.verdictOf(p).counts {
				st.UncountedTerminatedPods.Failed = append(st.UncountedTerminatedPods.Failed, p.UID)
				pending = true
			}
		}
		if !pending || recorded {
			s.release(p)
		}
		if len(newDone)+len(st.UncountedTerminatedPods.Succeeded)+len(st.UncountedTerminatedPods.Failed) >= MaxUncountedPods {
			full = true
			break
		}
	}
	if s.indexed {
		s.done = s.done.with(newDone...)
		st.CompletedIndexes = s.done.String()
		st.Succeeded = int32(s.done.count())
		st.FailedIndexes = nil
		if perIndex(job) {
			st.FailedIndexes = ptr.To(s.failedIx.String())
		}
	}

	now := s.in.Now
	if s.finish != nil && s.finish.Type == batchv1.JobFailureTarget {
		st.Conditions = append(st.Conditions, *s.finish)
		s.finish = newCondition(batchv1.JobFailed, s.finish.Reason, s.finish.Message, now)
	}
	if s.finish != nil && s.finish.Type == batchv1.JobSuccessCriteriaMet {
		if c := findCondition(st.Conditions, batchv1.JobSuccessCriteriaMet); c == nil || c.Status != corev1.ConditionTrue {
			st.Conditions = append(st.Conditions, *s.finish)
		}
		s.finish = newCondition(batchv1.JobComplete, s.finish.Reason, s.finish.Message, now)
	}
	if full || s.finish == nil {
		return
	}
	if len(st.UncountedTerminatedPods.Succeeded)+len(st.UncountedTerminatedPods.Failed) > 0 || s.terminating > 0 {
		return // wait until every pod is counted and gone
	}
	s.ensureCondition(s.finish.Type, corev1.ConditionTrue, s.finish.Reason, s.finish.Message)
	if s.finish.Type == batchv1.JobComplete {
		st.CompletionTime = ptr.To(metav1.NewTime(now))
		if job.Spec.Completions != nil && st.Succeeded > *job.Spec.Completions {
			s.event(corev1.EventTypeWarning, eventTooManyPods, "Too many succeeded pods running after completion count reached")
		}
		s.event(corev1.EventTypeNormal, eventCompleted, "Job completed")
	} else {
		s.event(corev1.EventTypeWarning, s.finish.Reason, s.finish.Message)
	}
}

func (s *sync) event(typ, reason, msg string) {
	s.dec.Events = append(s.dec.Events, Event{typ, reason, msg})
}

// ensureCondition sets a condition of the given type to the given state,
// appending it unless it would be a new False condition. It reports whether
// the list changed.
func (s *sync) ensureCondition(t batchv1.JobConditionType, status corev1.ConditionStatus, reason, msg string) bool {
	if c := findCondition(s.st.Conditions, t); c != nil {
		if c.Status == status && c.Reason == reason && c.Message == msg {
			return false
		}
		nc := newCondition(t, reason, msg, s.in.Now)
		nc.Status = status
		*c = *nc
		return true
	}
	if status == corev1.ConditionFalse {
		return false
	}
	nc := newCondition(t, reason, msg, s.in.Now)
	nc.Status = status
	s.st.Conditions = append(s.st.Conditions, *nc)
	return true
}

func newCondition(t batchv1.JobConditionType, reason, msg string, now time.Time) *batchv1.JobCondition {
	return &batchv1.JobCondition{
		Type:               t,
		Status:             corev1.ConditionTrue,
		LastProbeTime:      metav1.NewTime(now),
		LastTransitionTime: metav1.NewTime(now),
		Reason:             reason,
		Message:            msg,
	}
}

func findCondition(list []batchv1.JobCondition, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range list {
		if list[i].Type == t {
			return &list[i]
		}
	}
	return nil
}

func isFinished(st *batchv1.JobStatus) bool {
	for _, c := range st.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func isIndexed(job *batchv1.Job) bool {
	return ptr.Deref(job.Spec.CompletionMode, batchv1.NonIndexedCompletion) == batchv1.IndexedCompletion
}

func suspended(job *batchv1.Job) bool { return ptr.Deref(job.Spec.Suspend, false) }

// onlyReplaceFailed: replacement pods wait until their predecessors reach a
// terminal phase (podReplacementPolicy Failed, implied by podFailurePolicy).
func onlyReplaceFailed(job *batchv1.Job) bool {
	if ptr.Deref(job.Spec.PodReplacementPolicy, batchv1.TerminatingOrFailed) == batchv1.Failed {
		return true
	}
	return job.Spec.PodFailurePolicy != nil
}

func uidSet(uids []types.UID) map[types.UID]bool {
	m := make(map[types.UID]bool, len(uids))
	for _, u := range uids {
		m[u] = true
	}
	return m
}

func keepUIDs(uids []types.UID, keep map[types.UID]bool) []types.UID {
	var out []types.UID
	for _, u := range uids {
		if keep[u] {
			out = append(out, u)
		}
	}
	return out
}

func sortByIndex(pods []*corev1.Pod) {
	// Stable, so pods sharing an index stay in name order.
	sortStable(pods, func(a, b *corev1.Pod) bool { return completionIndex(a) < completionIndex(b) })
}

// normalized is the input status in the shape Decide writes, for detecting
// whether anything changed.
func normalized(st *batchv1.JobStatus) *batchv1.JobStatus {
	out := st.DeepCopy()
	if out.UncountedTerminatedPods == nil {
		out.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	}
	return out
}
