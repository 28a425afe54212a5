package guard

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/ringfire/ringfire/internal/promreg"
)

// panics counts the panics recovered here, by component: the controller or
// cache whose handler or transform panicked, or "client-go" for one that only
// client-go's own recover saw (ContainClientGo). It is the process's: the
// handlers run on client-go's goroutines, where no registry of a replica is
// at hand, and a process runs one replica.
var panics = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "ringfire_handler_panics_total",
	Help: "Panics recovered in informer event handlers and transforms (which client-go would re-panic, ending the process), by component.",
}, []string{"component"})

// ClientGo is the component of the panics client-go's own recover saw.
const ClientGo = "client-go"

// Register registers ringfire_handler_panics_total on reg (nil: nowhere).
// The counter is the process's, so registering it on a second registry shows
// the same counts there.
func Register(reg prometheus.Registerer) error {
	// Shown from the start, at 0, so that an alert on its rate has a series.
	panics.WithLabelValues(ClientGo)
	return promreg.Register(reg, panics)
}

// Panics reports how many panics were recovered for component: for tests.
func Panics(component string) float64 {
	var m dto.Metric
	_ = panics.WithLabelValues(component).Write(&m)
	return m.GetCounter().GetValue()
}
