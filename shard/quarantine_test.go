package shard

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ringfire/ringfire/internal/localetcd"
	"github.com/ringfire/ringfire/internal/validatetest"
)

// quarantineFor starts a Quarantine of member on etcd at endpoint, stopped
// by the returned func (a crash: nothing is cleaned up) or when the test
// ends.
func quarantineFor(t *testing.T, endpoint, member string, edit func(*QuarantineConfig)) (*Quarantine, func()) {
	t.Helper()
	cfg := DefaultQuarantineConfig()
	cfg.Client, cfg.Prefix, cfg.Member = localetcd.ClientForTest(t, endpoint), "/qt", member
	cfg.MemoryBudget, cfg.Check = -1, 10*time.Millisecond
	if edit != nil {
		edit(&cfg)
	}
	q, err := NewQuarantine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); q.Run(ctx) }()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return q, stop
}

// told records OnQuarantine's calls.
type told struct {
	mu      sync.Mutex
	reasons map[string][]string
}

func (r *told) tell(key, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reasons == nil {
		r.reasons = map[string][]string{}
	}
	r.reasons[key] = append(r.reasons[key], reason)
}

func (r *told) of(key string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.reasons[key]...)
}

// markOf reads the mark of key of the "test" dispatcher in etcd.
func markOf(t *testing.T, c *clientv3.Client, key string) (Mark, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, "/qt/quarantine/test/"+key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return Mark{}, false
	}
	var m Mark
	if err := json.Unmarshal(resp.Kvs[0].Value, &m); err != nil {
		t.Fatal(err)
	}
	return m, true
}

// A key whose handler panics is quarantined at once, not retried: its next
// requests are dropped, OnQuarantine is told once, the mark is in etcd and
// the gauge counts it; the other keys run. Release runs it again.
func TestQuarantinePanickingKey(t *testing.T) {
	ring := localetcd.StartForTest(t)
	q, _ := quarantineFor(t, ring.Endpoint(), "r0", nil)
	var boomRuns, okRuns atomic.Int32
	var tell told
	cfg := dispatcherTestConfig(HoldAll{}, func(_ context.Context, key string, _ int) error {
		if key == "ns/boom" {
			boomRuns.Add(1)
			panic("nil map somewhere")
		}
		okRuns.Add(1)
		return nil
	})
	cfg.Quarantine, cfg.OnQuarantine = q, tell.tell
	d := startDispatcher(t, cfg)

	d.Enqueue("ns/boom", 1)
	awaitCondition(t, "the panicking key to be quarantined", func() bool { return len(tell.of("ns/boom")) == 1 })
	for i := range 5 {
		d.Enqueue("ns/boom", i)
		d.Enqueue("ns/ok", i)
	}
	awaitCondition(t, "the other key to run", func() bool { return okRuns.Load() == 5 })
	awaitCondition(t, "the quarantined key's requests to be dropped", func() bool { return d.Len() == 0 })
	if n := boomRuns.Load(); n != 1 {
		t.Errorf("the panicking key ran %d times, want 1 (no retry)", n)
	}
	if got := tell.of("ns/boom"); len(got) != 1 || !strings.Contains(got[0], "nil map somewhere") {
		t.Errorf("OnQuarantine got %q, want one reason naming the panic", got)
	}
	if m, ok := markOf(t, q.cfg.Client, "ns/boom"); !ok || m.Suspect || m.Member != "r0" {
		t.Errorf("mark in etcd: %+v (found %v), want a quarantine mark of r0", m, ok)
	}
	if n := d.quarantinedHere(); n != 1 {
		t.Errorf("ringfire_keys_quarantined = %d, want 1", n)
	}

	if !d.Release("ns/boom") {
		t.Fatal("Release of a quarantined key reported it was not quarantined")
	}
	if _, ok := markOf(t, q.cfg.Client, "ns/boom"); ok {
		t.Error("the mark is still in etcd after Release")
	}
	d.Enqueue("ns/boom", 9)
	awaitCondition(t, "the released key to run again", func() bool { return boomRuns.Load() == 2 })
	awaitCondition(t, "it to be quarantined and told again", func() bool { return len(tell.of("ns/boom")) == 2 })
}

