package adversarytest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ringfire/ringfire/e2e/vcjob"
)

func init() {
	register(attack{name: "annotated-jobs", run: attackAnnotatedJobs})
}

// The annotated Jobs: counts.annotatedJobs Jobs of annotationBytes of
// annotations each, made by annotateWorkers clients at once. Each is a gang of one pod
// asking for more CPU than the cluster has, so that it stays Pending
// without pods: the attack is the annotations held in every replica's
// cluster-wide caches (and copied to each Job's PodGroup), not its pods.
const (
	annotationBytes = 200 << 10
	annotateWorkers = 4
	// annotatedSlots is how many of the Jobs' slots the probe samples: the
	// 1,000 Jobs fall on nearly every slot.
	annotatedSlots = 8
	unfitCPU       = "10000"
)

// attackAnnotatedJobs creates the Jobs as the tenant; where ringfire's
// policies bound a Job's annotations, the refusals are counted and the
// Jobs allowed are made.
func attackAnnotatedJobs(t *testing.T, w *world) {
	ns := w.namespace(t, "annotated")
	ann := padding("job", annotationBytes)
	var made, refused atomic.Int64
	var firstRefusal atomic.Value
	var errMu sync.Mutex
	var errs []string
	work := make(chan int)
	var wg sync.WaitGroup
	began := time.Now()
	for range annotateWorkers {
		wg.Go(func() {
			for i := range work {
				job := vcjob.New(ns, fmt.Sprintf("annotated-%d", i), vcjob.TaskOf("worker", 1, nil, unfitCPU, vcjob.Memory))
				job.Annotations = ann
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				_, err := w.tenant.volcano.BatchV1alpha1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{})
				cancel()
				switch {
				case err == nil:
					made.Add(1)
				case apierrors.IsInvalid(err) || apierrors.IsForbidden(err):
					refused.Add(1)
					firstRefusal.CompareAndSwap(nil, err.Error())
				default:
					errMu.Lock()
					errs = append(errs, err.Error())
					errMu.Unlock()
				}
			}
		})
	}
	n := attackCounts().annotatedJobs
	for i := range n {
		if len(w.fleet.Down()) > 0 {
			break
		}
		work <- i
	}
	close(work)
	wg.Wait()
	w.requireAlive(t, "the annotated Jobs were made")
	t.Logf("%d Jobs of %d KiB of annotations: %d made, %d refused, in %v",
		n, annotationBytes>>10, made.Load(), refused.Load(), time.Since(began).Round(time.Second))
	if r := firstRefusal.Load(); r != nil {
		t.Logf("the first refusal: %.300s", r)
	}
	if len(errs) > 0 {
		t.Errorf("%d creates failed other than by a refusal, the first: %s", len(errs), errs[0])
	}
	var keys []string
	seen := map[int]bool{}
	for i := 0; i < n && len(seen) < annotatedSlots; i++ {
		key := fmt.Sprintf("%s/annotated-%d", ns, i)
		if s := slotOf(key); !seen[s] {
			seen[s] = true
			keys = append(keys, key)
		}
	}
	w.aim("annotated-jobs", keys...)
	if made.Load() == 0 {
		return
	}
	// Each Job made gets its PodGroup, the annotations copied: the
	// replicas have reconciled them all when the PodGroups are there.
	w.waitFor(t, "every annotated Job has its PodGroup", 3*time.Minute, func() (bool, string) {
		n, err := w.count(ns, w.volcano.SchedulingV1beta1().RESTClient(), "podgroups", "")
		if err != nil {
			return false, err.Error()
		}
		return int64(n) >= made.Load(), fmt.Sprintf("%d PodGroups of %d Jobs", n, made.Load())
	})
	t.Logf("the annotated Jobs' PodGroups are all made %v after the first Job", time.Since(began).Round(time.Second))
}
