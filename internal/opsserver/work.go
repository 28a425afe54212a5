package opsserver

import (
	"cmp"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// The status page reads the replica's work from its own metrics registry, by
// the names dashboards use: one dispatcher per controller, labelled name.
const (
	metricDepth     = "workqueue_depth"
	metricWork      = "workqueue_work_duration_seconds" // a histogram: its count is the reconciles
	metricErrors    = "ringfire_workqueue_errors_total"
	metricGiveUps   = "ringfire_workqueue_give_ups_total"
	metricJobs      = "ringfire_jobs"                     // a gauge by phase and queue, of the Jobs of the slots held here
	metricPolicies  = "ringfire_admission_policy_missing" // 1 by policy, for each missing (internal/policycheck)
	labelPolicy     = "policy"
	labelController = "name"
	labelPhase      = "phase"
	minRateWindow   = time.Second // a rate over less than this is not worth showing
)

// controllerOrder lists the controllers in the order the page shows them;
// others follow by name.
var controllerOrder = []string{"job", "queue", "podgroup", "cronjob", "jobflow", "jobtemplate", "batchjob", "scheduler"}

// phaseOrder lists Job phases as a Job lives through them: the running ones,
// then the final ones. Others follow by name.
var phaseOrder = []string{"Pending", "Running", "Restarting", "Completing", "Aborting", "Terminating",
	"Completed", "Aborted", "Terminated", "Failed"}

// finalPhases are the phases a Job does not leave.
var finalPhases = map[string]bool{"Completed": true, "Aborted": true, "Terminated": true, "Failed": true}

// controllerWork is one controller's line on the page.
type controllerWork struct {
	Name       string
	Depth      float64 // keys waiting in its queue
	Reconciles float64 // since the replica started
	// PerSecond is the reconcile rate over RateWindow seconds; nil until the
	// page has been asked for twice, minRateWindow apart.
	PerSecond *float64 `json:",omitempty"`
	Errors    float64
	GiveUps   float64
}

// phaseCount is the number of Jobs in one phase, over every queue.
type phaseCount struct {
	Phase string
	Jobs  int
	Final bool
}

// workSample is what one gather of the registry found.
type workSample struct {
	at          time.Time
	controllers []controllerWork
	jobs        []phaseCount
	jobsKnown   bool // the registry has the Jobs gauge at all
	// policiesMissing are the admission policies and bindings ringfire relies on that the
	// API server does not have, by <Kind>/<name>, sorted.
	policiesMissing []string
}

// readWork reads the controllers' work and the Jobs by phase out of
// gathered metric families.
func readWork(families []*dto.MetricFamily, at time.Time) workSample {
	byName := map[string]*controllerWork{}
	line := func(name string) *controllerWork {
		if byName[name] == nil {
			byName[name] = &controllerWork{Name: name}
		}
		return byName[name]
	}
	phases := map[string]float64{}
	s := workSample{at: at}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			switch f.GetName() {
			case metricDepth:
				line(label(m, labelController)).Depth += m.GetGauge().GetValue()
			case metricWork:
				line(label(m, labelController)).Reconciles += float64(m.GetHistogram().GetSampleCount())
			case metricErrors:
				line(label(m, labelController)).Errors += m.GetCounter().GetValue()
			case metricGiveUps:
				line(label(m, labelController)).GiveUps += m.GetCounter().GetValue()
			case metricJobs:
				s.jobsKnown = true
				phases[label(m, labelPhase)] += m.GetGauge().GetValue()
			case metricPolicies:
				if m.GetGauge().GetValue() > 0 {
					s.policiesMissing = append(s.policiesMissing, label(m, labelPolicy))
				}
			}
		}
	}
	slices.Sort(s.policiesMissing)
	for _, c := range byName {
		s.controllers = append(s.controllers, *c)
	}
	slices.SortFunc(s.controllers, func(a, b controllerWork) int {
		return cmp.Or(cmp.Compare(rank(controllerOrder, a.Name), rank(controllerOrder, b.Name)), cmp.Compare(a.Name, b.Name))
	})
	for phase, n := range phases {
		if n > 0 {
			s.jobs = append(s.jobs, phaseCount{Phase: phase, Jobs: int(math.Round(n)), Final: finalPhases[phase]})
		}
	}
	slices.SortFunc(s.jobs, func(a, b phaseCount) int {
		return cmp.Or(cmp.Compare(rank(phaseOrder, a.Phase), rank(phaseOrder, b.Phase)), cmp.Compare(a.Phase, b.Phase))
	})
	return s
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// rank is the place of name in order, or len(order) for a name not listed.
func rank(order []string, name string) int {
	if i := slices.Index(order, name); i >= 0 {
		return i
	}
	return len(order)
}

// workRates turns successive gathers into reconcile rates: each page view
// gathers, and the rate is the change since the gather kept from an earlier
// view, at least minRateWindow before. Between two such gathers the last
// rates are shown again.
type workRates struct {
	gatherer prometheus.Gatherer

	mu     sync.Mutex
	prev   workSample         // the gather rates are measured from
	rates  map[string]float64 // the last rates measured
	window time.Duration      // what they were measured over
}

// sample gathers the registry and returns the work with rates, and the
// window the rates span. A failed gather leaves what it could read.
func (r *workRates) sample(now time.Time) (workSample, time.Duration) {
	var families []*dto.MetricFamily
	if r.gatherer != nil {
		families, _ = r.gatherer.Gather() // a partial gather still has what the page can show
	}
	cur := readWork(families, now)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.prev.at.IsZero() {
		r.prev = cur
	} else if d := now.Sub(r.prev.at); d >= minRateWindow {
		r.rates, r.window = ratesBetween(r.prev, cur, d), d
		r.prev = cur
	}
	for i, c := range cur.controllers {
		if v, ok := r.rates[c.Name]; ok {
			cur.controllers[i].PerSecond = &v
		}
	}
	return cur, r.window
}

// ratesBetween is each controller's reconciles per second from a to b, d
// apart. A controller whose count went down (a restarted registry) counts
// from zero.
func ratesBetween(a, b workSample, d time.Duration) map[string]float64 {
	before := map[string]float64{}
	for _, c := range a.controllers {
		before[c.Name] = c.Reconciles
	}
	rates := make(map[string]float64, len(b.controllers))
	for _, c := range b.controllers {
		delta := c.Reconciles - before[c.Name]
		if delta < 0 {
			delta = c.Reconciles
		}
		rates[c.Name] = delta / d.Seconds()
	}
	return rates
}