// QuarantineKey, for a panic outside a run (an informer handler's), keeps a
// key of a held slot from running, tells OnQuarantine, writes the mark, and
// is ended by Release; a key of a slot not held is left alone.
func TestQuarantineKeyFromOutsideARun(t *testing.T) {
	ring := localetcd.StartForTest(t)
	q, _ := quarantineFor(t, ring.Endpoint(), "r0", nil)
	own := newToggleOwnership(16)
	var runs atomic.Int32
	var tell told
	cfg := dispatcherTestConfig(own, func(context.Context, string, int) error { runs.Add(1); return nil })
	cfg.Quarantine, cfg.OnQuarantine = q, tell.tell
	d := startDispatcher(t, cfg)
	awaitCondition(t, "the marks to be read", func() bool { return q.await(context.Background()) == nil })

	if !d.QuarantineKey("ns/bad", "its update handler panicked") {
		t.Fatal("QuarantineKey of a held key reported false")
	}
	if got := tell.of("ns/bad"); len(got) != 1 || got[0] != "its update handler panicked" {
		t.Errorf("OnQuarantine got %q", got)
	}
	d.Enqueue("ns/bad", 1)
	d.Enqueue("ns/ok", 1)
	awaitCondition(t, "the other key to run", func() bool { return runs.Load() == 1 })
	awaitCondition(t, "the quarantined key's request to be dropped", func() bool { return d.Len() == 0 })
	if runs.Load() != 1 {
		t.Errorf("%d runs, want 1: the quarantined key ran", runs.Load())
	}
	awaitCondition(t, "the mark to be in etcd", func() bool { _, ok := markOf(t, q.cfg.Client, "ns/bad"); return ok })

	if !d.Release("ns/bad") {
		t.Fatal("Release did not find the quarantine")
	}
	// The watch may still bring the mark's put before its delete: ask until the key runs.
	awaitCondition(t, "the released key to run", func() bool { d.Enqueue("ns/bad", 2); return runs.Load() >= 2 })
	awaitCondition(t, "the mark to be gone from etcd", func() bool { _, ok := markOf(t, q.cfg.Client, "ns/bad"); return !ok })

	other := keysHashingTo(16, 3, 1)[0]
	own.handOver(3)
	if d.QuarantineKey(other, "x") {
		t.Error("QuarantineKey of a key of a slot not held reported true")
	}
	if _, ok := q.held("test", other); ok {
		t.Error("a key of a slot not held was quarantined")
	}
}

// A mark written by QuarantineKey that lands in etcd after the key's Release (which deletes
// only the marks it knows of) is taken back; one whose key is still quarantined stays.
func TestQuarantineMarkReleasedWhileWrittenIsTakenBack(t *testing.T) {
	ring := localetcd.StartForTest(t)
	q, _ := quarantineFor(t, ring.Endpoint(), "r0", nil)
	m := Mark{Member: "r0", Incarnation: q.incarnation, Reason: "x", Since: time.Now().UTC()}
	q.put("test/ns/released", m) // released before the write landed: not in q.local
	q.mu.Lock()
	q.local["test/ns/kept"] = m
	q.mu.Unlock()
	q.put("test/ns/kept", m)
	q.takeBackIfReleased("test/ns/released")
	q.takeBackIfReleased("test/ns/kept")
	if _, ok := markOf(t, q.cfg.Client, "ns/released"); ok {
		t.Error("the mark of a released key is still in etcd")
	}
	if _, ok := q.held("test", "ns/released"); ok {
		awaitCondition(t, "the released key's mark to be forgotten here", func() bool { _, ok := q.held("test", "ns/released"); return !ok })
	}
	if _, ok := markOf(t, q.cfg.Client, "ns/kept"); !ok {
		t.Error("the mark of a key still quarantined was taken back")
	}
}

