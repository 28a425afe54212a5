package shard

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringfire/ringfire/internal/promreg"
)

type managerMetrics struct {
	ringSlots    prometheus.Gauge
	members      prometheus.Gauge
	owned        prometheus.Gauge
	assigned     prometheus.Gauge
	orphaned     prometheus.Gauge
	handovers    *prometheus.CounterVec
	release      prometheus.Histogram
	acquireLag   prometheus.Histogram
	drainTimeout prometheus.Counter
}

func newManagerMetrics(reg prometheus.Registerer) (*managerMetrics, error) {
	m := &managerMetrics{
		ringSlots: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ringfire_ring_slots", Help: "Slots of the ring (its fixed slot count), once this replica has read the ring.",
		}),
		members: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ringfire_ring_members", Help: "Members of the ring as this replica sees them.",
		}),
		owned: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ringfire_slots_owned", Help: "Slots this replica holds.",
		}),
		assigned: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ringfire_slots_assigned", Help: "Slots the assignment gives this replica: what it should hold once the ring settles.",
		}),
		orphaned: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ringfire_slots_orphaned", Help: "Slots no member holds, as this replica sees the ring.",
		}),
		handovers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ringfire_slot_handovers_total", Help: "Slots this replica acquired or released.",
		}, []string{"direction"}),
		release: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ringfire_slot_release_duration_seconds",
			Help:    "From deciding to hand slots over to their keys deleted: draining in-flight work plus the delete.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}),
		acquireLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ringfire_slot_acquire_duration_seconds",
			Help:    "From a slot becoming free (or assigned here) to this replica holding it.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}),
		drainTimeout: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ringfire_slot_drain_timeouts_total", Help: "Handovers whose in-flight work outlived the drain timeout and was cancelled.",
		}),
	}
	if err := promreg.Register(reg, m.ringSlots, m.members, m.owned, m.assigned, m.orphaned, m.handovers, m.release, m.acquireLag, m.drainTimeout); err != nil {
		return nil, fmt.Errorf("shard metrics: %w", err)
	}
	return m, nil
}
