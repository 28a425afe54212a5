package kit

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// ByController indexes Jobs by the UID of the object that controls them (a CronJob, a
// JobFlow): one index over the replica's Job cache serves every controller that makes Jobs.
const ByController = "controller-uid"

// controllerIndex is the ByController index function.
func controllerIndex(obj any) ([]string, error) {
	if job, ok := obj.(*batch.Job); ok {
		if ref := metav1.GetControllerOf(job); ref != nil {
			return []string{string(ref.UID)}, nil
		}
	}
	return nil, nil
}

// Indexed is what AddIndex needs of an informer.
type Indexed interface {
	AddIndexers(toolscache.Indexers) error
	GetIndexer() toolscache.Indexer
}

// AddIndex adds the index name to inf unless it has it already (controllers share informers).
// inf must not have started.
func AddIndex(inf Indexed, name string, fn toolscache.IndexFunc) error {
	if _, ok := inf.GetIndexer().GetIndexers()[name]; ok {
		return nil
	}
	if err := inf.AddIndexers(toolscache.Indexers{name: fn}); err != nil {
		return fmt.Errorf("index %s: %w", name, err)
	}
	return nil
}

// IndexJobsByController adds ByController to jobs.
func IndexJobsByController(jobs JobSource) error {
	return AddIndex(jobs, ByController, controllerIndex)
}

// JobsControlledBy returns the Jobs of namespace whose controller has uid, from jobs indexed
// with IndexJobsByController.
func JobsControlledBy(jobs JobSource, namespace string, uid types.UID) ([]*batch.Job, error) {
	objs, err := jobs.GetIndexer().ByIndex(ByController, string(uid))
	if err != nil {
		return nil, fmt.Errorf("jobs controlled by %s/%s: %w", namespace, uid, err)
	}
	out := make([]*batch.Job, 0, len(objs))
	for _, obj := range objs {
		if job, ok := obj.(*batch.Job); ok && job.Namespace == namespace {
			out = append(out, job)
		}
	}
	return out, nil
}