// A key whose handler runs past its time budget has its context cancelled
// and is quarantined once the handler returns.
func TestQuarantineTimeBudget(t *testing.T) {
	ring := localetcd.StartForTest(t)
	q, _ := quarantineFor(t, ring.Endpoint(), "r0", func(c *QuarantineConfig) { c.TimeBudget = 100 * time.Millisecond })
	var runs atomic.Int32
	var tell told
	cfg := dispatcherTestConfig(HoldAll{}, func(ctx context.Context, key string, _ int) error {
		runs.Add(1)
		<-ctx.Done() // a reconcile that would never end by itself
		return ctx.Err()
	})
	cfg.Quarantine, cfg.OnQuarantine = q, tell.tell
	d := startDispatcher(t, cfg)
	d.Enqueue("ns/slow", 1)
	awaitCondition(t, "the slow key to be quarantined", func() bool { return len(tell.of("ns/slow")) == 1 })
	if got := tell.of("ns/slow")[0]; !strings.Contains(got, "no progress") || !strings.Contains(got, "time budget") {
		t.Errorf("reason %q does not name the time budget", got)
	}
	d.Enqueue("ns/slow", 2)
	awaitCondition(t, "the request to be dropped", func() bool { return d.Len() == 0 })
	if n := runs.Load(); n != 1 {
		t.Errorf("the slow key ran %d times, want 1", n)
	}
}

// A run is judged on its progress: one whose API requests keep being answered runs past its
// time budget, as long as it keeps doing so; one that stops is quarantined a time budget after
// its last progress; MaxRun ends any.
func TestQuarantineJudgesProgressNotLength(t *testing.T) {
	ring := localetcd.StartForTest(t)
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/throttled" {
			w.WriteHeader(http.StatusTooManyRequests)
		}
	}))
	t.Cleanup(server.Close)
	client := &http.Client{Transport: ProgressTransport(http.DefaultTransport)}
	ask := func(ctx context.Context, path string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, server.URL+path, nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	q, _ := quarantineFor(t, ring.Endpoint(), "r0", func(c *QuarantineConfig) {
		c.TimeBudget, c.MaxRun = 150*time.Millisecond, 2*time.Second
	})
	var tell told
	var ranFor sync.Map
	cfg := dispatcherTestConfig(HoldAll{}, func(ctx context.Context, key string, _ int) error {
		start := time.Now()
		defer func() { ranFor.Store(key, time.Since(start)) }()
		switch key {
		case "ns/steady": // answered every 30 ms for four time budgets, then done
			for time.Since(start) < 600*time.Millisecond {
				ask(ctx, "/ok")
				time.Sleep(30 * time.Millisecond)
			}
			return nil
		case "ns/throttled": // asks all the time, is never answered but with 429
			for ctx.Err() == nil {
				ask(ctx, "/throttled")
				time.Sleep(30 * time.Millisecond)
			}
		case "ns/forever": // progress without end
			for ctx.Err() == nil {
				Progressed(ctx)
				time.Sleep(30 * time.Millisecond)
			}
		}
		return ctx.Err()
	})
	cfg.Quarantine, cfg.OnQuarantine = q, tell.tell
	d := startDispatcher(t, cfg)
	for _, k := range []string{"ns/steady", "ns/throttled", "ns/forever"} {
		d.Enqueue(k, 1)
	}
	awaitCondition(t, "the throttled key to be quarantined", func() bool { return len(tell.of("ns/throttled")) == 1 })
	awaitCondition(t, "the steady key to finish", func() bool { _, ok := ranFor.Load("ns/steady"); return ok })
	if got := tell.of("ns/steady"); len(got) != 0 {
		t.Errorf("a run answered every 30 ms was quarantined: %v", got)
	}
	if got := tell.of("ns/throttled")[0]; !strings.Contains(got, "no progress") {
		t.Errorf("reason %q does not say it made no progress", got)
	}
	awaitCondition(t, "the endless key to be quarantined at MaxRun", func() bool { return len(tell.of("ns/forever")) == 1 })
	if got := tell.of("ns/forever")[0]; !strings.Contains(got, "ran past 2s") {
		t.Errorf("reason %q does not name MaxRun", got)
	}
	if v, _ := ranFor.Load("ns/forever"); v.(time.Duration) < 2*time.Second {
		t.Errorf("the endless key was stopped after %v, before MaxRun", v)
	}
}

