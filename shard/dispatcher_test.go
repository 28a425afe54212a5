package shard

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/ringfire/ringfire/internal/logbuf"
	"github.com/ringfire/ringfire/internal/wallstep"
)

// dispatchTimeout bounds every wait of these tests; nothing should come near it.
const dispatchTimeout = 10 * time.Second

// toggleOwnership holds every slot until told otherwise. Each holding of a slot
// (a term) has its own context.
type toggleOwnership struct {
	slots int

	mu      sync.Mutex
	notHeld map[int]bool
	terms   map[int]context.Context
	cancels map[int]context.CancelFunc
}

func newToggleOwnership(slots int) *toggleOwnership {
	return &toggleOwnership{
		slots:   slots,
		notHeld: make(map[int]bool),
		terms:   make(map[int]context.Context),
		cancels: make(map[int]context.CancelFunc),
	}
}

func (f *toggleOwnership) Slots() int { return f.slots }

func (f *toggleOwnership) SlotContext(slot int) (context.Context, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.notHeld[slot] {
		return nil, false
	}
	if f.terms[slot] == nil {
		f.terms[slot], f.cancels[slot] = context.WithCancel(context.Background())
	}
	return f.terms[slot], true
}

// handOver stops new work on slot, as the Manager does before draining; the
// slot's context stays live.
func (f *toggleOwnership) handOver(slot int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.notHeld[slot] = true
}

// lose ends the slot's term: it is not held and its context is cancelled.
func (f *toggleOwnership) lose(slot int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.notHeld[slot] = true
	if cancel := f.cancels[slot]; cancel != nil {
		cancel()
	}
	delete(f.terms, slot)
	delete(f.cancels, slot)
}

// gain holds the slot again, in a new term.
func (f *toggleOwnership) gain(slot int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.notHeld[slot] = false
}

// keysHashingTo returns n distinct keys whose slot is slot.
func keysHashingTo(slots, slot, n int) []string {
	var keys []string
	for i := 0; len(keys) < n; i++ {
		if key := fmt.Sprintf("ns/job-%d", i); SlotOf(key, slots) == slot {
			keys = append(keys, key)
		}
	}
	return keys
}

// dispatcherTestConfig is a config for tests: 4 workers, backoff 1ms to 100ms.
func dispatcherTestConfig[R any](own Ownership, handler func(context.Context, string, R) error) DispatcherConfig[R] {
	cfg := DefaultDispatcherConfig[R]()
	cfg.Name = "test"
	cfg.Workers = 4
	cfg.Ownership = own
	cfg.Handler = handler
	cfg.BaseBackoff = time.Millisecond
	cfg.MaxBackoff = 100 * time.Millisecond
	return cfg
}

// startDispatcher runs a dispatcher for the test; cleanup stops it and fails
// the test if Run does not return.
func startDispatcher[R any](t *testing.T, cfg DispatcherConfig[R]) *Dispatcher[R] {
	t.Helper()
	d, err := NewDispatcher(cfg)
	if err != nil {
		t.Fatalf("NewDispatcher: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		d.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		awaitClosed(t, stopped, "Run to return")
	})
	return d
}

func awaitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(dispatchTimeout):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// awaitCondition waits for cond, checking it every millisecond.
func awaitCondition(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(dispatchTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatalf("read counter: %v", err)
	}
	return m.GetCounter().GetValue()
}

func TestDispatcherKeepsOrderPerKeyAndNeverRunsAKeyTwice(t *testing.T) {
	const keys, perKey, producers = 300, 40, 4
	var (
		inFlight  [keys]atomic.Int32
		lastSeen  [keys]atomic.Int32
		remaining atomic.Int32
		allDone   = make(chan struct{})
	)
	remaining.Store(keys * perKey)
	for i := range lastSeen {
		lastSeen[i].Store(-1)
	}
	type req struct{ key, seq int }
	handler := func(_ context.Context, _ string, r req) error {
		if n := inFlight[r.key].Add(1); n != 1 {
			t.Errorf("key %d: %d handlers at once", r.key, n)
		}
		runtime.Gosched() // widen the window for a second worker to slip in
		if prev := lastSeen[r.key].Swap(int32(r.seq)); prev != int32(r.seq-1) {
			t.Errorf("key %d: request %d after %d", r.key, r.seq, prev)
		}
		inFlight[r.key].Add(-1)
		if remaining.Add(-1) == 0 {
			close(allDone)
		}
		return nil
	}
	cfg := dispatcherTestConfig(newToggleOwnership(64), handler)
	cfg.Workers = 16
	d := startDispatcher(t, cfg)

	// Each producer owns a share of the keys and interleaves them, so every
	// key's requests arrive in a known order among everyone else's.
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for seq := range perKey {
				for k := p; k < keys; k += producers {
					d.Enqueue(fmt.Sprintf("ns/job-%d", k), req{key: k, seq: seq})
				}
			}
		})
	}
	wg.Wait()
	awaitClosed(t, allDone, "every request to be handled")
	for k := range keys {
		if got := lastSeen[k].Load(); got != perKey-1 {
			t.Errorf("key %d: last request handled %d, want %d", k, got, perKey-1)
		}
	}
	awaitCondition(t, "an empty queue", func() bool { return d.Len() == 0 })
}

