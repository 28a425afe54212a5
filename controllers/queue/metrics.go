package queue

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	commands     *prometheus.CounterVec
	transitions  *prometheus.CounterVec
	statusWrites prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		commands: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ringfire_queue_commands_taken_total", Help: "Queue Commands this replica took (deleted and ran), by action.",
		}, []string{"action"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ringfire_queue_state_transitions_total", Help: "Queue state changes this replica wrote, by new state.",
		}, []string{"state"}),
		statusWrites: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ringfire_queue_status_writes_total", Help: "Queue status updates this replica wrote (state or PodGroup counts).",
		}),
	}
	if reg == nil {
		return m, nil
	}
	all := []prometheus.Collector{m.commands, m.transitions, m.statusWrites}
	for i, c := range all {
		if err := reg.Register(c); err != nil {
			for _, done := range all[:i] {
				reg.Unregister(done)
			}
			return nil, err
		}
	}
	return m, nil
}