// A replica whose membership is not valid (its lease past, as after a pause of the process)
// suspects none of its runs of time: a run past its time budget then is not marked, and runs
// again once it returns. A key released while its run was suspected is not marked again when
// the run ends, and the suspect's mark goes.
func TestQuarantineSparesAPausedReplicaAndAReleasedKey(t *testing.T) {
	ring := localetcd.StartForTest(t)
	var invalid atomic.Bool
	invalid.Store(true)
	q, _ := quarantineFor(t, ring.Endpoint(), "r0", func(c *QuarantineConfig) {
		c.TimeBudget = 100 * time.Millisecond
		c.Valid = func() error {
			if invalid.Load() {
				return errors.New("lease past")
			}
			return nil
		}
	})
	unblock := map[string]chan struct{}{"ns/paused": make(chan struct{}), "ns/released": make(chan struct{})}
	var runs sync.Map
	cfg := dispatcherTestConfig(HoldAll{}, func(ctx context.Context, key string, _ int) error {
		n, _ := runs.LoadOrStore(key, new(atomic.Int32))
		if n.(*atomic.Int32).Add(1) == 1 {
			<-unblock[key] // deaf to its context, past the time budget
		}
		return nil
	})
	var tell told
	cfg.Quarantine, cfg.OnQuarantine = q, tell.tell
	d := startDispatcher(t, cfg)
	d.Enqueue("ns/paused", 1)
	time.Sleep(400 * time.Millisecond) // four time budgets, a dozen watchdog checks
	if _, ok := markOf(t, q.cfg.Client, "ns/paused"); ok {
		t.Fatal("a run of a replica whose lease is past was marked")
	}
	close(unblock["ns/paused"])
	d.Enqueue("ns/paused", 2)
	awaitCondition(t, "the paused key to run again", func() bool {
		n, _ := runs.Load("ns/paused")
		return n.(*atomic.Int32).Load() == 2
	})

	invalid.Store(false)
	d.Enqueue("ns/released", 1)
	awaitCondition(t, "the suspect's mark", func() bool { _, ok := markOf(t, q.cfg.Client, "ns/released"); return ok })
	d.Release("ns/released") // its object changed while the suspect ran
	close(unblock["ns/released"])
	awaitCondition(t, "the released key's mark to go", func() bool { _, ok := markOf(t, q.cfg.Client, "ns/released"); return !ok })
	time.Sleep(200 * time.Millisecond)
	if _, ok := markOf(t, q.cfg.Client, "ns/released"); ok {
		t.Error("the run of a key released while it ran marked it when it ended")
	}
	if got := tell.of("ns/released"); len(got) != 0 {
		t.Errorf("a key released while its run was suspected was quarantined: %v", got)
	}
}

