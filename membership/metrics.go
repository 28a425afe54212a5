package membership

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringfire/ringfire/internal/promreg"
)

type metrics struct {
	keepAlive *prometheus.HistogramVec
	fences    prometheus.Counter
	sessions  prometheus.Counter
	joined    prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		keepAlive: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ringfire_etcd_keepalive_duration_seconds",
			Help:    "Round trip of lease keep-alive requests to etcd, by result.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"result"}),
		fences: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ringfire_fencing_events_total",
			Help: "Times this member fenced itself because it could not renew its lease in time, or found it lost.",
		}),
		sessions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ringfire_member_sessions_total",
			Help: "Sessions (lease tenures) this member started in the ring.",
		}),
		joined: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ringfire_member_joined",
			Help: "1 while this member holds a live session in the ring.",
		}),
	}
	if err := promreg.Register(reg, m.keepAlive, m.fences, m.sessions, m.joined); err != nil {
		return nil, fmt.Errorf("membership metrics: %w", err)
	}
	return m, nil
}
