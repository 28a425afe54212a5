package opsserver

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/ringfire/ringfire/shard"
)

// statusReport is what the status page draws and /status.json carries: the
// ring as this replica sees it, its readiness, and the work of its
// controllers.
type statusReport struct {
	// shard.Status is embedded so that its fields stay at the top level of
	// /status.json, where readers of earlier versions find them.
	shard.Status
	Ready    bool
	NotReady string `json:",omitempty"` // what the replica waits for, from the Ready func
	// Legend has a line per member, and per holder that is no member any
	// more (it left and is still draining).
	Legend []memberLine
	// Handover are the slots held by one member and assigned to another;
	// Unowned the slots no member holds. Both are empty until the holders
	// are known (Status.Holders).
	Handover, Unowned []int
	Controllers       []controllerWork
	// RateWindowSeconds is the span the controllers' PerSecond rates cover.
	RateWindowSeconds float64 `json:",omitempty"`
	// Jobs are the Jobs of the slots held here by phase, over all queues;
	// JobsMetric says whether the registry has the Jobs gauge at all.
	Jobs       []phaseCount
	JobsMetric bool
	// PoliciesMissing are the admission policies and bindings ringfire relies on that the API
	// server does not have (internal/policycheck), by <Kind>/<name>.
	PoliciesMissing []string `json:",omitempty"`
	Time            time.Time
}

// memberLine is one line of the page's legend.
type memberLine struct {
	ID       string
	Colour   string
	Held     int
	Assigned int
	Member   bool // in the member set; false for a holder that has left
	This     bool // this replica
}

// buildReport puts a Status, the readiness and the work together.
func buildReport(st shard.Status, readyErr error, work workSample, window time.Duration) statusReport {
	rep := statusReport{Status: st, Ready: readyErr == nil, Controllers: work.controllers,
		Jobs: work.jobs, JobsMetric: work.jobsKnown, PoliciesMissing: work.policiesMissing, Time: work.at}
	if readyErr != nil {
		rep.NotReady = readyErr.Error()
	}
	if window > 0 {
		rep.RateWindowSeconds = window.Seconds()
	}
	for s, h := range st.Holders {
		switch a := assigneeOf(st, s); {
		case h == "":
			rep.Unowned = append(rep.Unowned, s)
		case a != h:
			rep.Handover = append(rep.Handover, s)
		}
	}
	rep.Legend = legend(st)
	return rep
}

// legend lists the members in order, then holders that are no members, each
// with the slots it holds and the slots the assignment gives it.
func legend(st shard.Status) []memberLine {
	var ids []string
	ids = append(ids, st.Members...)
	for _, h := range st.Holders {
		if h != "" && !slices.Contains(ids, h) {
			ids = append(ids, h)
		}
	}
	if st.ID != "" && !slices.Contains(ids, st.ID) {
		ids = append(ids, st.ID)
	}
	colours := memberColours(ids)
	lines := make([]memberLine, len(ids))
	index := make(map[string]int, len(ids))
	for i, id := range ids {
		index[id] = i
		lines[i] = memberLine{ID: id, Colour: colours[id], Member: slices.Contains(st.Members, id), This: id == st.ID}
	}
	for _, h := range st.Holders {
		if h != "" {
			lines[index[h]].Held++
		}
	}
	if st.Holders == nil && st.ID != "" {
		lines[index[st.ID]].Held = len(st.Held)
	}
	for _, a := range st.Assignment {
		if i, ok := index[a]; ok {
			lines[i].Assigned++
		}
	}
	return lines
}

// statusPage serves / and /status.json: the ring and the readiness as they
// are, the work as gathered at most a second ago.
type statusPage struct {
	status func() shard.Status
	ready  Readiness
	rates  workRates
	work   workCache
}

func newStatusPage(cfg Config) *statusPage {
	p := &statusPage{status: cfg.Status, ready: cfg.Ready, rates: workRates{gatherer: cfg.Gatherer}}
	p.work = workCache{sample: p.rates.sample, now: time.Now}
	return p
}

func (p *statusPage) report() statusReport {
	var st shard.Status
	if p.status != nil {
		st = p.status()
	}
	var readyErr error
	if p.ready != nil {
		readyErr = p.ready()
	}
	work, window := p.work.get()
	return buildReport(st, readyErr, work, window)
}

func (p *statusPage) serveJSON(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(p.report())
}

func (p *statusPage) serveHTML(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	renderStatus(w, p.report())
}

// renderStatus writes the status page of rep.
func renderStatus(w io.Writer, rep statusReport) {
	colours := map[string]string{}
	for _, l := range rep.Legend {
		colours[l.ID] = l.Colour
	}
	maxJobs := 0
	for _, j := range rep.Jobs {
		maxJobs = max(maxJobs, j.Jobs)
	}
	maxSlots := 1
	for _, l := range rep.Legend {
		maxSlots = max(maxSlots, l.Held, l.Assigned)
	}
	data := pageData{statusReport: rep, Cells: ringCells(rep, colours), MaxJobs: max(maxJobs, 1),
		MaxSlots: maxSlots, Moving: len(rep.Handover) + len(rep.Unowned), MovedWithin: shard.MovedWithin.String()}
	if err := statusTemplate.Execute(w, data); err != nil {
		fmt.Fprintf(w, "status page: %v", err)
	}
}

// pageData is what the template sees.
type pageData struct {
	statusReport
	Cells       []cell
	MaxJobs     int // the longest bar of Jobs by phase
	MaxSlots    int // the longest bar of the legend
	Moving      int // slots being handed over or unowned
	MovedWithin string
}

var statusTemplate = template.Must(template.New("status").Funcs(template.FuncMap{
	"pct": func(n, of int) string { return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(max(of, 1))) },
	"num": func(f float64) string {
		if f == float64(int64(f)) {
			return fmt.Sprintf("%d", int64(f))
		}
		return fmt.Sprintf("%.1f", f)
	},
	"rate": func(f *float64) string {
		if f == nil {
			return "–"
		}
		return fmt.Sprintf("%.1f", *f)
	},
}).Parse(statusHTML))