// A mark holds the object it was written for: an object made again under its name (another
// UID) while no replica saw the delete runs, and its predecessor's mark goes; the sweep
// releases the marks of held keys whose object is gone; a key of unknown UID stays held.
func TestQuarantineMarksFollowTheirObject(t *testing.T) {
	ring := localetcd.StartForTest(t)
	prev := QuarantineSweep
	QuarantineSweep = 50 * time.Millisecond
	t.Cleanup(func() { QuarantineSweep = prev })
	q, _ := quarantineFor(t, ring.Endpoint(), "r0", nil)
	var mu sync.Mutex
	uids := map[string]string{"ns/recreated": "uid-1", "ns/gone": "uid-1", "ns/unknown": "", "ns/kept": "uid-1"}
	var runs sync.Map
	cfg := dispatcherTestConfig(HoldAll{}, func(_ context.Context, key string, _ int) error {
		n, _ := runs.LoadOrStore(key, new(atomic.Int32))
		if n.(*atomic.Int32).Add(1) == 1 {
			panic("poison") // the first run of every key panics
		}
		return nil
	})
	cfg.UIDOf = func(key string) (string, bool) {
		mu.Lock()
		defer mu.Unlock()
		uid, ok := uids[key]
		return uid, ok
	}
	var tell told
	cfg.Quarantine, cfg.OnQuarantine = q, tell.tell
	d := startDispatcher(t, cfg)
	for _, k := range []string{"ns/recreated", "ns/gone", "ns/unknown", "ns/kept"} {
		d.Enqueue(k, 1)
		awaitCondition(t, k+" to be marked", func() bool { m, ok := markOf(t, q.cfg.Client, k); return ok && m.UID == uids[k] })
	}
	mu.Lock()
	uids["ns/recreated"] = "uid-2" // deleted and made again while no replica watched
	delete(uids, "ns/gone")        // deleted while no replica watched
	mu.Unlock()
	for _, k := range []string{"ns/recreated", "ns/unknown", "ns/kept"} {
		d.Enqueue(k, 2)
	}
	awaitCondition(t, "the re-created object to run", func() bool {
		n, _ := runs.Load("ns/recreated")
		return n.(*atomic.Int32).Load() == 2
	})
	awaitCondition(t, "the gone object's mark to be swept", func() bool { _, ok := markOf(t, q.cfg.Client, "ns/gone"); return !ok })
	if _, ok := markOf(t, q.cfg.Client, "ns/recreated"); ok {
		t.Error("the earlier object's mark stayed after the new one ran")
	}
	time.Sleep(200 * time.Millisecond) // sweeps
	for _, k := range []string{"ns/kept", "ns/unknown"} {
		if _, ok := markOf(t, q.cfg.Client, k); !ok {
			t.Errorf("the mark of %s went", k)
		}
		if n, _ := runs.Load(k); n.(*atomic.Int32).Load() != 1 {
			t.Errorf("%s ran again while quarantined", k)
		}
	}
}

// A key that was in flight while its replica's heap passed the budget is
// marked in etcd before the replica can die of it; the replica "dies" (its
// Quarantine stops, the handler never returns, nothing is cleaned up), and
// the key's next holder, another Quarantine on the same etcd, does not run
// it, says why, and keeps serving the slot's other keys.
func TestQuarantineSurvivesTheCrashOfItsReplica(t *testing.T) {
	ring := localetcd.StartForTest(t)
	var heap atomic.Int64
	qa, crash := quarantineFor(t, ring.Endpoint(), "r0", func(c *QuarantineConfig) {
		c.MemoryBudget, c.MarkAfter = 1<<30, 50*time.Millisecond
		c.HeapBytes = heap.Load
	})
	hogging, freed := make(chan struct{}), make(chan struct{})
	cfgA := dispatcherTestConfig(HoldAll{}, func(_ context.Context, key string, _ int) error {
		if key == "ns/hog" {
			close(hogging)
			heap.Store(3 << 30) // allocating without looking at its context
			<-freed
		}
		return nil
	})
	cfgA.Quarantine = qa
	a := startDispatcher(t, cfgA)
	t.Cleanup(func() { close(freed) }) // before the dispatcher's own cleanup waits for its handlers
	a.Enqueue("ns/hog", 1)
	awaitClosed(t, hogging, "the hog to start")
	awaitCondition(t, "the hog to be marked in etcd", func() bool {
		m, ok := markOf(t, qa.cfg.Client, "ns/hog")
		return ok && m.Suspect && strings.Contains(m.Reason, "heap")
	})
	crash()

	qb, _ := quarantineFor(t, ring.Endpoint(), "r1", nil)
	var runs sync.Map
	var tell told
	cfgB := dispatcherTestConfig(HoldAll{}, func(_ context.Context, key string, _ int) error {
		runs.Store(key, true)
		return nil
	})
	cfgB.Quarantine, cfgB.OnQuarantine = qb, tell.tell
	b := startDispatcher(t, cfgB)
	b.Enqueue("ns/hog", 1)
	b.Enqueue("ns/other", 1)
	awaitCondition(t, "the next holder to quarantine the hog", func() bool { return len(tell.of("ns/hog")) == 1 })
	awaitCondition(t, "the other key to run", func() bool { _, ok := runs.Load("ns/other"); return ok })
	if _, ran := runs.Load("ns/hog"); ran {
		t.Error("the next holder ran the key its previous holder died of")
	}
	if got := tell.of("ns/hog")[0]; !strings.Contains(got, "replica r0 was reconciling it when it stopped") {
		t.Errorf("reason %q does not say which replica died of it", got)
	}
	if !b.Release("ns/hog") {
		t.Error("Release did not find the crash mark")
	}
	b.Enqueue("ns/hog", 2)
	awaitCondition(t, "the released key to run on the next holder", func() bool { _, ok := runs.Load("ns/hog"); return ok })
}

