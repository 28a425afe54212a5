package adversarytest

import (
	"context"
	"fmt"
	"testing"

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
	n := attackCounts().annotatedJobs
	tl := w.createAll(n, annotateWorkers, func(err error) bool { return apierrors.IsInvalid(err) || apierrors.IsForbidden(err) },
		func(ctx context.Context, i int) error {
			job := vcjob.New(ns, fmt.Sprintf("annotated-%d", i), vcjob.TaskOf("worker", 1, nil, unfitCPU, vcjob.Memory))
			job.Annotations = ann
			_, err := w.tenant.volcano.BatchV1alpha1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{})
			return err
		})
	w.requireAlive(t, "the annotated Jobs were made")
	tl.report(t, n, fmt.Sprintf("Jobs of %d KiB of annotations", annotationBytes>>10))
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
	// Each Job made gets its PodGroup, the annotations copied: the
	// replicas have reconciled them all when the PodGroups are there.
	w.waitPodGroups(t, ns, "annotated Jobs", tl)
}
