package scheduler

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringfire/ringfire/internal/promreg"
)

type metrics struct {
	active             prometheus.Gauge
	cycle              prometheus.Histogram
	podsBound          prometheus.Counter
	gangsUnschedulable prometheus.Gauge
	bindFailures       *prometheus.CounterVec
	statusFailures     *prometheus.CounterVec
	statusWrites       *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		active: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ringfire_scheduler_active", Help: "1 while the scheduler singleton runs on this replica.",
		}),
		cycle: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ringfire_scheduler_cycle_duration_seconds",
			Help:    "Scheduling cycles: reading the informers, deciding, binding and writing PodGroup statuses.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}),
		podsBound: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ringfire_scheduler_pods_bound_total", Help: "Pods the scheduler bound to nodes.",
		}),
		gangsUnschedulable: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ringfire_scheduler_gangs_unschedulable", Help: "PodGroups the last cycle left waiting with an Unschedulable condition.",
		}),
		bindFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ringfire_scheduler_bind_failures_total",
			Help: "Bindings that failed, by reason: conflict (bound meanwhile), not_found (deleted), cancelled, error.",
		}, []string{"reason"}),
		statusFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ringfire_scheduler_status_write_failures_total",
			Help: "PodGroup status writes that failed, by reason: conflict (changed meanwhile), not_found, cancelled, error.",
		}, []string{"reason"}),
		statusWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ringfire_scheduler_status_writes_total",
			Help: "PodGroup status writes, by cause: decisive (phase, or a condition's type, status or reason), message (a waiting gang's message, after MessageQuiet), awaiting_pods (an admitted gang short of pods, after PodsQuiet), completed (after PodsQuiet), counts (pod counts, after PodsQuiet).",
		}, []string{"cause"}),
	}
	if err := promreg.Register(reg, m.active, m.cycle, m.podsBound, m.gangsUnschedulable, m.bindFailures, m.statusFailures, m.statusWrites); err != nil {
		return nil, fmt.Errorf("scheduler metrics: %w", err)
	}
	return m, nil
}