func TestDispatcherSlowKeyBlocksOnlyItself(t *testing.T) {
	const others = 500
	release := make(chan struct{})
	slowStarted := make(chan struct{})
	var slowCalls, otherCalls atomic.Int32
	othersDone := make(chan struct{})
	handler := func(ctx context.Context, key string, _ int) error {
		if key == "ns/slow" {
			if slowCalls.Add(1) == 1 {
				close(slowStarted)
				<-release // hold the worker for as long as the test wants
			}
			return nil
		}
		if otherCalls.Add(1) == 2*others {
			close(othersDone)
		}
		return nil
	}
	cfg := dispatcherTestConfig(newToggleOwnership(64), handler)
	cfg.Workers = 2
	d := startDispatcher(t, cfg)
	defer close(release)

	d.Enqueue("ns/slow", 1)
	awaitClosed(t, slowStarted, "the slow key to start")
	for i := range others {
		d.Enqueue("ns/slow", 2) // queues behind the slow head, takes no worker
		d.Enqueue(fmt.Sprintf("ns/job-%d", i), 1)
		d.Enqueue(fmt.Sprintf("ns/job-%d", i), 2)
	}
	awaitClosed(t, othersDone, "the other keys, while the slow key blocks")
	if n := slowCalls.Load(); n != 1 {
		t.Fatalf("slow key handled %d times while blocked, want 1", n)
	}
	if got, want := d.Len(), others; got != want {
		t.Fatalf("Len() = %d, want %d requests waiting behind the slow key", got, want)
	}
}

func TestDispatcherRetriesWithBackoffThenGivesUp(t *testing.T) {
	const maxRetries = 5
	var (
		mu       sync.Mutex
		attempts []time.Time
		order    []string
	)
	gaveUp := make(chan struct{})
	nextDone := make(chan struct{})
	failure := errors.New("API server says no")
	handler := func(_ context.Context, _ string, req int) error {
		mu.Lock()
		defer mu.Unlock()
		if req == 1 {
			attempts = append(attempts, time.Now())
			order = append(order, "attempt")
			return failure
		}
		order = append(order, "next")
		close(nextDone)
		return nil
	}
	cfg := dispatcherTestConfig(newToggleOwnership(64), handler)
	cfg.MaxRetries = maxRetries
	cfg.BaseBackoff = 2 * time.Millisecond
	cfg.MaxBackoff = time.Second
	cfg.OnGiveUp = func(key string, req int, err error) {
		mu.Lock()
		defer mu.Unlock()
		if key != "ns/bad" || req != 1 || !errors.Is(err, failure) {
			t.Errorf("OnGiveUp(%q, %d, %v), want (ns/bad, 1, %v)", key, req, err, failure)
		}
		order = append(order, "give up")
		close(gaveUp)
	}
	d := startDispatcher(t, cfg)

	d.Enqueue("ns/bad", 1)
	d.Enqueue("ns/bad", 2)
	awaitClosed(t, gaveUp, "OnGiveUp")
	awaitClosed(t, nextDone, "the request after the given-up one")

	mu.Lock()
	defer mu.Unlock()
	if len(attempts) != maxRetries+1 {
		t.Fatalf("%d attempts, want %d (1 + %d retries)", len(attempts), maxRetries+1, maxRetries)
	}
	// Timers never fire early, so every gap is at least its backoff, and the
	// backoffs double: 2ms, 4ms, 8ms, ...
	for i := 1; i < len(attempts); i++ {
		gap, want := attempts[i].Sub(attempts[i-1]), cfg.BaseBackoff<<(i-1)
		if gap < want {
			t.Errorf("retry %d came after %v, want at least %v", i, gap, want)
		}
	}
	want := strings.Repeat("attempt ", maxRetries+1) + "give up next"
	if got := strings.Join(order, " "); got != want {
		t.Errorf("order of events:\n got %s\nwant %s", got, want)
	}
	m := d.metrics
	for name, c := range map[string]struct {
		counter prometheus.Counter
		want    float64
	}{
		"errors":   {m.errors, maxRetries + 1},
		"retries":  {m.retries, maxRetries},
		"give-ups": {m.giveUps, 1},
	} {
		if got := counterValue(t, c.counter); got != c.want {
			t.Errorf("%s = %v, want %v", name, got, c.want)
		}
	}
}

func TestDispatcherBackoffDoublesUpToMax(t *testing.T) {
	cfg := dispatcherTestConfig(newToggleOwnership(1), func(context.Context, string, int) error { return nil })
	cfg.BaseBackoff = 5 * time.Millisecond
	cfg.MaxBackoff = 1000 * time.Second
	d, err := NewDispatcher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		failures int
		want     time.Duration
	}{
		{1, 5 * time.Millisecond},
		{2, 10 * time.Millisecond},
		{3, 20 * time.Millisecond},
		{15, 5 * time.Millisecond << 14},
		{18, 5 * time.Millisecond << 17},
		{19, 1000 * time.Second},
		{1000, 1000 * time.Second},
	} {
		if got := d.backoff(tc.failures); got != tc.want {
			t.Errorf("backoff(%d) = %v, want %v", tc.failures, got, tc.want)
		}
	}
}

