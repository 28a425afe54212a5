package cache

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/shard"
)

// JobInfo is a Job with the objects it owns that the cache holds. A Job owns
// an object only if the object's controller reference carries the Job's UID:
// a Job deleted and made again under the same name is a new Job, and the
// pods of the earlier one, left for the garbage collector, are not its own
// (Volcano gathers them by name and counts them; ringfire does not).
type JobInfo struct {
	Job *batch.Job
	// Pods by task name, then by pod name.
	Pods     map[string]map[string]*corev1.Pod
	PodGroup *scheduling.PodGroup // nil when none exists yet
	// Foreign are the pods, by name, that a Job of the same name but
	// another UID controls (an earlier Job not yet collected): never
	// counted, and their names are not free for this Job's pods until the
	// garbage collector has deleted them.
	Foreign map[string]*corev1.Pod
}

// TaskOf is the task a pod of a Job belongs to.
func TaskOf(pod *corev1.Pod) string { return pod.Annotations[batch.TaskSpecKey] }

// JobUID returns the UID of the Job at key, held in full or as a summary, and false only when
// the cache has listed the Jobs and holds none at key; before that every key is taken to
// exist, UID unknown ("").
func (c *Cache) JobUID(key string) (string, bool) {
	if !c.jobs.HasSynced() {
		return "", true
	}
	uid, ok := c.jobs.uid(key)
	return string(uid), ok
}

// Job returns the Job at key ("namespace/name") and whether it exists. The
// object is the cache's: copy before changing it. The error wraps
// ErrSummaryOnly when the cache keeps only a summary of it (its slot is not
// held, or not listed since it was gained).
func (c *Cache) Job(key string) (*batch.Job, bool, error) { return c.jobs.Get(key) }

// JobInfo returns the Job at key with its pods by task and its PodGroup, or
// nil when the Job does not exist.
func (c *Cache) JobInfo(key string) (*JobInfo, error) {
	job, ok, err := c.Job(key)
	if err != nil || !ok {
		return nil, err
	}
	pods, err := c.owned[Pods].Indexer().ByIndex(ByJob, key)
	if err != nil {
		return nil, fmt.Errorf("pods of job %s: %w", key, err)
	}
	return c.jobInfo(key, job, pods)
}

// jobInfo is the JobInfo of job, at key, with pods (those filed under key,
// whatever their owner's UID) and the cache's PodGroup.
func (c *Cache) jobInfo(key string, job *batch.Job, pods []any) (*JobInfo, error) {
	info := &JobInfo{Job: job, Pods: map[string]map[string]*corev1.Pod{}}
	for _, obj := range pods {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			continue
		}
		if !ControlledBy(pod, job.UID) {
			if info.Foreign == nil {
				info.Foreign = map[string]*corev1.Pod{}
			}
			info.Foreign[pod.Name] = pod
			continue
		}
		task := TaskOf(pod)
		if info.Pods[task] == nil {
			info.Pods[task] = map[string]*corev1.Pod{}
		}
		info.Pods[task][pod.Name] = pod
	}
	pgs, err := c.owned[PodGroups].Indexer().ByIndex(ByJob, key)
	if err != nil {
		return nil, fmt.Errorf("podgroup of job %s: %w", key, err)
	}
	for _, obj := range pgs {
		pg, ok := obj.(*scheduling.PodGroup)
		if !ok || !ControlledBy(pg, job.UID) {
			continue // an earlier Job's: the garbage collector's
		}
		if c.owned[PodGroups].IsStub(toolscache.MetaObjectToName(pg).String()) {
			// Not one the Job controller may update from: a PodGroup of another name than
			// the Job's, or its own stored before the Job came and being read again.
			continue
		}
		if info.PodGroup == nil || pg.Name == job.Name+"-"+string(job.UID) {
			info.PodGroup = pg
		}
	}
	return info, nil
}

// OwnedBy returns the objects of resource r controlled by the Job at key
// whose UID is uid; those of another Job of that name are left out.
func (c *Cache) OwnedBy(r Resource, key string, uid types.UID) ([]any, error) {
	objs, err := c.owned[r].Indexer().ByIndex(ByJob, key)
	if err != nil {
		return nil, err
	}
	own := objs[:0:0]
	for _, obj := range objs {
		if m, ok := obj.(metav1.Object); ok && ControlledBy(m, uid) {
			own = append(own, obj)
		}
	}
	return own, nil
}

// ControlledBy reports whether obj's controller reference names uid: the
// one test of ownership the controllers use. A name says nothing: a Job
// deleted and made again has the name and not the UID.
func ControlledBy(obj metav1.Object, uid types.UID) bool {
	ref := metav1.GetControllerOfNoCopy(obj)
	return ref != nil && uid != "" && ref.UID == uid
}

// JobsInSlots returns the keys of the Jobs whose slot (among slots slots in
// the ring) is in held.
func (c *Cache) JobsInSlots(held []int, slots int) []string {
	want := shard.NewSlotSet(held)
	var keys []string
	for _, key := range c.jobs.GetIndexer().ListKeys() {
		if want.HasKey(key, slots) {
			keys = append(keys, key)
		}
	}
	return keys
}

// JobKey is the key of the Job that controls obj, if any.
func JobKey(obj any) (string, bool) {
	return keyBy(obj, indexByJob)
}

// BatchJobKey is JobKey for an object a batch/v1 Job controls.
func BatchJobKey(obj any) (string, bool) {
	return keyBy(obj, indexByBatchJob)
}

func keyBy(obj any, index func(any) ([]string, error)) (string, bool) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	keys, _ := index(obj)
	if len(keys) == 0 {
		return "", false
	}
	return keys[0], true
}
