package job

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringfire/ringfire/internal/promreg"
)

type metrics struct {
	transitions    *prometheus.CounterVec
	podsCreated    prometheus.Counter
	podsDeleted    prometheus.Counter
	createsRefused prometheus.Counter
	statusWrites   *prometheus.CounterVec
	statusDeferred prometheus.Counter
}

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
			Help: "Pod and PodGroup creates of the Job controller answered AlreadyExists: each a write the API server paid for in vain.",
		}),
		statusWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ringfire_job_status_writes_total",
			Help: "Job status writes, by kind: phase (a new phase, reason or other state) or counts (pod counts only).",
		}, []string{"kind"}),
		statusDeferred: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ringfire_job_status_writes_deferred_total",
			Help: "Count-only Job status changes held back by --status-coalesce, to be merged into a later write.",
		}),
	}
	if err := promreg.Register(reg, m.transitions, m.podsCreated, m.podsDeleted, m.createsRefused, m.statusWrites, m.statusDeferred); err != nil {
		return nil, fmt.Errorf("job metrics: %w", err)
	}
	return m, nil
}
