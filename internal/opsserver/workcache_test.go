package opsserver

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringfire/ringfire/shard"
)

// testClock is a clock a test moves by hand.
type testClock struct{ nanos atomic.Int64 }

func (c *testClock) now() time.Time                    { return time.Unix(0, c.nanos.Load()) }
func (c *testClock) advance(d time.Duration) time.Time { return time.Unix(0, c.nanos.Add(int64(d))) }

func testPage() *statusPage {
	return newStatusPage(Config{Gatherer: prometheus.NewRegistry(),
		Status: func() shard.Status { return shard.Status{ID: "r0", Slots: 8} },
		Ready:  func() error { return errors.New("joining") }})
}

// 10,000 requests for the status page and /status.json spread over 10
// seconds, 50 at a time, gather the registry at most once a second: 11
// times at most (at 0 s, then once per second after).
func TestStatusPageGathersAtMostOnceASecond(t *testing.T) {
	const requests, span = 10_000, 10 * time.Second
	page := testPage()
	clock := &testClock{}
	clock.advance(time.Hour) // not the zero time
	page.work.now = clock.now
	before := workGathers.Load()

	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range 50 {
		wg.Go(func() {
			for i := next.Add(1); i <= requests; i = next.Add(1) {
				clock.advance(span / requests)
				// Every hundredth request goes through the handlers; the
				// others ask for the report they serve, without drawing it.
				rec := httptest.NewRecorder()
				switch i % 100 {
				case 0:
					page.serveJSON(rec, httptest.NewRequest(http.MethodGet, "/status.json", nil))
				case 1:
					page.serveHTML(rec, httptest.NewRequest(http.MethodGet, "/", nil))
				default:
					page.report()
				}
				if rec.Code != http.StatusOK {
					t.Errorf("request %d: HTTP %d", i, rec.Code)
					return
				}
			}
		})
	}
	wg.Wait()
	gathers := workGathers.Load() - before
	t.Logf("%d requests over %v: %d gathers", requests, span, gathers)
	if gathers < 10 || gathers > 11 {
		t.Errorf("%d gathers for %d requests over %v; want 10 or 11 (one a second)", gathers, requests, span)
	}
}

// Requests that arrive while the registry is gathered wait for the gather
// and share it: one gather for all of them.
func TestStatusRequestsShareTheGatherInFlight(t *testing.T) {
	page := testPage()
	clock := &testClock{} // stands still: no gather goes stale while the requests arrive
	clock.advance(time.Hour)
	page.work.now = clock.now
	release := make(chan struct{})
	inFlight := make(chan struct{})
	sample := page.work.sample
	page.work.sample = func(now time.Time) (workSample, time.Duration) {
		close(inFlight)
		<-release
		return sample(now)
	}
	before := workGathers.Load()
	var wg sync.WaitGroup
	wg.Go(func() { page.report() })
	<-inFlight
	for range 100 {
		wg.Go(func() { page.report() })
	}
	close(release)
	wg.Wait()
	if gathers := workGathers.Load() - before; gathers != 1 {
		t.Errorf("%d gathers for 101 requests during one gather; want 1", gathers)
	}
}

// Over real HTTP at full speed, the gathers stay within one a second of
// the time the requests took, however many requests that is.
func TestStatusPageGathersOverHTTP(t *testing.T) {
	const requests = 1_000
	ln := listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- ServeListeners(ctx, Listeners{Metrics: ln}, Config{Gatherer: prometheus.NewRegistry(),
			Status: func() shard.Status { return shard.Status{ID: "r0", Slots: 8} }})
	}()
	defer func() { cancel(); <-done }()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 20}}
	url := "http://" + ln.Addr().String() + "/status.json"

	before := workGathers.Load()
	start := time.Now()
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range 20 {
		wg.Go(func() {
			for i := next.Add(1); i <= requests; i = next.Add(1) {
				resp, err := client.Get(url)
				if err != nil {
					t.Errorf("GET /status.json: %v", err)
					return
				}
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	gathers := workGathers.Load() - before
	t.Logf("%d requests in %v: %d gathers", requests, took.Round(time.Millisecond), gathers)
	if limit := int64(took/gatherEvery) + 1; gathers > limit {
		t.Errorf("%d gathers in %v; want at most %d (one a second)", gathers, took, limit)
	}
}

// The ring is read fresh for every request, between gathers too: a
// handover shows at once, not a second later.
func TestStatusPageRingIsFresh(t *testing.T) {
	id := "r0"
	page := newStatusPage(Config{Gatherer: prometheus.NewRegistry(), Status: func() shard.Status { return shard.Status{ID: id} }})
	clock := &testClock{} // stands still: one gather serves both requests
	clock.advance(time.Hour)
	page.work.now = clock.now
	before := workGathers.Load()
	first := page.report()
	id = "r1"
	second := page.report()
	if first.ID != "r0" || second.ID != "r1" {
		t.Errorf("reports of ids %q then %q, want r0 then r1", first.ID, second.ID)
	}
	if gathers := workGathers.Load() - before; gathers != 1 {
		t.Errorf("%d gathers for two requests within a second; want 1", gathers)
	}
}
