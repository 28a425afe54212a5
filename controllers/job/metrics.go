package job

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	transitions *prometheus.CounterVec
	podsCreated prometheus.Counter
	podsDeleted prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
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
	}
	if reg != nil {
		reg.MustRegister(m.transitions, m.podsCreated, m.podsDeleted)
	}
	return m
}
