package shard

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringfire/ringfire/internal/promreg"
)

// A Dispatcher's metrics carry client-go's workqueue names, so that
// dashboards made for Kubernetes controllers read them as they are, and the
// label name=<the controller>. What a workqueue has no word for (errors,
// panics, give-ups, coalesced and dropped requests, handlers in flight) is
// ringfire_workqueue_*. docs/dispatcher.md says how each maps on the
// Dispatcher.

// Reasons a request is dropped, the "reason" label of the dropped metric.
const (
	dropNotOwned = "not_owned" // enqueued for a slot not held
	dropSlotLost = "slot_lost" // its slot was lost before or while it ran
	dropStopped  = "stopped"   // the dispatcher stopped
	// dropQuarantined: its key is quarantined (quarantine.go)
	dropQuarantined = "quarantined"
)

// dispatchMetrics are a Dispatcher's metrics, labelled with its name. They
// exist, unregistered, when the config has no Registerer.
type dispatchMetrics struct {
	depth, inFlight prometheus.GaugeFunc
	running         runningHandlers
	adds            prometheus.CounterFunc
	queueLatency    prometheus.Histogram
	handlerDuration prometheus.Histogram
	errors          prometheus.Counter
	panics          prometheus.Counter
	retries         prometheus.Counter
	giveUps         prometheus.Counter
	coalesced       prometheus.Counter
	drops           *prometheus.CounterVec
	dropsBy         map[string]prometheus.Counter
	// quarantined is set when the dispatcher has a Quarantine.
	quarantined prometheus.Collector
}

// latencyBuckets span 100µs to about 7 minutes, for both queue latency
// (first attempts only, so no backoff) and handler duration. client-go's
// workqueue buckets (1ns to 10s) would put a slow Job reconcile in +Inf.
var latencyBuckets = prometheus.ExponentialBuckets(0.0001, 4, 12)

// dispatchGauges are what the gauges read from the Dispatcher at scrape time.
type dispatchGauges struct {
	depth, inFlight func() int
	adds            func() int64 // counted under the dispatcher's lock: no atomic on the hot path
	busy            *busyWorkers
}

func newDispatchMetrics(name string, g dispatchGauges) *dispatchMetrics {
	opts := func(metric, help string) prometheus.Opts {
		return prometheus.Opts{Name: metric, Help: help, ConstLabels: prometheus.Labels{"name": name}}
	}
	histogram := func(metric, help string) prometheus.Histogram {
		o := opts(metric, help)
		return prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: o.Name, Help: o.Help, ConstLabels: o.ConstLabels, Buckets: latencyBuckets,
		})
	}
	counter := func(metric, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts(opts(metric, help)))
	}
	gauge := func(metric, help string, value func() float64) prometheus.GaugeFunc {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts(opts(metric, help)), value)
	}
	m := &dispatchMetrics{
		depth: gauge("workqueue_depth", "Requests waiting for a worker or for a retry.",
			func() float64 { return float64(g.depth()) }),
		inFlight: gauge("ringfire_workqueue_in_flight", "Handlers running.",
			func() float64 { return float64(g.inFlight()) }),
		running: runningHandlers{
			busy: g.busy,
			unfinished: prometheus.NewDesc("workqueue_unfinished_work_seconds",
				"Seconds the running handlers have run so far, summed: work not yet in workqueue_work_duration_seconds. Growing steadily, a handler is stuck.",
				nil, prometheus.Labels{"name": name}),
			longest: prometheus.NewDesc("workqueue_longest_running_processor_seconds",
				"Seconds the longest-running handler has run so far.",
				nil, prometheus.Labels{"name": name}),
		},
		adds: prometheus.NewCounterFunc(prometheus.CounterOpts(opts("workqueue_adds_total",
			"Requests put in a key's mailbox: enqueued, or delayed and due, less those coalesced or dropped. Retries are in workqueue_retries_total.")),
			func() float64 { return float64(g.adds()) }),
		queueLatency: histogram("workqueue_queue_duration_seconds",
			"Time from enqueueing a request (or its delay ending) to the start of its first handler call; retries are not timed again."),
		handlerDuration: histogram("workqueue_work_duration_seconds",
			"Duration of handler calls (reconciles), retries included."),
		errors:    counter("ringfire_workqueue_errors_total", "Handler calls that failed or panicked."),
		panics:    counter("ringfire_workqueue_panics_total", "Handler calls that panicked."),
		retries:   counter("workqueue_retries_total", "Failed requests scheduled for a retry."),
		giveUps:   counter("ringfire_workqueue_give_ups_total", "Requests given up after the last retry failed."),
		coalesced: counter("ringfire_workqueue_coalesced_total", "Requests merged into an equal queued request."),
		drops: prometheus.NewCounterVec(prometheus.CounterOpts(opts("ringfire_workqueue_dropped_total",
			"Requests dropped unhandled, by reason: not_owned (its slot is not held here), slot_lost, stopped.")), []string{"reason"}),
	}
	m.dropsBy = make(map[string]prometheus.Counter)
	for _, reason := range []string{dropNotOwned, dropSlotLost, dropStopped, dropQuarantined} {
		m.dropsBy[reason] = m.drops.WithLabelValues(reason)
	}
	return m
}

