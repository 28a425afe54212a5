package cache

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
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

// SlimPod cuts a pod of a held slot down to what the Job controllers read of
// it, in place (as StripManagedFields, on an object decoded for the cache):
// all of its metadata but the managed fields, its status but the containers'
// images, resources and mounts, and of its spec the node, scheduler, restart
// policy, hostname, subdomain and priority, and the names and restart
// policies of its init containers (a batch/v1 Job tells sidecars by them).
// The rest of the spec (containers, volumes, affinity, tolerations, ...) is
// most of a pod's size: at 100,000 pods it was 270 of one replica's 740 MB
// of live heap. Nothing reads it from the cache: pods are created from their
// Job's template, deleted by name and UID, and patched, never updated from a
// cached copy.
func SlimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return StripManagedFields(obj)
	}
	pod.ManagedFields = nil
	spec := &pod.Spec
	inits := spec.InitContainers // cut in place: a second cut (a list page's pod, then its store) allocates nothing
	for i, c := range inits {
		inits[i] = corev1.Container{Name: c.Name, RestartPolicy: c.RestartPolicy}
	}
	*spec = corev1.PodSpec{
		InitContainers:    inits,
		RestartPolicy:     spec.RestartPolicy,
		NodeName:          spec.NodeName,
		Hostname:          spec.Hostname,
		Subdomain:         spec.Subdomain,
		SchedulerName:     spec.SchedulerName,
		PriorityClassName: spec.PriorityClassName,
		Priority:          spec.Priority,
	}
	slimStatuses(pod.Status.InitContainerStatuses)
	slimStatuses(pod.Status.ContainerStatuses)
	pod.Status.EphemeralContainerStatuses = nil
	return pod, nil
}

// slimStatuses keeps of each container status its name, state, last state,
// readiness and restarts: what the Job controllers' policies read.
func slimStatuses(statuses []corev1.ContainerStatus) {
	for i, s := range statuses {
		statuses[i] = corev1.ContainerStatus{
			Name:                 s.Name,
			State:                s.State,
			LastTerminationState: s.LastTerminationState,
			Ready:                s.Ready,
			RestartCount:         s.RestartCount,
			Started:              s.Started,
		}
	}
}

// The forms of a cached object (ringfire_cache_objects' label form).
const (
	// FormFull is an object kept as the API server has it (less its
	// managedFields).
	FormFull = "full"
	// FormSummary is an object cut down to what is read of it: a Job of a
	// slot not held (Jobs), a pod of a held slot (SlimPod), a PVC, Service,
	// ConfigMap or NetworkPolicy of a held slot (cut.go: its metadata, and a
	// Job's hosts ConfigMap its data), a PodGroup counted by queue
	// (QueuePodGroups), a batch/v1 Job ringfire does not manage
	// (SlimBatchJob).
	FormSummary = "summary"
)

var cacheObjectsDesc = prometheus.NewDesc("ringfire_cache_objects",
	"Objects this replica's cache keeps, by resource and form: full (as the API server has them, less managedFields) or summary (the Jobs of slots not held, the pods of held slots less the spec the controllers do not read, the PVCs, Services, ConfigMaps and NetworkPolicies of held slots as their metadata, the cluster-wide PodGroups counted by queue, the batch/v1 Jobs of other controllers).",
	[]string{"resource", "form"}, nil)

var foreignObjectsDesc = prometheus.NewDesc("ringfire_cache_foreign_objects",
	"Objects of the held slots' caches, by resource, kept as stubs because their controller is no Job the cache knows by UID: objects someone else labelled with a slot, or objects of a Job not in the cache yet.",
	[]string{"resource"}, nil)

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

func (o objectsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- cacheObjectsDesc
	ch <- foreignObjectsDesc
}

func (o objectsCollector) Collect(ch chan<- prometheus.Metric) {
	c := o.c
	emit := func(resource, form string, n int) {
		ch <- prometheus.MustNewConstMetric(cacheObjectsDesc, prometheus.GaugeValue, float64(n), resource, form)
	}
	full, summary := c.jobs.Counts()
	emit("jobs", FormFull, full)
	emit("jobs", FormSummary, summary)
	for _, r := range Owned {
		form := FormSummary // SlimPod, cut.go
		if r == PodGroups {
			form = FormFull // a known Job's own whole; a foreign one is a stub, counted below
		}
		emit(string(r), form, len(c.owned[r].Indexer().ListKeys()))
		ch <- prometheus.MustNewConstMetric(foreignObjectsDesc, prometheus.GaugeValue, float64(c.owned[r].ForeignObjects()), string(r))
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
