package opsserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringfire/ringfire/shard"
)

// handoverStatus is replica r1's view of a ring of 1,024 slots while r3
// joins r0, r1 and r2: r3 holds the slots r0 and r1 have handed over (moved
// a moment ago), r2 still holds the ones it has not, and three slots are
// unowned between the two.
func handoverStatus() (st shard.Status, handover, unowned, moved []int) {
	const slots = 1024
	before := shard.Assign([]string{"r0", "r1", "r2"}, slots)
	after := shard.Assign([]string{"r0", "r1", "r2", "r3"}, slots)
	st = shard.Status{ID: "r1", Slots: slots, Members: []string{"r0", "r1", "r2", "r3"}, Revision: 42,
		Holders: slices.Clone(before), Assignment: after}
	freed := 0
	for s := range slots {
		switch {
		case after[s] == before[s]:
		case before[s] == "r2":
			handover = append(handover, s)
		case freed < 3:
			st.Holders[s] = ""
			unowned = append(unowned, s)
			freed++
		default:
			st.Holders[s] = "r3"
			moved = append(moved, s)
		}
		if st.Holders[s] == "r1" {
			st.Held = append(st.Held, s)
		}
		if after[s] == "r1" {
			st.Assigned++
		}
	}
	st.Moved = moved
	st.Orphaned = len(unowned)
	return st, handover, unowned, moved
}

func render(rep statusReport) []byte {
	var b bytes.Buffer
	renderStatus(&b, rep)
	return b.Bytes()
}

// The page draws every slot in its holder's colour, a legend line per
// member in the same colour, and marks the slots in motion.
func TestStatusPageDrawsMembersAndSlotsInMotion(t *testing.T) {
	st, handover, unowned, moved := handoverStatus()
	p := readPage(t, render(buildReport(st, nil, workSample{}, 0)))

	if p.cells != st.Slots {
		t.Fatalf("%d slot cells, want %d", p.cells, st.Slots)
	}
	colours := map[string]bool{}
	for _, id := range st.Members {
		colour, ok := p.legend[id]
		if !ok {
			t.Fatalf("no legend line for %s: legend %v", id, p.legend)
		}
		colours[colour] = true
		if n := p.cellsByFill[colour]; n == 0 {
			t.Errorf("no slot of %s's colour %s", id, colour)
		}
	}
	if len(colours) != len(st.Members) {
		t.Errorf("legend colours %v: two members share a colour", p.legend)
	}
	if p.thisMember != "r1" {
		t.Errorf("highlighted legend line %q, want r1", p.thisMember)
	}
	if p.here != len(st.Held) {
		t.Errorf("%d cells marked as held here, want %d", p.here, len(st.Held))
	}
	if want := strconv.Itoa(len(st.Held)); p.held["r1"] != want {
		t.Errorf("legend says r1 holds %s, want %s", p.held["r1"], want)
	}
	if p.handover != len(handover) || p.unowned != len(unowned) || p.moved != len(moved) {
		t.Errorf("marked %d handing over, %d unowned, %d moved; want %d, %d, %d",
			p.handover, p.unowned, p.moved, len(handover), len(unowned), len(moved))
	}
	if got := p.toFills[p.legend["r3"]]; got != len(handover)+len(unowned) {
		t.Errorf("%d slots marked as going to r3, want %d", got, len(handover)+len(unowned))
	}
	if want := strconv.Itoa(len(handover) + len(unowned)); p.moving != want {
		t.Errorf("ring centre says %q, want %s slots in motion", p.moving, want)
	}
	if p.waiting != "" {
		t.Errorf("a ready replica's page says it waits: %q", p.waiting)
	}
}

// A member that left the member set but still holds slots has a line of its
// own, and every one of its slots is being handed over.
func TestStatusPageShowsALeavingHolder(t *testing.T) {
	st := shard.Status{ID: "a", Slots: 8, Members: []string{"a"},
		Holders:    []string{"a", "gone", "a", "gone", "a", "a", "a", "a"},
		Assignment: []string{"a", "a", "a", "a", "a", "a", "a", "a"}}
	rep := buildReport(st, nil, workSample{}, 0)
	if !slices.Equal(rep.Handover, []int{1, 3}) {
		t.Errorf("handover %v, want [1 3]", rep.Handover)
	}
	if len(rep.Legend) != 2 || rep.Legend[1].ID != "gone" || rep.Legend[1].Member || rep.Legend[1].Held != 2 {
		t.Errorf("legend %+v, want a, then gone holding 2 and no member", rep.Legend)
	}
	p := readPage(t, render(rep))
	if p.cellsByFill[p.legend["gone"]] != 2 {
		t.Errorf("%d slots in gone's colour, want 2", p.cellsByFill[p.legend["gone"]])
	}
}

// A settled ring says so; a replica that is not ready says what it waits
// for; a replica that has not read the slot keys draws no slots.
func TestStatusPageReadiness(t *testing.T) {
	st := shard.Status{ID: "a", Slots: 4, Members: []string{"a"}, Held: []int{0, 1, 2, 3}, Assigned: 4,
		Holders: []string{"a", "a", "a", "a"}, Assignment: []string{"a", "a", "a", "a"}}
	if p := readPage(t, render(buildReport(st, nil, workSample{}, 0))); p.moving != "settled" || p.cells != 4 {
		t.Errorf("settled ring: centre %q, %d cells; want settled, 4", p.moving, p.cells)
	}
	waiting := errors.New("the cluster-wide caches have not listed yet")
	st = shard.Status{ID: "a", Slots: 4}
	p := readPage(t, render(buildReport(st, waiting, workSample{}, 0)))
	if p.waiting != "Waiting for: "+waiting.Error() {
		t.Errorf("banner %q, want it to say what the replica waits for", p.waiting)
	}
	if p.cells != 0 || p.legend["a"] == "" {
		t.Errorf("before the first read: %d cells, legend %v; want none and a line for a", p.cells, p.legend)
	}
}