func (m *dispatchMetrics) dropped(reason string, n int) {
	if n > 0 {
		m.dropsBy[reason].Add(float64(n))
	}
}

// register registers every metric, or none.
func (m *dispatchMetrics) register(r prometheus.Registerer) error {
	all := []prometheus.Collector{m.depth, m.inFlight, m.running, m.adds, m.queueLatency,
		m.handlerDuration, m.errors, m.panics, m.retries, m.giveUps, m.coalesced, m.drops}
	if m.quarantined != nil {
		all = append(all, m.quarantined)
	}
	return promreg.Register(r, all...)
}

// newQuarantinedGauge is ringfire_keys_quarantined of the dispatcher name.
func newQuarantinedGauge(name string, count func() int) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "ringfire_keys_quarantined",
		Help:        "Keys of the slots this replica holds that are quarantined: their reconcile panicked, went its time budget without progress, or a replica died or ran out of memory while running it. Each is run again when its object changes.",
		ConstLabels: prometheus.Labels{"name": name},
	}, func() float64 { return float64(count()) })
}

// runningHandlers is the collector of the two gauges of running handlers,
// read at one instant per scrape.
type runningHandlers struct {
	busy                *busyWorkers
	unfinished, longest *prometheus.Desc
}

func (r runningHandlers) Describe(ch chan<- *prometheus.Desc) {
	ch <- r.unfinished
	ch <- r.longest
}

func (r runningHandlers) Collect(ch chan<- prometheus.Metric) {
	sum, longest := r.busy.running(time.Now())
	ch <- prometheus.MustNewConstMetric(r.unfinished, prometheus.GaugeValue, sum.Seconds())
	ch <- prometheus.MustNewConstMetric(r.longest, prometheus.GaugeValue, longest.Seconds())
}

// busyWorkers holds, per worker, when its running handler started, or idle
// while it runs none. A start is kept as the time since base, measured on
// the monotonic clock, so that a step of the wall clock does not add to or
// take from a running handler's time. A worker writes only its own entry,
// twice per handler call, without a lock; a scrape reads them all. Each
// entry has a cache line of its own, so that workers on different cores do
// not contend for one.
type busyWorkers struct {
	base  time.Time
	since []paddedTime
}

// idle marks a worker that runs no handler.
const idle = math.MinInt64

type paddedTime struct {
	atomic.Int64
	_ [56]byte
}

func newBusyWorkers(workers int) *busyWorkers {
	b := &busyWorkers{base: time.Now(), since: make([]paddedTime, workers)}
	for i := range b.since {
		b.since[i].Store(idle)
	}
	return b
}

func (b *busyWorkers) start(worker int, at time.Time) { b.since[worker].Store(int64(at.Sub(b.base))) }
func (b *busyWorkers) stop(worker int)                { b.since[worker].Store(idle) }

// running returns, at now, how long the running handlers have run, summed,
// and the longest of them.
func (b *busyWorkers) running(now time.Time) (sum, longest time.Duration) {
	elapsed := now.Sub(b.base)
	for i := range b.since {
		if at := b.since[i].Load(); at != idle {
			d := max(elapsed-time.Duration(at), 0)
			sum += d
			longest = max(longest, d)
		}
	}
	return sum, longest
}
