package queue

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringfire/ringfire/internal/promreg"
)

type metrics struct {
	commands     *prometheus.CounterVec
	transitions  *prometheus.CounterVec
	statusWrites prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		commands: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ringfire_queue_commands_taken_total", Help: "Queue Commands this replica took (deleted and ran), by action; an action no Queue knows counts as Unknown.",
		}, []string{"action"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ringfire_queue_state_transitions_total", Help: "Queue state changes this replica wrote, by new state.",
		}, []string{"state"}),
		statusWrites: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ringfire_queue_status_writes_total", Help: "Queue status updates this replica wrote (state or PodGroup counts).",
		}),
	}
	if err := promreg.Register(reg, m.commands, m.transitions, m.statusWrites); err != nil {
		return nil, fmt.Errorf("queue metrics: %w", err)
	}
	return m, nil
}