// The controllers' work and the Jobs come from the registry by the names
// dashboards use; reconciles/s is the change between two gathers.
func TestStatusPageWorkFromMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	depth := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricDepth}, []string{"name"})
	work := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: metricWork}, []string{"name"})
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricErrors}, []string{"name"})
	giveUps := prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricGiveUps}, []string{"name"})
	jobs := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricJobs}, []string{"phase", "queue"})
	reg.MustRegister(depth, work, errs, giveUps, jobs)
	for _, name := range []string{"queue", "job"} {
		depth.WithLabelValues(name)
		errs.WithLabelValues(name)
		giveUps.WithLabelValues(name)
	}
	depth.WithLabelValues("job").Set(7)
	errs.WithLabelValues("job").Add(2)
	giveUps.WithLabelValues("queue").Inc()
	jobs.WithLabelValues("Running", "default").Set(3)
	jobs.WithLabelValues("Running", "research").Set(2)
	jobs.WithLabelValues("Pending", "default").Set(1)
	jobs.WithLabelValues("Completed", "default").Set(0)

	rates := workRates{gatherer: reg}
	start := time.Now()
	first, window := rates.sample(start)
	if window != 0 || first.controllers[0].PerSecond != nil {
		t.Errorf("first sample has a rate over %v: %+v", window, first.controllers[0])
	}
	for range 30 {
		work.WithLabelValues("job").Observe(0.01)
	}
	if s, _ := rates.sample(start.Add(minRateWindow / 2)); s.controllers[0].PerSecond != nil {
		t.Errorf("rate over less than %v: %v", minRateWindow, *s.controllers[0].PerSecond)
	}
	s, window := rates.sample(start.Add(2 * time.Second))
	if window != 2*time.Second {
		t.Errorf("rate window %v, want 2s", window)
	}
	p := readPage(t, render(buildReport(shard.Status{ID: "a"}, nil, s, window)))
	wantRows := map[string][]string{
		"job":   {"job", "7", "15.0", "2", "0"},
		"queue": {"queue", "0", "0.0", "0", "1"},
	}
	for name, want := range wantRows {
		if got := p.controllers[name]; !slices.Equal(got, want) {
			t.Errorf("controller %s: %q, want %q", name, got, want)
		}
	}
	if want := map[string]string{"Pending": "1", "Running": "5"}; !equalMaps(p.phases, want) {
		t.Errorf("Jobs by phase %v, want %v", p.phases, want)
	}
	if s.controllers[0].Name != "job" {
		t.Errorf("controllers in order %+v, want job first", s.controllers)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Colours are the same for the same id whatever the other members, unless
// two ids hash to the same colour.
func TestMemberColoursStableAndDistinct(t *testing.T) {
	three := memberColours([]string{"ringfire-0", "ringfire-1", "ringfire-2"})
	four := memberColours([]string{"ringfire-2", "ringfire-3", "ringfire-0", "ringfire-1"})
	seen := map[string]string{}
	for id, c := range four {
		if other, ok := seen[c]; ok {
			t.Errorf("%s and %s share %s", id, other, c)
		}
		seen[c] = id
		if old, ok := three[id]; ok && old != c {
			t.Errorf("%s changed colour from %s to %s when ringfire-3 joined", id, old, c)
		}
	}
	many := make([]string, 2*len(palette))
	for i := range many {
		many[i] = "member-" + strconv.Itoa(i)
	}
	if got := len(memberColours(many)); got != len(many) {
		t.Errorf("%d colours for %d members", got, len(many))
	}
}

// /status.json carries the page's data, with the ring's fields at the top
// level as before.
func TestStatusJSON(t *testing.T) {
	st, handover, _, _ := handoverStatus()
	page := newStatusPage(Config{Gatherer: prometheus.NewRegistry(), Status: func() shard.Status { return st },
		Ready: func() error { return errors.New("fenced") }})
	srv := httptest.NewServer(http.HandlerFunc(page.serveJSON))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/status.json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var got struct {
		Slots, Assigned   int
		Members, Holders  []string
		Held, Handover    []int
		Ready             bool
		NotReady          string
		Legend            []memberLine
		Controllers, Jobs []any
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("status.json %s: %v", body, err)
	}
	if got.Slots != st.Slots || got.Assigned != st.Assigned || !slices.Equal(got.Held, st.Held) ||
		!slices.Equal(got.Members, st.Members) || !slices.Equal(got.Holders, st.Holders) {
		t.Errorf("status.json's ring differs from the Status: %.300s", body)
	}
	if !slices.Equal(got.Handover, handover) || got.Ready || got.NotReady != "fenced" || len(got.Legend) != 4 {
		t.Errorf("status.json: handover %d slots, ready %v (%q), %d legend lines; want %d, false (fenced), 4",
			len(got.Handover), got.Ready, got.NotReady, len(got.Legend), len(handover))
	}
}
