package job

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/ringfire/ringfire/controllers/job/plan"
	"github.com/ringfire/ringfire/controllers/job/state"
)

// The pods of a batch are built as their creates are sent, and dropped once sent: while a
// batch of 256 is created, at most PodParallelism built pods are alive at once (built and not
// yet answered), so that a reconcile holds a few copies of the task's template, however
// large, not 256.
func TestCreatePodsBuildAsTheySend(t *testing.T) {
	ctx := context.Background()
	job := testJob("wide", task("worker", plan.MaxCreateBatch))
	job.Status.State.Phase = batch.Pending
	f := newFixture(t, nil, job)
	f.admit(t, job)
	info, err := f.cache.JobInfo("ns/wide")
	if err != nil || info == nil {
		t.Fatalf("job info: %v", err)
	}
	in := f.c.planInput("ns/wide", f.c.defaulted(info.Job), info, state.Request{Event: bus.OutOfSyncEvent}, bus.SyncJobAction)
	creates := plan.Make(in).CreatePods
	if creates.Len() != plan.MaxCreateBatch || creates.Built() != 0 {
		t.Fatalf("a plan of %d creates, %d built", creates.Len(), creates.Built())
	}

	var mu sync.Mutex
	answered, most := 0, 0
	f.kube.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		most = max(most, creates.Built()-answered) // built, and not answered: alive
		mu.Unlock()
		time.Sleep(time.Millisecond) // the API server's answer takes a while; the workers fill up
		mu.Lock()
		answered++
		mu.Unlock()
		return true, a.(k8stesting.CreateAction).GetObject().(*corev1.Pod), nil
	})
	if _, err := f.c.createPods(ctx, "ns/wide", info.Job, creates); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d pods created, at most %d built at once (PodParallelism %d)", answered, most, f.c.cfg.PodParallelism)
	if answered != plan.MaxCreateBatch || creates.Built() != plan.MaxCreateBatch {
		t.Errorf("%d creates, %d built; want %d", answered, creates.Built(), plan.MaxCreateBatch)
	}
	if most > f.c.cfg.PodParallelism {
		t.Errorf("%d built pods alive at once, want at most PodParallelism (%d)", most, f.c.cfg.PodParallelism)
	}
}