func TestDispatcherSuccessResetsBackoff(t *testing.T) {
	// Request 1 fails twice, then succeeds; request 2 must start with no
	// failures counted, or its first retry would wait 4 base backoffs.
	var d *Dispatcher[int]
	var calls atomic.Int32
	failuresAtStart := make(chan int, 1)
	done := make(chan struct{})
	handler := func(_ context.Context, key string, req int) error {
		n := calls.Add(1)
		if req == 1 && n <= 2 {
			return errors.New("not yet")
		}
		if req == 2 {
			d.mu.Lock()
			failuresAtStart <- d.boxes[key].failures
			d.mu.Unlock()
			close(done)
		}
		return nil
	}
	d = startDispatcher(t, dispatcherTestConfig(newToggleOwnership(1), handler))
	d.Enqueue("ns/a", 1)
	d.Enqueue("ns/a", 2)
	awaitClosed(t, done, "both requests")
	if n := <-failuresAtStart; n != 0 {
		t.Errorf("request 2 started with %d failures counted, want 0", n)
	}
	awaitCondition(t, "the idle key to be forgotten", func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return len(d.boxes) == 0
	})
}

func TestDispatcherMailboxKeepsOrderWhileReusingItsSlice(t *testing.T) {
	// Push and pop in waves that wrap around the slice many times.
	var q fifo[int]
	next, want := 0, 0
	for round := range 200 {
		for range round%7 + 1 {
			q.push(request[int]{req: next})
			next++
		}
		for range round%5 + 1 {
			if q.len() == 0 {
				break
			}
			if got := q.front().req; got != want {
				t.Fatalf("round %d: front %d, want %d", round, got, want)
			}
			q.pop(1)
			want++
		}
		if q.len() > 0 && q.back().req != next-1 {
			t.Fatalf("round %d: back %d, want %d", round, q.back().req, next-1)
		}
	}
	if q.len() != next-want {
		t.Fatalf("len %d, want %d", q.len(), next-want)
	}
	if cap(q.buf) > 2*(next-want)+16 {
		t.Fatalf("slice of cap %d for %d requests: popped room is not reused", cap(q.buf), q.len())
	}
}

func TestDispatcherCoalescesWaitingResyncs(t *testing.T) {
	const resync = 0 // a pure out-of-sync request; others are events
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	var mu sync.Mutex
	var handled []int
	done := make(chan struct{})
	handler := func(_ context.Context, _ string, req int) error {
		select {
		case started <- struct{}{}:
		default:
		}
		<-release
		mu.Lock()
		defer mu.Unlock()
		handled = append(handled, req)
		if len(handled) == 4 {
			close(done)
		}
		return nil
	}
	cfg := dispatcherTestConfig(newToggleOwnership(1), handler)
	cfg.Coalesce = func(queued, incoming int) bool { return queued == resync && incoming == resync }
	d := startDispatcher(t, cfg)

	d.Enqueue("ns/a", resync)
	<-started // the running resync must not absorb the ones that follow
	for _, req := range []int{resync, resync, resync, 7, resync, resync} {
		d.Enqueue("ns/a", req)
	}
	if got := d.Len(); got != 3 {
		t.Errorf("Len() = %d, want 3 (resync, 7, resync)", got)
	}
	close(release)
	awaitClosed(t, done, "the coalesced requests")
	mu.Lock()
	defer mu.Unlock()
	if got, want := fmt.Sprint(handled), "[0 0 7 0]"; got != want {
		t.Errorf("handled %s, want %s", got, want)
	}
	if got := counterValue(t, d.metrics.coalesced); got != 3 {
		t.Errorf("coalesced = %v, want 3", got)
	}
}

func TestDispatcherDropsRequestsOfSlotsNotHeld(t *testing.T) {
	own := newToggleOwnership(16)
	handled := make(chan string, 10)
	cfg := dispatcherTestConfig(own, func(_ context.Context, key string, _ int) error {
		handled <- key
		return nil
	})
	d := startDispatcher(t, cfg)

	keys := keysHashingTo(16, 3, 1)
	own.handOver(3)
	d.Enqueue(keys[0], 1)
	d.EnqueueAfter(keys[0], 2, time.Millisecond)
	if got := d.Len(); got != 0 {
		t.Fatalf("Len() = %d after enqueueing for a slot not held, want 0", got)
	}
	if got := counterValue(t, d.metrics.dropsBy[dropNotOwned]); got != 2 {
		t.Fatalf("dropped not_owned = %v, want 2", got)
	}
	d.mu.Lock()
	timers := len(d.timers)
	d.mu.Unlock()
	if timers != 0 {
		t.Fatalf("%d timers for dropped delayed requests", timers)
	}
	own.gain(3)
	d.Enqueue(keys[0], 3)
	select {
	case key := <-handled:
		if key != keys[0] {
			t.Fatalf("handled %q", key)
		}
	case <-time.After(dispatchTimeout):
		t.Fatal("timed out waiting for the request once the slot is held")
	}
}

func TestDispatcherSlotLossCancelsHandlerAndDropsItsQueue(t *testing.T) {
	own := newToggleOwnership(16)
	key := keysHashingTo(16, 5, 1)[0]
	started := make(chan struct{})
	var calls atomic.Int32
	handlerErr := make(chan error, 1)
	cfg := dispatcherTestConfig(own, func(ctx context.Context, _ string, _ int) error {
		calls.Add(1)
		close(started)
		select {
		case <-ctx.Done():
			handlerErr <- ctx.Err()
			return ctx.Err()
		case <-time.After(dispatchTimeout):
			return errors.New("slot context never cancelled")
		}
	})
	d := startDispatcher(t, cfg)

	d.Enqueue(key, 1)
	awaitClosed(t, started, "the handler")
	d.Enqueue(key, 2)
	d.Enqueue(key, 3)
	own.lose(5)
	select {
	case err := <-handlerErr:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("handler saw %v, want context.Canceled", err)
		}
	case <-time.After(dispatchTimeout):
		t.Fatal("the slot's cancellation did not reach the handler")
	}
	awaitCondition(t, "the mailbox to be dropped", func() bool {
		return d.Len() == 0 && counterValue(t, d.metrics.dropsBy[dropSlotLost]) == 3
	})
	if n := calls.Load(); n != 1 {
		t.Fatalf("handler called %d times, want 1", n)
	}
	if got := counterValue(t, d.metrics.retries); got != 0 {
		t.Fatalf("retries = %v: a request failed by slot loss must not be retried", got)
	}
}