// A replica whose live heap stands over its budget (a large cache) suspects no run the heap did
// not grow under, however long it runs; a run under which the heap then grows by a sixteenth of
// the budget is suspected, cancelled and weighed: one whose end frees that growth is marked, one
// whose end frees nothing (the growth was the cache's) is cleared, runs again at once and is not
// suspected again for the same growth; and one that began after the growth is not suspected.
func TestQuarantineSuspectsOnlyRunsTheHeapGrewUnder(t *testing.T) {
	ring := localetcd.StartForTest(t)
	var heap atomic.Int64
	heap.Store(3 << 30) // over the 1 GiB budget before anything runs
	q, _ := quarantineFor(t, ring.Endpoint(), "r0", func(c *QuarantineConfig) {
		c.MemoryBudget, c.MarkAfter = 1<<30, 20*time.Millisecond
		c.HeapBytes, c.Collect = heap.Load, func() {}
	})
	const grown = 1 << 30 / 16
	var runs sync.Map // key → *atomic.Int32
	started := map[string]chan struct{}{"ns/hog": make(chan struct{}), "ns/innocent": make(chan struct{}), "ns/late": make(chan struct{})}
	release := make(chan struct{})
	cfg := dispatcherTestConfig(HoldAll{}, func(ctx context.Context, key string, _ int) error {
		n, _ := runs.LoadOrStore(key, new(atomic.Int32))
		if n.(*atomic.Int32).Add(1) == 1 {
			close(started[key])
		}
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			if key == "ns/hog" {
				heap.Add(-grown) // what it held goes with it
			}
			return ctx.Err()
		}
	})
	var tell told
	cfg.Quarantine, cfg.OnQuarantine = q, tell.tell
	d := startDispatcher(t, cfg)
	t.Cleanup(func() { close(release) })
	runsOf := func(key string) int32 {
		n, ok := runs.Load(key)
		if !ok {
			return 0
		}
		return n.(*atomic.Int32).Load()
	}

	d.Enqueue("ns/hog", 1)
	awaitClosed(t, started["ns/hog"], "the hog to start")
	time.Sleep(300 * time.Millisecond) // fifteen times MarkAfter, a dozen watchdog checks
	if _, ok := markOf(t, q.cfg.Client, "ns/hog"); ok {
		t.Fatal("a run the heap did not grow under was marked")
	}
	heap.Add(grown) // it grows now, and its end frees it
	awaitCondition(t, "the run whose end freed the growth to be marked", func() bool {
		m, ok := markOf(t, q.cfg.Client, "ns/hog")
		return ok && !m.Suspect && strings.Contains(m.Reason, "grew by 64 MiB") && strings.Contains(m.Reason, "the heap fell by 64 MiB")
	})
	awaitCondition(t, "the hog to be told quarantined", func() bool { return len(tell.of("ns/hog")) == 1 })

	d.Enqueue("ns/innocent", 1)
	awaitClosed(t, started["ns/innocent"], "the innocent run to start")
	time.Sleep(100 * time.Millisecond)
	heap.Add(grown) // the cache grows under it; its end frees nothing
	awaitCondition(t, "the cleared run to run again", func() bool { return runsOf("ns/innocent") >= 2 })
	time.Sleep(300 * time.Millisecond)
	if m, ok := markOf(t, q.cfg.Client, "ns/innocent"); ok {
		t.Errorf("a run whose end freed nothing is marked: %+v", m)
	}
	if n := runsOf("ns/innocent"); n != 2 {
		t.Errorf("the cleared run ran %d times, want 2: suspected again for growth it was cleared of", n)
	}
	if got := tell.of("ns/innocent"); len(got) > 0 {
		t.Errorf("the cleared run was told quarantined: %v", got)
	}

	d.Enqueue("ns/late", 1)
	awaitClosed(t, started["ns/late"], "the late run to start")
	time.Sleep(300 * time.Millisecond)
	if _, ok := markOf(t, q.cfg.Client, "ns/late"); ok {
		t.Error("a run that began after the heap grew was marked")
	}
}

