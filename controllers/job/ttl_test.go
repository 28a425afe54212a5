package job

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// A finished Job past its TTL is deleted once: a second TTL request that
// runs before the cache shows the deletion issues no second delete (it would
// be refused, its resourceVersion precondition stale). A Job made again
// under the same name is deleted after its own TTL.
func TestTTLDeleteIsIssuedOnce(t *testing.T) {
	finished := func(uid string) *batch.Job {
		job := testJob("done", task("w", 1))
		job.UID = types.UID(uid)
		job.Spec.TTLSecondsAfterFinished = ptr.To[int32](0)
		job.Status.State = batch.JobState{Phase: batch.Completed, LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Minute))}
		return job
	}
	f := newFixture(t, nil, finished("uid-1"))
	deletes := func() int {
		n := 0
		for _, a := range f.vc.Actions() {
			if a.GetVerb() == "delete" && a.GetResource().Resource == "jobs" {
				n++
			}
		}
		return n
	}
	for range 3 {
		if err := f.c.reconcile(context.Background(), "ns/done", request{ttl: true}); err != nil {
			t.Fatal(err)
		}
	}
	if n := deletes(); n != 1 {
		t.Fatalf("%d deletes of a Job past its TTL, the cache not showing the first; want 1", n)
	}
	again := finished("uid-2")
	if _, err := f.vc.BatchV1alpha1().Jobs("ns").Create(context.Background(), again, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.cacheJob(t, again)
	if err := f.c.reconcile(context.Background(), "ns/done", request{ttl: true}); err != nil {
		t.Fatal(err)
	}
	if n := deletes(); n != 2 {
		t.Fatalf("%d deletes after the Job was made again and finished; want 2", n)
	}
}