func TestDispatcherDropsRequestsOfAnEndedTerm(t *testing.T) {
	// Requests queued while the slot was held, then lost and regained, belong
	// to the earlier term: the new term enqueues its own.
	own := newToggleOwnership(16)
	blocker, key := keysHashingTo(16, 1, 1)[0], keysHashingTo(16, 2, 1)[0]
	release := make(chan struct{})
	blocking := make(chan struct{})
	handled := make(chan int, 10)
	cfg := dispatcherTestConfig(own, func(_ context.Context, k string, req int) error {
		if k == blocker {
			close(blocking)
			<-release
			return nil
		}
		handled <- req
		return nil
	})
	cfg.Workers = 1
	d := startDispatcher(t, cfg)

	d.Enqueue(blocker, 0)
	awaitClosed(t, blocking, "the only worker to be busy")
	d.Enqueue(key, 1)
	d.Enqueue(key, 2)
	own.lose(2)
	own.gain(2)
	d.Enqueue(key, 3)
	close(release)
	select {
	case req := <-handled:
		if req != 3 {
			t.Fatalf("handled request %d of the ended term", req)
		}
	case <-time.After(dispatchTimeout):
		t.Fatal("timed out waiting for the new term's request")
	}
	if got := counterValue(t, d.metrics.dropsBy[dropSlotLost]); got != 2 {
		t.Fatalf("dropped slot_lost = %v, want 2", got)
	}
}

func TestDispatcherNewTermSkipsTheBackoffOfAnEndedOne(t *testing.T) {
	own := newToggleOwnership(16)
	key := keysHashingTo(16, 6, 1)[0]
	handled := make(chan int, 1)
	cfg := dispatcherTestConfig(own, func(_ context.Context, _ string, req int) error {
		if req == 1 {
			return errors.New("fails, then waits out an hour of backoff")
		}
		handled <- req
		return nil
	})
	cfg.BaseBackoff = time.Hour
	cfg.MaxBackoff = time.Hour
	d := startDispatcher(t, cfg)

	d.Enqueue(key, 1)
	awaitCondition(t, "the request to back off", func() bool {
		return counterValue(t, d.metrics.retries) == 1
	})
	own.lose(6)
	own.gain(6)
	d.Enqueue(key, 2)
	select {
	case req := <-handled:
		if req != 2 {
			t.Fatalf("handled %d, want the new term's 2", req)
		}
	case <-time.After(dispatchTimeout):
		t.Fatal("the new term's request waited out the ended term's backoff")
	}
	if got := counterValue(t, d.metrics.dropsBy[dropSlotLost]); got != 1 {
		t.Fatalf("dropped slot_lost = %v, want 1", got)
	}
}

func TestDispatcherIgnoresAVoidRetryTimer(t *testing.T) {
	// Step the dispatcher by hand, without Run: a retry timer voided by a new
	// term must not ready the key once it is back in a later backoff.
	own := newToggleOwnership(16)
	key := keysHashingTo(16, 8, 1)[0]
	cfg := dispatcherTestConfig(own, func(context.Context, string, int) error { return nil })
	cfg.BaseBackoff, cfg.MaxBackoff = time.Hour, 100*time.Hour
	d, err := NewDispatcher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dispatch := func(o outcome) *mailbox[int] {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.ready.head == nil {
			t.Fatal("no key ready")
		}
		task := d.takeLocked()
		d.settleLocked(task.box, o)
		return task.box
	}

	d.Enqueue(key, 1)
	dispatch(retry) // an hour of backoff
	void := d.timers[0].at
	own.lose(8)
	own.gain(8)
	d.Enqueue(key, 2) // readies the key at once, voiding the timer
	dispatch(termEnded)
	dispatch(handled)
	d.Enqueue(key, 3)
	d.baseBackoff = 10 * time.Hour
	box := dispatch(retry) // ten hours of backoff

	if _, ok := d.fireDue(void.Add(time.Second)); !ok {
		t.Fatal("the ten-hour timer fired with the void one")
	}
	if box.state != keyBackoff || d.ready.head != nil {
		t.Fatalf("the void timer readied the key (state %d)", box.state)
	}
}

