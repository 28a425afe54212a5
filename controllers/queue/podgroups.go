package queue

import (
	"fmt"

	toolscache "k8s.io/client-go/tools/cache"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/cache"
)

// countPodGroups counts the PodGroups of the named queue in the indexer.
func countPodGroups(indexer toolscache.Indexer, queue string) (Counts, error) {
	objs, err := indexer.ByIndex(cache.ByQueue, queue)
	if err != nil {
		return Counts{}, fmt.Errorf("podgroups of queue %s: %w", queue, err)
	}
	var c Counts
	for _, obj := range objs {
		if pg, ok := obj.(*scheduling.PodGroup); ok {
			c.Add(pg.Status.Phase)
		}
	}
	return c, nil
}

// podGroupOf unwraps a PodGroup from an informer event.
func podGroupOf(obj any) (*scheduling.PodGroup, bool) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	pg, ok := obj.(*scheduling.PodGroup)
	return pg, ok
}
