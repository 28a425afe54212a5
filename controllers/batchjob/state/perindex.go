package state

import (
	"math"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

const (
	msgMaxFailedIndexes = "Job has exceeded the specified maximal number of failed indexes"
	msgFailedIndexes    = "Job has failed indexes"
)

// IndexFailures is the failure history of one completion index, as the pods
// of an Indexed Job with backoffLimitPerIndex carry it in the annotations
// batch.kubernetes.io/job-index-failure-count (Failed: failures that count
// against backoffLimitPerIndex) and
// batch.kubernetes.io/job-index-ignored-failure-count (Ignored: failures a
// podFailurePolicy Ignore rule left out).
type IndexFailures struct{ Failed, Ignored int32 }

func (f IndexFailures) total() int32 { return f.Failed + f.Ignored }

// perIndex reports whether the Job limits retries per completion index.
func perIndex(job *batchv1.Job) bool {
	return isIndexed(job) && job.Spec.BackoffLimitPerIndex != nil
}

// annotatedFailures reads a pod's failure-count annotations; a missing,
// malformed, negative or oversized value reads as 0.
func annotatedFailures(p *corev1.Pod) IndexFailures {
	read := func(key string) int32 {
		v, ok := p.Annotations[key]
		if !ok {
			return 0
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || n > math.MaxInt32 {
			return 0
		}
		return int32(n)
	}
	return IndexFailures{
		Failed:  read(batchv1.JobIndexFailureCountAnnotation),
		Ignored: read(batchv1.JobIndexIgnoredFailureCountAnnotation),
	}
}

// earlier orders pods of one index by creation, then name.
func earlier(a, b *corev1.Pod) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// failuresBefore is the failure history a failed pod of an index inherited:
// its annotations, and never less than the earlier failed pods of the same
// index that are still around. The annotations are what Kubernetes goes by;
// the pods are a floor for a pod created without the counts (a caller that
// used PodFor rather than PodForIndex, say), and since failed pods stay until
// the Job goes they agree with the annotations whenever those are right.
func (s *sync) failuresBefore(p *corev1.Pod) IndexFailures {
	if f, ok := s.history[p]; ok {
		return f
	}
	if s.byIndex == nil {
		s.byIndex = map[int][]*corev1.Pod{}
		s.history = map[*corev1.Pod]IndexFailures{}
		for _, q := range s.in.Pods {
			ix := completionIndex(q)
			s.byIndex[ix] = append(s.byIndex[ix], q)
		}
	}
	f := annotatedFailures(p)
	var seen IndexFailures
	for _, q := range s.byIndex[completionIndex(p)] {
		if q == p || !earlier(q, p) {
			continue
		}
		// A failed pod, or one that counts as failed while it still holds
		// the finalizer; not a pod removed as excess, which lost the
		// finalizer before its deletion.
		if q.DeletionTimestamp != nil && !hasFinalizer(q) {
			continue
		}
		if q.Status.Phase != corev1.PodFailed && !(hasFinalizer(q) && s.countsAsFailed(q)) {
			continue
		}
		if s.verdictOf(q).counts {
			seen.Failed++
		} else {
			seen.Ignored++
		}
	}
	f = IndexFailures{Failed: max(f.Failed, seen.Failed), Ignored: max(f.Ignored, seen.Ignored)}
	s.history[p] = f
	return f
}

// failuresAfter is the history a replacement of the failed pod p inherits:
// p's own history plus p's failure.
func (s *sync) failuresAfter(p *corev1.Pod) IndexFailures {
	f := s.failuresBefore(p)
	if s.verdictOf(p).counts {
		f.Failed++
	} else {
		f.Ignored++
	}
	return f
}

// failsIndex: the failed pod p ends its index, by a FailIndex rule or by
// a counted failure with backoffLimitPerIndex failures already behind it.
func (s *sync) failsIndex(p *corev1.Pod) bool {
	if !s.countsAsFailed(p) {
		return false
	}
	v := s.verdictOf(p)
	if v.rule == batchv1.PodFailurePolicyActionFailIndex {
		return true
	}
	return v.counts && s.failuresBefore(p).Failed >= *s.job.Spec.BackoffLimitPerIndex
}

// computeFailedIndexes sets s.failedIx: status.failedIndexes plus the indexes
// that pods not yet accounted for (still holding the finalizer) end now.
func (s *sync) computeFailedIndexes() {
	s.failedIx = parseIndexSet(ptr.Deref(s.st.FailedIndexes, ""), s.comps)
	for _, p := range s.in.Pods {
		// A pod already recorded as failed had its verdict written with that
		// record; one recorded because the Job was stopping ends no index.
		if s.inUncountedFail[p.UID] {
			continue
		}
		if ix := completionIndex(p); s.validIndex(ix) && hasFinalizer(p) && s.failsIndex(p) {
			s.failedIx = s.failedIx.with(ix)
		}
	}
}

// pickDelayed chooses, per index that is neither finished nor running, the
// failed pod whose finalizer stays until its replacement exists, so that
// the replacement can be given the index's history: the one furthest along
// (most failures, then latest to finish).
func (s *sync) pickDelayed() {
	s.delayed = map[int]*corev1.Pod{}
	running := map[int]bool{}
	for _, p := range s.active {
		running[completionIndex(p)] = true
	}
	pods := append([]*corev1.Pod(nil), s.in.Pods...)
	sortByName(pods)
	for _, p := range pods {
		ix := completionIndex(p)
		if !hasFinalizer(p) || !s.validIndex(ix) || !s.countsAsFailed(p) {
			continue
		}
		if s.done.has(ix) || s.failedIx.has(ix) || running[ix] {
			continue
		}
		prev, ok := s.delayed[ix]
		if !ok || (s.failuresBefore(prev).total() <= s.failuresBefore(p).total() && !finishTime(p).Before(finishTime(prev))) {
			s.delayed[ix] = p
		}
	}
}

// indexBackoffLeft is how long the index must still wait before its next
// pod: the usual pod-failure backoff, over the index's failures (counted and
// ignored) and from the finish of its last failed pod.
func (s *sync) indexBackoffLeft(ix int) time.Duration {
	p := s.delayed[ix]
	if p == nil {
		return 0
	}
	return backoffLeft(Backoff{
		FailuresAfterLastSuccess: s.failuresBefore(p).total() + 1,
		LastFailure:              finishTime(p),
	}, s.in.Now)
}

// readyIndexes splits the indexes to create into those whose backoff is
// over and, when some still wait, the shortest of their waits.
func (s *sync) readyIndexes(ixs []int) (now []int, wait time.Duration) {
	for _, ix := range ixs {
		left := s.indexBackoffLeft(ix)
		if left <= 0 {
			now = append(now, ix)
			continue
		}
		if wait == 0 || left < wait {
			wait = left
		}
	}
	return now, wait
}

// PodForIndex is PodFor for a pod that takes over an index with a failure
// history: for an Indexed Job with backoffLimitPerIndex it carries the
// counts in its annotations (see IndexFailures). Decision.PodFor passes the
// counts Decide worked out.
func PodForIndex(job *batchv1.Job, index int, failed, ignored int32) *corev1.Pod {
	pod := PodFor(job, index)
	if perIndex(job) && index >= 0 {
		pod.Annotations[batchv1.JobIndexFailureCountAnnotation] = strconv.Itoa(int(failed))
		if ignored > 0 {
			pod.Annotations[batchv1.JobIndexIgnoredFailureCountAnnotation] = strconv.Itoa(int(ignored))
		}
	}
	return pod
}

// PodFor builds the pod for one entry of d.Create, with the failure counts
// d.IndexFailures holds for its index.
func (d Decision) PodFor(job *batchv1.Job, index int) *corev1.Pod {
	f := d.IndexFailures[index]
	return PodForIndex(job, index, f.Failed, f.Ignored)
}