func TestDispatcherDrainWaitsForItsSlotsOnly(t *testing.T) {
	own := newToggleOwnership(16)
	busyKey, idleKey := keysHashingTo(16, 4, 1)[0], keysHashingTo(16, 9, 1)[0]
	release := make(chan struct{})
	started := make(chan struct{})
	cfg := dispatcherTestConfig(own, func(_ context.Context, key string, _ int) error {
		if key == busyKey {
			close(started)
			<-release
		}
		return nil
	})
	d := startDispatcher(t, cfg)

	d.Enqueue(busyKey, 1)
	awaitClosed(t, started, "the handler of slot 4")
	own.handOver(4)
	d.Enqueue(idleKey, 1)

	ctx, cancel := context.WithTimeout(context.Background(), dispatchTimeout)
	defer cancel()
	if !d.Drain(ctx, []int{9, 10}) {
		t.Fatal("Drain of slots with nothing in flight did not drain")
	}
	short, cancelShort := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancelShort()
	if d.Drain(short, []int{4, 9}) {
		t.Fatal("Drain reported slot 4 drained while its handler runs")
	}

	drained := make(chan bool, 1)
	go func() { drained <- d.Drain(ctx, []int{9, 4}) }()
	close(release)
	select {
	case ok := <-drained:
		if !ok {
			t.Fatal("Drain returned false once the handler returned")
		}
	case <-time.After(dispatchTimeout):
		t.Fatal("Drain did not return after the handler did")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.draining) != 0 {
		t.Fatalf("%d Drain waiters left behind", len(d.draining))
	}
}

func TestDispatcherRecoversHandlerPanic(t *testing.T) {
	var logs logbuf.Buffer
	gaveUp := make(chan error, 1)
	nextDone := make(chan struct{})
	cfg := dispatcherTestConfig(newToggleOwnership(16), func(_ context.Context, _ string, req int) error {
		if req == 1 {
			panic("nil map somewhere")
		}
		close(nextDone)
		return nil
	})
	cfg.MaxRetries = 0
	cfg.OnGiveUp = func(_ string, _ int, err error) { gaveUp <- err }
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Error})
	d := startDispatcher(t, cfg)

	d.Enqueue("ns/boom", 1)
	d.Enqueue("ns/boom", 2)
	select {
	case err := <-gaveUp:
		if err == nil || !strings.Contains(err.Error(), "nil map somewhere") {
			t.Fatalf("OnGiveUp got %v, want the panic as an error", err)
		}
	case <-time.After(dispatchTimeout):
		t.Fatal("timed out waiting for the panicking request to be given up")
	}
	awaitClosed(t, nextDone, "the request after the panic")
	if got := counterValue(t, d.metrics.panics); got != 1 {
		t.Errorf("panics = %v, want 1", got)
	}
	if out := logs.String(); !strings.Contains(out, "ns/boom") || !strings.Contains(out, "panicked") {
		t.Errorf("log does not name the key of the panic:\n%s", out)
	}
}

func TestDispatcherEnqueueAfterDelays(t *testing.T) {
	handled := make(chan int, 2)
	cfg := dispatcherTestConfig(newToggleOwnership(16), func(_ context.Context, _ string, req int) error {
		handled <- req
		return nil
	})
	d := startDispatcher(t, cfg)
	start := time.Now()
	d.EnqueueAfter("ns/a", 1, 30*time.Millisecond)
	d.Enqueue("ns/a", 2)
	for _, want := range []int{2, 1} {
		select {
		case got := <-handled:
			if got != want {
				t.Fatalf("handled %d, want %d", got, want)
			}
		case <-time.After(dispatchTimeout):
			t.Fatalf("timed out waiting for request %d", want)
		}
	}
	if elapsed := time.Since(start); elapsed < 30*time.Millisecond {
		t.Fatalf("delayed request handled after %v, want at least 30ms", elapsed)
	}
}

func TestDispatcherRunStopsAllGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	own := newToggleOwnership(16)
	blocked := keysHashingTo(16, 7, 1)[0]
	started := make(chan struct{})
	cfg := dispatcherTestConfig(own, func(ctx context.Context, key string, req int) error {
		switch {
		case key == blocked:
			close(started)
			<-ctx.Done() // returns only once its slot is lost
			return nil
		case req == 1:
			return errors.New("fails, then waits out a long backoff")
		}
		return nil
	})
	cfg.Workers = 8
	cfg.BaseBackoff = time.Hour
	cfg.MaxBackoff = time.Hour
	d, err := NewDispatcher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		d.Run(ctx)
	}()
	d.Enqueue(blocked, 0)
	awaitClosed(t, started, "the blocking handler")
	for i := range 50 {
		d.Enqueue(fmt.Sprintf("ns/failing-%d", i), 1)
		d.EnqueueAfter(fmt.Sprintf("ns/later-%d", i), 2, time.Hour)
	}
	awaitCondition(t, "the failing keys to back off", func() bool {
		return counterValue(t, d.metrics.retries) == 50
	})

	cancel()
	select {
	case <-stopped:
		t.Fatal("Run returned while a handler was still running")
	case <-time.After(20 * time.Millisecond):
	}
	own.lose(7)
	awaitClosed(t, stopped, "Run to return")
	if got := d.Len(); got != 0 {
		t.Errorf("Len() = %d after Run returned, want 0", got)
	}
	if got := counterValue(t, d.metrics.dropsBy[dropStopped]); got != 100 {
		t.Errorf("dropped stopped = %v, want 100 (50 in backoff, 50 delayed)", got)
	}
	d.Enqueue("ns/late", 3)
	if got := d.Len(); got != 0 {
		t.Errorf("Len() = %d after Enqueue on a stopped dispatcher, want 0", got)
	}
	awaitCondition(t, "goroutines to settle", func() bool { return runtime.NumGoroutine() <= before })
}