// TestQuarantineConfigValidate: DefaultQuarantineConfig with a client and a
// member validates, each field that cannot work is reported, and Validate
// changes nothing.
func TestQuarantineConfigValidate(t *testing.T) {
	valid := func() QuarantineConfig {
		cfg := DefaultQuarantineConfig()
		cfg.Client, cfg.Prefix, cfg.Member = new(clientv3.Client), "/qt", "r0" // never dialled
		return cfg
	}
	validatetest.Run(t, valid, (*QuarantineConfig).Validate, func(c QuarantineConfig) error { _, err := NewQuarantine(c); return err }, []validatetest.Case[QuarantineConfig]{
		{Name: "defaults"},
		{Name: "memory check off", Edit: func(c *QuarantineConfig) { c.MemoryBudget, c.HeapBytes = -1, nil }},
		{Name: "memory budget set", Edit: func(c *QuarantineConfig) { c.MemoryBudget = 1 << 30 }},
		{Name: "no client", Edit: func(c *QuarantineConfig) { c.Client = nil }, Want: []string{"etcd client"}},
		{Name: "no member", Edit: func(c *QuarantineConfig) { c.Member = "" }, Want: []string{"member id"}},
		{Name: "no time budget", Edit: func(c *QuarantineConfig) { c.TimeBudget = 0 }, Want: []string{"time budget 0s"}},
		{Name: "no max run", Edit: func(c *QuarantineConfig) { c.MaxRun = 0 }, Want: []string{"max run 0s"}},
		{Name: "no mark after", Edit: func(c *QuarantineConfig) { c.MarkAfter = 0 }, Want: []string{"mark after 0s"}},
		{Name: "negative stuck after", Edit: func(c *QuarantineConfig) { c.StuckAfter = -1 }, Want: []string{"stuck after -1ns"}},
		{Name: "no check", Edit: func(c *QuarantineConfig) { c.Check = 0 }, Want: []string{"check period 0s"}},
		{Name: "memory budget 0", Edit: func(c *QuarantineConfig) { c.MemoryBudget = 0 }, Want: []string{"memory budget 0"}},
		{Name: "no heap reader", Edit: func(c *QuarantineConfig) { c.MemoryBudget, c.HeapBytes = 1<<30, nil }, Want: []string{"memory budget 1073741824 with no HeapBytes"}},
		{Name: "no logger", Edit: func(c *QuarantineConfig) { c.Logger = nil }, Want: []string{"logger"}},
		{Name: "zero value", Edit: func(c *QuarantineConfig) { *c = QuarantineConfig{} }, Want: []string{
			"etcd client", "member id", "time budget 0s", "max run 0s", "mark after 0s", "stuck after 0s", "check period 0s", "memory budget 0", "logger",
		}},
	})
}
