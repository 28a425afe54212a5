package queue

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// byQueue indexes PodGroups by the queue they name.
const byQueue = "queue"

// queueOfPodGroup is the byQueue index function.
func queueOfPodGroup(obj any) ([]string, error) {
	pg, ok := obj.(*scheduling.PodGroup)
	if !ok {
		return nil, fmt.Errorf("index %s: %T is not a PodGroup", byQueue, obj)
	}
	return []string{pg.Spec.Queue}, nil
}

// slimPodGroup is the informer's transform: it keeps only what counting needs (identity, queue,
// phase), so that watching every PodGroup of the cluster costs a few hundred bytes apiece
// instead of the whole object.
func slimPodGroup(obj any) (any, error) {
	pg, ok := obj.(*scheduling.PodGroup)
	if !ok {
		return obj, nil // a tombstone or another type: leave it alone
	}
	return &scheduling.PodGroup{
		ObjectMeta: metav1.ObjectMeta{
			Name: pg.Name, Namespace: pg.Namespace, UID: pg.UID, ResourceVersion: pg.ResourceVersion,
		},
		Spec:   scheduling.PodGroupSpec{Queue: pg.Spec.Queue},
		Status: scheduling.PodGroupStatus{Phase: pg.Status.Phase},
	}, nil
}

// countPodGroups counts the PodGroups of the named queue in the indexer.
func countPodGroups(indexer toolscache.Indexer, queue string) (Counts, error) {
	objs, err := indexer.ByIndex(byQueue, queue)
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