func TestNewDispatcherRejectsBadConfig(t *testing.T) {
	good := dispatcherTestConfig(newToggleOwnership(1), func(context.Context, string, int) error { return nil })
	for name, mutate := range map[string]func(*DispatcherConfig[int]){
		"no name":          func(c *DispatcherConfig[int]) { c.Name = "" },
		"no workers":       func(c *DispatcherConfig[int]) { c.Workers = 0 },
		"no ownership":     func(c *DispatcherConfig[int]) { c.Ownership = nil },
		"no handler":       func(c *DispatcherConfig[int]) { c.Handler = nil },
		"retries below -1": func(c *DispatcherConfig[int]) { c.MaxRetries = -2 },
		"no base backoff":  func(c *DispatcherConfig[int]) { c.BaseBackoff = 0 },
		"max below base":   func(c *DispatcherConfig[int]) { c.MaxBackoff = c.BaseBackoff / 2 },
		"wait cap below base": func(c *DispatcherConfig[int]) {
			c.Transient = func(error) bool { return true }
			c.MaxTransientBackoff = c.BaseBackoff / 2
		},
		"zero-value config:": func(c *DispatcherConfig[int]) { *c = DispatcherConfig[int]{} },
	} {
		cfg := good
		mutate(&cfg)
		if _, err := NewDispatcher(cfg); err == nil {
			t.Errorf("%s: NewDispatcher accepted it", name)
		}
	}
	if _, err := NewDispatcher(good); err != nil {
		t.Errorf("NewDispatcher rejected a good config: %v", err)
	}
}

func TestDispatcherRegistersMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	cfg := dispatcherTestConfig(newToggleOwnership(1), func(context.Context, string, int) error { return nil })
	cfg.Registerer = reg
	if _, err := NewDispatcher(cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := NewDispatcher(cfg); err == nil {
		t.Error("a second dispatcher of the same name registered its metrics")
	}
	cfg.Name = "other"
	if _, err := NewDispatcher(cfg); err != nil {
		t.Errorf("a dispatcher of another name: %v", err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(families) == 0 {
		t.Fatal("no metrics gathered")
	}
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "workqueue_") && !strings.HasPrefix(f.GetName(), "ringfire_workqueue_") {
			t.Errorf("metric %s is neither workqueue_* nor ringfire_workqueue_*", f.GetName())
		}
		if n := len(f.GetMetric()); n < 2 {
			t.Errorf("metric %s has %d series, want one per dispatcher at least", f.GetName(), n)
		}
		for _, m := range f.GetMetric() {
			if !hasLabel(m, "name") {
				t.Errorf("metric %s has no name label", f.GetName())
			}
		}
	}
}

// The metrics of a dispatcher that worked, as a scrape reads them: every
// name, labelled with the dispatcher's, with the values of what happened.
func TestDispatcherMetricsCountWhatHappened(t *testing.T) {
	reg := prometheus.NewRegistry()
	release := make(chan struct{})
	cfg := dispatcherTestConfig(newToggleOwnership(1), func(_ context.Context, key string, _ int) error {
		switch key {
		case "slow":
			<-release
		case "failing":
			return errors.New("always fails")
		case "panicking":
			panic("boom")
		}
		return nil
	})
	cfg.Name = "job"
	cfg.Registerer = reg
	cfg.MaxRetries = 1
	cfg.Coalesce = func(queued, incoming int) bool { return queued == incoming }
	d := startDispatcher(t, cfg)

	d.Enqueue("slow", 1)
	awaitCondition(t, "the slow handler to start", func() bool { return d.inFlight() == 1 })
	d.Enqueue("slow", 2) // waits behind the running one
	d.Enqueue("slow", 2) // merged into it
	awaitCondition(t, "the slow handler to have run a while", func() bool {
		g := gatherDispatch(t, reg)
		return g["workqueue_longest_running_processor_seconds"][`name="job"`] > 0
	})
	g := gatherDispatch(t, reg)
	for metric, want := range map[string]float64{
		"workqueue_depth":                    1,
		"ringfire_workqueue_in_flight":       1,
		"workqueue_adds_total":               2,
		"ringfire_workqueue_coalesced_total": 1,
	} {
		if got := g[metric][`name="job"`]; got != want {
			t.Errorf("while the slow key runs, %s = %v, want %v", metric, got, want)
		}
	}
	if u, l := g["workqueue_unfinished_work_seconds"][`name="job"`], g["workqueue_longest_running_processor_seconds"][`name="job"`]; u < l {
		t.Errorf("unfinished work %vs is less than the longest-running handler's %vs", u, l)
	}

	d.Enqueue("failing", 1)   // fails, is retried once, given up
	d.Enqueue("panicking", 1) // panics: a failure, retried once, given up
	close(release)
	awaitCondition(t, "every request to be done", func() bool {
		g := gatherDispatch(t, reg)
		return g["ringfire_workqueue_give_ups_total"][`name="job"`] == 2 && d.Len() == 0 && d.inFlight() == 0
	})
	g = gatherDispatch(t, reg)
	for metric, want := range map[string]float64{
		"workqueue_depth":                             0,
		"ringfire_workqueue_in_flight":                0,
		"workqueue_adds_total":                        4,
		"workqueue_retries_total":                     2,
		"ringfire_workqueue_errors_total":             4,
		"ringfire_workqueue_panics_total":             2,
		"workqueue_work_duration_seconds_count":       6, // slow ×2, failing ×2, panicking ×2
		"workqueue_queue_duration_seconds_count":      4, // first attempts only
		"workqueue_unfinished_work_seconds":           0,
		"workqueue_longest_running_processor_seconds": 0,
	} {
		if got := g[metric][`name="job"`]; got != want {
			t.Errorf("at the end, %s = %v, want %v", metric, got, want)
		}
	}
	for _, reason := range []string{"not_owned", "slot_lost", "stopped"} {
		if _, ok := g["ringfire_workqueue_dropped_total"][`name="job",reason="`+reason+`"`]; !ok {
			t.Errorf("ringfire_workqueue_dropped_total has no series for reason %s", reason)
		}
	}
}

