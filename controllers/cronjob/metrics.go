package cronjob

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringfire/ringfire/internal/promreg"
)

type metrics struct {
	created prometheus.Counter
	deleted prometheus.Counter
	missed  *prometheus.CounterVec
	skew    prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		created: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ringfire_cronjob_jobs_created_total", Help: "Jobs the CronJob controller created.",
		}),
		deleted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ringfire_cronjob_jobs_deleted_total", Help: "Jobs the CronJob controller deleted: beyond the history limits, or replaced (concurrencyPolicy Replace).",
		}),
		missed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ringfire_cronjob_missed_schedules_total",
			Help: "Schedule times no Job was started for, by reason: starting_deadline (too late), forbid (a Job still ran; counted once per time, which may still start later), superseded (an older unmet time: only the latest starts).",
		}, []string{"reason"}),
		skew: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ringfire_cronjob_job_creation_skew_seconds",
			Help:    "Time from a Job's scheduled time to its creation by the CronJob controller.",
			Buckets: []float64{0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300},
		}),
	}
	for _, reason := range []string{missedDeadline, missedForbid, missedSuperseded} {
		m.missed.WithLabelValues(reason) // a series from the start: rate() and alerts see 0, not nothing
	}
	if err := promreg.Register(reg, m.created, m.deleted, m.missed, m.skew); err != nil {
		return nil, fmt.Errorf("cronjob metrics: %w", err)
	}
	return m, nil
}
