package podgroup

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringfire/ringfire/internal/promreg"
)

type metrics struct {
	created prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		created: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ringfire_podgroup_created_total", Help: "PodGroups this replica created for pods that had none.",
		}),
	}
	if err := promreg.Register(reg, m.created); err != nil {
		return nil, fmt.Errorf("podgroup metrics: %w", err)
	}
	return m, nil
}