// The in-flight handlers' times are summed and the longest taken at the
// moment of the scrape.
func TestBusyWorkersAtScrape(t *testing.T) {
	b := newBusyWorkers(3)
	now := time.Unix(1000, 0)
	if sum, longest := b.running(now); sum != 0 || longest != 0 {
		t.Fatalf("idle workers: %v, %v", sum, longest)
	}
	b.start(0, now.Add(-3*time.Second))
	b.start(2, now.Add(-time.Second))
	if sum, longest := b.running(now); sum != 4*time.Second || longest != 3*time.Second {
		t.Errorf("two busy workers: sum %v, longest %v; want 4s, 3s", sum, longest)
	}
	b.stop(0)
	if sum, longest := b.running(now); sum != time.Second || longest != time.Second {
		t.Errorf("one busy worker: sum %v, longest %v; want 1s, 1s", sum, longest)
	}
}

// A step of the wall clock while a handler runs, back or forward by a
// minute, does not change how long it is seen to have run: the times are
// measured on the monotonic clock.
func TestBusyWorkersIgnoreWallClockSteps(t *testing.T) {
	for _, step := range []time.Duration{-time.Minute, time.Minute} {
		b := newBusyWorkers(1)
		started := time.Now()
		b.start(0, started)
		now := wallstep.Step(started.Add(2*time.Second), step)
		if sum, longest := b.running(now); sum != 2*time.Second || longest != 2*time.Second {
			t.Errorf("wall step %v: sum %v, longest %v; want 2s, 2s", step, sum, longest)
		}
	}
}

// gatherDispatch gathers reg into metric name → labels ("a=\"x\",b=\"y\"")
// → value; a histogram shows as <name>_count.
func gatherDispatch(t *testing.T, reg *prometheus.Registry) map[string]map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			name, v := f.GetName(), 0.0
			switch {
			case m.Counter != nil:
				v = m.GetCounter().GetValue()
			case m.Gauge != nil:
				v = m.GetGauge().GetValue()
			case m.Histogram != nil:
				name, v = name+"_count", float64(m.GetHistogram().GetSampleCount())
			}
			if out[name] == nil {
				out[name] = map[string]float64{}
			}
			out[name][strings.Join(labels, ",")] = v
		}
	}
	return out
}

func hasLabel(m *dto.Metric, name string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return true
		}
	}
	return false
}

// errTransient is what the tests' Transient calls transient.
var errTransient = errors.New("the API server is busy")

func TestDispatcherRetriesTransientErrorsForeverWithCappedBackoff(t *testing.T) {
	// Far more transient failures than MaxRetries: never given up, and once the
	// backoff reaches the cap it stays there (uncapped, the 20th wait would be
	// 1ms<<19, about 9 minutes).
	const failures = 20
	var calls atomic.Int32
	done := make(chan struct{})
	handler := func(context.Context, string, int) error {
		if calls.Add(1) <= failures {
			return fmt.Errorf("create pod: %w", errTransient)
		}
		close(done)
		return nil
	}
	cfg := dispatcherTestConfig(newToggleOwnership(1), handler)
	cfg.MaxRetries = 2
	cfg.BaseBackoff = time.Millisecond
	cfg.MaxBackoff = time.Hour
	cfg.MaxTransientBackoff = 5 * time.Millisecond
	cfg.Transient = func(err error) bool { return errors.Is(err, errTransient) }
	cfg.OnGiveUp = func(key string, _ int, err error) { t.Errorf("gave up %s on %v", key, err) }
	start := time.Now()
	d := startDispatcher(t, cfg)
	d.Enqueue("ns/a", 1)
	awaitClosed(t, done, "the request to pass after its transient failures")
	// 1+2+4 ms, then 17 waits of 5 ms: about 92 ms. The bound is loose for a
	// loaded machine, yet far below the first uncapped wait of a second (the 11th).
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("%d transient failures took %v: the backoff is not capped", failures, took)
	}
	if got := counterValue(t, d.metrics.giveUps); got != 0 {
		t.Errorf("give-ups = %v, want 0", got)
	}
	if got := counterValue(t, d.metrics.retries); got != failures {
		t.Errorf("retries = %v, want %d", got, failures)
	}
}

