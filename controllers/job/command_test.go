package job

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/controllers/job/state"
	"github.com/ringfire/ringfire/controllers/kit"
)

// One RestartJob Command restarts its Job once, however many requests carry
// it: the Commands informer's add, and a gained slot's look at its Commands
// (early, then once ready) may each bring the same Command. A copy that
// comes after the restart has gone on to Pending finds the Command gone and
// not its own to run; run again, it would count a second retry (three such
// copies failed a Job at its maxRetry in CI). A retry of the request that
// took the Command, after a failure past the take, still runs it.
func TestOneRestartCommandRestartsOnceWhateverItsCopies(t *testing.T) {
	for _, failFirst := range []bool{false, true} {
		name := map[bool]string{false: "copies", true: "retried"}[failFirst]
		t.Run(name, func(t *testing.T) {
			f, job, pods := runningWithEvictionPolicy(t, name)
			job.Spec.Policies = nil
			f.cacheJob(t, job)
			cmd := &bus.Command{
				ObjectMeta:   metav1.ObjectMeta{Namespace: "ns", Name: name + "-restart", UID: "cmd-uid"},
				Action:       string(bus.RestartJobAction),
				TargetObject: &metav1.OwnerReference{Kind: "Job", Name: name},
			}
			if _, err := f.vc.BusV1alpha1().Commands("ns").Create(context.Background(), cmd, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			failed := !failFirst
			f.vc.PrependReactor("update", "jobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if a.GetSubresource() == "status" && !failed {
					failed = true
					return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "batch.volcano.sh", Resource: "jobs"}, name, nil)
				}
				return false, nil, nil
			})
			key := "ns/" + name
			copyOf := func() request {
				return request{Request: state.Request{Event: bus.CommandIssuedEvent, Action: bus.RestartJobAction}, command: kit.RefOf(cmd)}
			}
			first := copyOf()
			err := f.c.reconcile(context.Background(), key, first)
			if failFirst {
				if err == nil {
					t.Fatal("the first try succeeded, though its status write was refused")
				}
				// Its retry finds the Command gone, and runs it: the take was its own.
				err = f.c.reconcile(context.Background(), key, first)
			}
			if err != nil {
				t.Fatal(err)
			}
			got, _ := f.vc.BatchV1alpha1().Jobs("ns").Get(context.Background(), name, metav1.GetOptions{})
			if got.Status.State.Phase != batch.Restarting || got.Status.RetryCount != 1 {
				t.Fatalf("after the Command: %s, retry %d; want Restarting, retry 1 (events %q)", got.Status.State.Phase, got.Status.RetryCount, f.recorded())
			}
			// The old pods go; a sync takes the Job on to Pending.
			for _, p := range pods {
				if err := f.cache.Owned(cache.Pods).Indexer().Delete(p); err != nil {
					t.Fatal(err)
				}
			}
			f.cacheJob(t, got)
			if err := f.c.reconcile(context.Background(), key, request{Request: state.Request{Event: bus.OutOfSyncEvent}}); err != nil {
				t.Fatal(err)
			}
			got, _ = f.vc.BatchV1alpha1().Jobs("ns").Get(context.Background(), name, metav1.GetOptions{})
			f.cacheJob(t, got)
			if got.Status.State.Phase != batch.Pending {
				t.Fatalf("after the old pods went: %s, want Pending", got.Status.State.Phase)
			}
			// Two more copies of the same Command arrive.
			for range 2 {
				if err := f.c.reconcile(context.Background(), key, copyOf()); err != nil {
					t.Fatal(err)
				}
			}
			got, _ = f.vc.BatchV1alpha1().Jobs("ns").Get(context.Background(), name, metav1.GetOptions{})
			if got.Status.RetryCount != 1 || got.Status.State.Phase != batch.Pending {
				t.Errorf("after two more copies of the Command: %s, retry %d; want Pending, retry 1", got.Status.State.Phase, got.Status.RetryCount)
			}
		})
	}
}
