package job

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/ringfire/ringfire/controllers/job/plan"
	"github.com/ringfire/ringfire/internal/promreg"
)

type metrics struct {
	transitions    *prometheus.CounterVec
	podsCreated    prometheus.Counter
	podsDeleted    prometheus.Counter
	createsRefused prometheus.Counter
	statusWrites   *prometheus.CounterVec
	statusDeferred prometheus.Counter
	commands       *prometheus.CounterVec
	early          prometheus.Counter
	toRunning      prometheus.Histogram
	toEnd          *prometheus.HistogramVec
}

// Job latencies are measured from creation, both stored at whole seconds:
// the buckets start at a second.
var (
	runningBuckets    = []float64{1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600}
	completionBuckets = []float64{10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400, 259200, 604800}
)

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ringfire_job_phase_transitions_total", Help: "Job phase transitions this replica wrote, by new phase.",
		}, []string{"phase"}),
		podsCreated: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ringfire_job_pods_created_total", Help: "Pods the Job controller created.",
		}),
		podsDeleted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ringfire_job_pods_deleted_total", Help: "Pods the Job controller deleted.",
		}),
		createsRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ringfire_job_creates_refused_total",
			Help: "Pod, PodGroup and PVC creates of the Job controller answered AlreadyExists: each a write the API server paid for in vain.",
		}),
		statusWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ringfire_job_status_writes_total",
			Help: "Job status writes, by kind: phase (a new phase, reason or other state) or counts (pod counts only).",
		}, []string{"kind"}),
		statusDeferred: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ringfire_job_status_writes_deferred_total",
			Help: "Count-only Job status changes held back by --status-coalesce, to be merged into a later write.",
		}),
		early: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ringfire_job_early_reconciles_total",
			Help: "Reconciles of a Job whose slot's pods were still being listed after a gain, with the Job's own pods read from the API server.",
		}),
		commands: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ringfire_job_commands_taken_total",
			Help: "Job Commands this replica took (deleted and ran), by action; an action no Job knows counts as Unknown.",
		}, []string{"action"}),
		toRunning: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ringfire_job_running_seconds",
			Help:    "From a Job's creation to its first Running phase, observed once per Job by the replica that wrote the phase.",
			Buckets: runningBuckets,
		}),
		toEnd: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ringfire_job_completion_seconds",
			Help:    "From a Job's creation to a final phase (Completed, Failed, Aborted, Terminated), by phase, observed by the replica that wrote the phase.",
			Buckets: completionBuckets,
		}, []string{"phase"}),
	}
	// Every series of a known label value exists from the start, so that
	// rate() and alerts see 0 rather than nothing.
	for _, a := range jobActions {
		m.commands.WithLabelValues(string(a))
	}
	for _, phase := range []batch.JobPhase{batch.Completed, batch.Failed, batch.Aborted, batch.Terminated} {
		m.toEnd.WithLabelValues(string(phase))
	}
	if err := promreg.Register(reg, m.transitions, m.podsCreated, m.podsDeleted, m.createsRefused, m.statusWrites, m.statusDeferred,
		m.commands, m.early, m.toRunning, m.toEnd); err != nil {
		return nil, fmt.Errorf("job metrics: %w", err)
	}
	return m, nil
}

// commandTaken counts a Command taken, its action bounded to those a Job knows.
func (m *metrics) commandTaken(action bus.Action) {
	if !knownAction(action) {
		action = "Unknown"
	}
	m.commands.WithLabelValues(string(action)).Inc()
}

// phaseWritten counts a phase transition the API server accepted, and times
// the Job's first Running phase and its final ones from its creation. It is
// called once per written transition: the write carries the resourceVersion
// read, so a transition lands once however often it is tried, and only a
// write that landed is counted. before is the status the transition was
// decided on.
func (m *metrics) phaseWritten(job *batch.Job, before *batch.JobStatus, phase batch.JobPhase, at time.Time) {
	m.transitions.WithLabelValues(string(phase)).Inc()
	since := at.Sub(job.CreationTimestamp.Time).Seconds()
	if job.CreationTimestamp.IsZero() || since < 0 {
		return // no creation time to measure from (objects made in tests)
	}
	switch {
	case phase == batch.Running && plan.RunningSince(before) == nil:
		m.toRunning.Observe(since)
	case finalPhase(phase):
		m.toEnd.WithLabelValues(string(phase)).Observe(since)
	}
}

// finalPhase reports whether phase ends a Job's run: the phases
// ringfire_job_completion_seconds times.
func finalPhase(phase batch.JobPhase) bool {
	return plan.Finished(phase) || phase == batch.Aborted
}