func TestDispatcherCountsOnlyPermanentFailuresTowardMaxRetries(t *testing.T) {
	// With MaxRetries 2 the third permanent failure gives up, however many
	// transient ones came between; a transient failure resets nothing.
	script := []error{errTransient, errTransient, errors.New("invalid"), errTransient,
		errors.New("invalid"), errTransient, errTransient, errors.New("invalid")}
	var (
		mu       sync.Mutex
		attempts int
	)
	gaveUp := make(chan int, 1)
	handler := func(context.Context, string, int) error {
		mu.Lock()
		defer mu.Unlock()
		attempts++
		if attempts > len(script) {
			t.Errorf("attempt %d after the give-up", attempts)
			return nil
		}
		return script[attempts-1]
	}
	cfg := dispatcherTestConfig(newToggleOwnership(1), handler)
	cfg.MaxRetries = 2
	cfg.MaxTransientBackoff = 2 * time.Millisecond
	cfg.Transient = func(err error) bool { return errors.Is(err, errTransient) }
	cfg.OnGiveUp = func(_ string, _ int, err error) {
		mu.Lock()
		defer mu.Unlock()
		if errors.Is(err, errTransient) {
			t.Errorf("gave up on a transient error")
		}
		gaveUp <- attempts
	}
	d := startDispatcher(t, cfg)
	d.Enqueue("ns/a", 1)
	select {
	case n := <-gaveUp:
		if n != len(script) {
			t.Errorf("gave up after %d attempts, want %d", n, len(script))
		}
	case <-time.After(dispatchTimeout):
		t.Fatal("timed out waiting for the give-up")
	}
	awaitCondition(t, "the given-up key to be forgotten", func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return len(d.boxes) == 0
	})
}

// TestDispatcherLowLaneWaitsBehindEventsButIsNeverStarved checks EnqueueLow:
// keys of the low lane run after the keys Enqueue made ready, one of them for
// every lowEvery of the others while both wait; an Enqueue moves a low key up
// and leaves its old entry behind, stale, which never runs the key twice,
// not even once its mailbox is reused for another key.
func TestDispatcherLowLaneWaitsBehindEventsButIsNeverStarved(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var order []string
	cfg := dispatcherTestConfig(newToggleOwnership(16), func(_ context.Context, key string, _ int) error {
		if key == "ns/gate" {
			<-release
		}
		mu.Lock()
		order = append(order, strings.TrimPrefix(key, "ns/"))
		mu.Unlock()
		return nil
	})
	cfg.Workers = 1
	d := startDispatcher(t, cfg)
	d.Enqueue("ns/gate", 0)
	awaitCondition(t, "the gate to run", func() bool { return d.inFlight() == 1 })
	for i := range 10 {
		d.EnqueueLow(fmt.Sprintf("ns/l%d", i), 0)
	}
	for i := range 10 {
		d.Enqueue(fmt.Sprintf("ns/h%d", i), 0)
	}
	d.Enqueue("ns/l5", 0) // an event for a low key: it moves up, behind h9
	close(release)
	// l5 has two requests (nothing coalesces here): its second follows in the first lane.
	want := "gate h0 h1 h2 l0 h3 h4 h5 h6 l1 h7 h8 h9 l5 l2 l5 l3 l4 l6 l7 l8 l9"
	awaitCondition(t, "every key to run", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(order) >= len(strings.Fields(want))
	})
	mu.Lock()
	got := strings.Join(order, " ")
	order = nil
	mu.Unlock()
	if got != want {
		t.Fatalf("order:\n got %s\nwant %s", got, want)
	}

	// A stale entry ahead of a reused mailbox's new one.
	release = make(chan struct{})
	d.Enqueue("ns/gate", 0)
	awaitCondition(t, "the gate to run", func() bool { return d.inFlight() == 1 })
	d.EnqueueLow("ns/a", 0)
	d.Enqueue("ns/a", 0)
	close(release)
	awaitCondition(t, "a to run", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(order) == 3
	})
	d.EnqueueLow("ns/b", 0)
	d.EnqueueLow("ns/c", 0)
	awaitCondition(t, "b and c to run", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(order) == 5
	})
	time.Sleep(20 * time.Millisecond) // a key run twice would show up by now
	mu.Lock()
	got = strings.Join(order, " ")
	mu.Unlock()
	if want := "gate a a b c"; got != want {
		t.Fatalf("order: got %s, want %s", got, want)
	}
	if n := d.Len(); n != 0 {
		t.Fatalf("Len = %d after every key ran, want 0", n)
	}
}

// doubtOwnership is a toggleOwnership whose lease can be in doubt (Validity).
type doubtOwnership struct {
	*toggleOwnership
	doubt atomic.Bool
}

func (o *doubtOwnership) Valid() error {
	if o.doubt.Load() {
		return errors.New("fence deadline passed, renewal not answered yet")
	}
	return nil
}

// A request that arrives, or is due, while the lease is in doubt is kept, not dropped, and
// handled once the lease is valid again: nothing else would tell its key again, since the
// slot was never lost.
func TestDispatcherKeepsWorkWhileTheLeaseIsInDoubt(t *testing.T) {
	own := &doubtOwnership{toggleOwnership: newToggleOwnership(4)}
	handled := make(chan string, 4)
	var during atomic.Int32
	cfg := dispatcherTestConfig(own, func(_ context.Context, key string, _ int) error {
		if own.doubt.Load() {
			during.Add(1)
		}
		handled <- key
		return nil
	})
	d := startDispatcher(t, cfg)

	own.doubt.Store(true)
	d.Enqueue("ns/a", 1)
	d.EnqueueAfter("ns/b", 1, 5*time.Millisecond)
	select {
	case key := <-handled:
		t.Fatalf("%s handled while the lease was in doubt", key)
	case <-time.After(100 * time.Millisecond):
	}
	own.doubt.Store(false)
	got := map[string]bool{}
	for range 2 {
		select {
		case key := <-handled:
			got[key] = true
		case <-time.After(dispatchTimeout):
			t.Fatalf("handled %v after the doubt ended, want ns/a and ns/b", got)
		}
	}
	if during.Load() != 0 {
		t.Errorf("%d handlers ran while the lease was in doubt", during.Load())
	}
}
