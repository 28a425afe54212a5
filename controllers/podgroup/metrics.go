package podgroup

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	created prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		created: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ringfire_podgroup_created_total", Help: "PodGroups this replica created for pods that had none.",
		}),
	}
	if reg != nil {
		if err := reg.Register(m.created); err != nil {
			return nil, err
		}
	}
	return m, nil
}
