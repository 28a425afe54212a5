package adversarytest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/ringfire/ringfire/e2e/procs"
	"github.com/ringfire/ringfire/shard"
)

// slotOf is the slot of key in the suite's ring.
func slotOf(key string) int { return shard.SlotOf(key, slots) }

// waitRing waits up to limit until the world's current replicas share every
// slot as assigned.
func waitRing(w *world, limit time.Duration) error {
	return procs.WaitRing(context.Background(), w.fleet.Replicas(), limit)
}

// count counts the objects of resource in ns that selector selects ("" for
// all) from the API server's cache, as a table of names, so that objects of
// megabytes are not sent to count them.
func (w *world) count(ns string, client rest.Interface, resource, selector string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw, err := client.Get().Namespace(ns).Resource(resource).Param("labelSelector", selector).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").
		Param("includeObject", "None").Param("resourceVersion", "0").DoRaw(ctx)
	if err != nil {
		return 0, err
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		return 0, err
	}
	return len(table.Rows), nil
}

// watchPodGroups calls see with every PodGroup of ns as it stands now, then
// with every one added or changed, until the test ends.
func watchPodGroups(t testing.TB, vc vcclient.Interface, ns string, see func(*scheduling.PodGroup)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	pgs := vc.SchedulingV1beta1().PodGroups(ns)
	list, err := pgs.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		see(&list.Items[i])
	}
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &toolscache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return pgs.Watch(ctx, o) },
	})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for ev := range rw.ResultChan() {
			if pg, ok := ev.Object.(*scheduling.PodGroup); ok {
				see(pg)
			}
		}
	}()
	t.Cleanup(rw.Stop)
}
