package cache

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/shard"
)

// The workload metrics count, at each scrape, the Jobs and PodGroups of the
// slots this replica holds, from what the cache keeps anyway: summed over the
// replicas they are the cluster's. Their labels are bounded: phase is one of
// a fixed set (anything else counts as Unknown), and queue is the name of a
// Queue that exists (a Job or PodGroup naming none counts under queue="").

var (
	jobsDesc = prometheus.NewDesc("ringfire_jobs",
		`Volcano Jobs of the slots this replica holds, by status.state.phase and spec.queue (queue="" when it names no existing Queue).`,
		[]string{"phase", "queue"}, nil)
	jobsAgeDesc = prometheus.NewDesc("ringfire_jobs_phase_age_seconds",
		"For each phase a Job passes through, the time since the oldest of this replica's Jobs in it entered it; 0 when none is in it.",
		[]string{"phase"}, nil)
	podGroupsDesc = prometheus.NewDesc("ringfire_podgroups",
		`PodGroups of the slots this replica holds (the slot of their namespace/name), by status.phase and spec.queue (queue="" when it names no existing Queue).`,
		[]string{"phase", "queue"}, nil)
)

// jobPhases are the phases a Job can be in; passing are those it leaves by
// itself, which the age gauge watches.
var (
	jobPhases = map[batch.JobPhase]bool{
		batch.Pending: true, batch.Aborting: true, batch.Aborted: true, batch.Running: true,
		batch.Restarting: true, batch.Completing: true, batch.Completed: true,
		batch.Terminating: true, batch.Terminated: true, batch.Failed: true,
	}
	passingPhases = []batch.JobPhase{batch.Pending, batch.Aborting, batch.Running, batch.Restarting,
		batch.Completing, batch.Terminating}
	podGroupPhases = map[scheduling.PodGroupPhase]bool{
		scheduling.PodGroupPending: true, scheduling.PodGroupRunning: true, scheduling.PodGroupUnknown: true,
		scheduling.PodGroupInqueue: true, scheduling.PodGroupCompleted: true,
	}
)

// defaultQueue is the queue of a Job or PodGroup that names none, as
// Volcano's admission defaults it.
const defaultQueue = "default"

// WorkloadCollector returns the collector of the workload metrics:
// ringfire_jobs, ringfire_jobs_phase_age_seconds and ringfire_podgroups.
func (c *Cache) WorkloadCollector() prometheus.Collector { return workload{c} }

type workload struct{ c *Cache }

func (w workload) Describe(ch chan<- *prometheus.Desc) {
	ch <- jobsDesc
	ch <- jobsAgeDesc
	ch <- podGroupsDesc
}

// phaseQueue is a pair of label values.
type phaseQueue struct{ phase, queue string }

func (w workload) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	held := w.c.jobs.heldKeys()
	queues := w.queueLabels()

	jobs := map[phaseQueue]int{}
	oldest := map[batch.JobPhase]time.Time{}
	for _, obj := range w.c.jobs.GetIndexer().List() {
		job, ok := obj.(*batch.Job)
		if !ok || !held(job.Namespace, job.Name) {
			continue
		}
		phase := job.Status.State.Phase
		switch {
		case phase == "":
			phase = batch.Pending // not reconciled yet
		case !jobPhases[phase]:
			phase = "Unknown"
		}
		jobs[phaseQueue{string(phase), queues(job.Spec.Queue)}]++
		since := job.Status.State.LastTransitionTime.Time
		if since.IsZero() {
			since = job.CreationTimestamp.Time
		}
		if at, ok := oldest[phase]; !ok || since.Before(at) {
			oldest[phase] = since
		}
	}
	for l, n := range jobs {
		ch <- prometheus.MustNewConstMetric(jobsDesc, prometheus.GaugeValue, float64(n), l.phase, l.queue)
	}
	for _, phase := range passingPhases {
		age := 0.0
		if at, ok := oldest[phase]; ok && !at.IsZero() {
			age = max(now.Sub(at).Seconds(), 0)
		}
		ch <- prometheus.MustNewConstMetric(jobsAgeDesc, prometheus.GaugeValue, age, string(phase))
	}

	groups := map[phaseQueue]int{}
	for _, obj := range w.c.QueuePodGroups().GetStore().List() {
		pg, ok := obj.(*scheduling.PodGroup)
		if !ok || !held(pg.Namespace, pg.Name) {
			continue
		}
		phase := pg.Status.Phase
		switch {
		case phase == "":
			phase = scheduling.PodGroupPending
		case !podGroupPhases[phase]:
			phase = scheduling.PodGroupUnknown
		}
		groups[phaseQueue{string(phase), queues(pg.Spec.Queue)}]++
	}
	for l, n := range groups {
		ch <- prometheus.MustNewConstMetric(podGroupsDesc, prometheus.GaugeValue, float64(n), l.phase, l.queue)
	}
}

// queueLabels returns the queue label of a spec.queue: the queue's name if
// the Queue exists, "" if not. It asks the Queue informer once per name.
func (w workload) queueLabels() func(string) string {
	lister := w.c.Queues().Lister()
	seen := map[string]string{}
	return func(queue string) string {
		if queue == "" {
			queue = defaultQueue
		}
		label, ok := seen[queue]
		if !ok {
			if _, err := lister.Get(queue); err == nil {
				label = queue
			}
			seen[queue] = label
		}
		return label
	}
}

// heldKeys returns whether the key "namespace/name" is of a slot held now.
// Without a slot count every key is.
func (j *Jobs) heldKeys() func(namespace, name string) bool {
	if j.slots == nil {
		return func(string, string) bool { return true }
	}
	j.mu.Lock()
	held := make(shard.SlotSet, len(j.held))
	for n := range j.held {
		held[n] = true
	}
	j.mu.Unlock()
	slots := j.slots()
	return func(namespace, name string) bool { return held[shard.SlotOfName(namespace, name, slots)] }
}
