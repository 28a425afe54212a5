package cache

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
)

// StripManagedFields drops metadata.managedFields from an object about to
// be cached: the server-side apply bookkeeping, one entry per writer (the
// Job controller, the scheduler's binding, the kubelet's status, ...), often
// the largest part of a pod's metadata. No controller reads it, and a write
// computed from a cached object that lacks it leaves the API server's copy
// alone (an update without managedFields keeps the live ones). It changes obj
// in place: the cache's objects are decoded for it and shared with no one yet.
// Anything that is not an object (a tombstone) is left as it is. It is a
// client-go TransformFunc.
func StripManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil && m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// The forms of a cached object (ringfire_cache_objects' label form).
const (
	// FormFull is an object kept as the API server has it (less its
	// managedFields).
	FormFull = "full"
	// FormSummary is an object cut down to what is read of it: a Job of a
	// slot not held (Jobs), a PodGroup counted by queue (QueuePodGroups), a
	// batch/v1 Job ringfire does not manage (SlimBatchJob).
	FormSummary = "summary"
)

var cacheObjectsDesc = prometheus.NewDesc("ringfire_cache_objects",
	"Objects this replica's cache keeps, by resource and form: full (as the API server has them, less managedFields) or summary (the Jobs of slots not held, the cluster-wide PodGroups counted by queue, the batch/v1 Jobs of other controllers).",
	[]string{"resource", "form"}, nil)

// The cluster-wide informers the controllers ask for (CronJobs, JobFlows,
// JobTemplates, BatchJobs) count in ringfire_cache_objects once asked for.
type optionalInformers struct {
	mu   sync.Mutex
	list []optionalInformer
}

type optionalInformer struct {
	resource string
	inf      toolscache.SharedIndexInformer
}

// add records inf under resource, once.
func (o *optionalInformers) add(resource string, inf toolscache.SharedIndexInformer) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, x := range o.list {
		if x.resource == resource {
			return
		}
	}
	o.list = append(o.list, optionalInformer{resource, inf})
}

func (o *optionalInformers) snapshot() []optionalInformer {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]optionalInformer(nil), o.list...)
}

// ObjectsCollector returns the collector of ringfire_cache_objects: at each
// scrape, the length of each of the cache's indexes (the Jobs' split between
// full and summary is kept as they are stored; only the batch/v1 Jobs, when
// their controller runs, are walked to tell the two forms apart).
func (c *Cache) ObjectsCollector() prometheus.Collector { return objectsCollector{c} }

type objectsCollector struct{ c *Cache }

func (o objectsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- cacheObjectsDesc }

func (o objectsCollector) Collect(ch chan<- prometheus.Metric) {
	c := o.c
	emit := func(resource, form string, n int) {
		ch <- prometheus.MustNewConstMetric(cacheObjectsDesc, prometheus.GaugeValue, float64(n), resource, form)
	}
	full, summary := c.jobs.Counts()
	emit("jobs", FormFull, full)
	emit("jobs", FormSummary, summary)
	for _, r := range Owned {
		emit(string(r), FormFull, len(c.owned[r].Indexer().ListKeys()))
	}
	emit("podgroups", FormSummary, len(c.QueuePodGroups().GetStore().ListKeys()))
	emit("queues", FormFull, len(c.Queues().Informer().GetStore().ListKeys()))
	emit("commands", FormFull, len(c.Commands().Informer().GetStore().ListKeys()))
	emit("priorityclasses", FormFull, len(c.PriorityClasses().Informer().GetStore().ListKeys()))
	for _, x := range c.optional.snapshot() {
		if x.resource != "batchjobs" {
			emit(x.resource, FormFull, len(x.inf.GetStore().ListKeys()))
			continue
		}
		var managed, other int
		for _, obj := range x.inf.GetStore().List() {
			if job, ok := obj.(*batchv1.Job); ok && job.Spec.ManagedBy != nil && *job.Spec.ManagedBy == BatchJobManager {
				managed++
			} else {
				other++
			}
		}
		emit(x.resource, FormFull, managed)
		emit(x.resource, FormSummary, other)
	}
}
