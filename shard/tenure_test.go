package shard

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	dto "github.com/prometheus/client_model/go"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ringfire/ringfire/internal/etcdloop"
	"github.com/ringfire/ringfire/membership"
)

// fakeStore keeps slot keys in memory with the conditions ringStore
// promises: a create succeeds only if no key of it exists, a delete only if
// every key is under the given lease. The watches are not used here: a test
// hands the tenure what they would send (read).
type fakeStore struct {
	ringStore // FollowHolders, FollowMembers, Withdraw: not called

	mu      sync.Mutex
	keys    map[int]clientv3.LeaseID
	created map[int]int64 // create revision of each key CreateSlots put
	rev     int64
	err     error // when set, every request fails with it
	// loseAnswers: a create that succeeds puts its keys and then reports
	// an error, as a client timing out after etcd applied the transaction
	// would.
	loseAnswers bool
	creates     [][]int // the slots of each CreateSlots call
	deletes     [][]int // the slots of each DeleteSlots call
}

var errAnswerLost = errors.New("acquire slots: context deadline exceeded")

func newFakeStore() *fakeStore {
	return &fakeStore{keys: map[int]clientv3.LeaseID{}, created: map[int]int64{}, rev: 1}
}

func (f *fakeStore) CreateSlots(_ context.Context, slots []int, _ string, lease clientv3.LeaseID) (int64, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.creates = append(f.creates, slices.Clone(slots))
	if f.err != nil {
		return 0, false, f.err
	}
	f.rev++
	for _, s := range slots {
		if f.keys[s] != 0 {
			return f.rev, false, nil
		}
	}
	for _, s := range slots {
		f.keys[s] = lease
		f.created[s] = f.rev
	}
	if f.loseAnswers {
		return 0, false, errAnswerLost
	}
	return f.rev, true, nil
}

func (f *fakeStore) DeleteSlots(_ context.Context, slots []int, lease clientv3.LeaseID) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deletes = append(f.deletes, slices.Clone(slots))
	if f.err != nil {
		return false, f.err
	}
	f.rev++
	for _, s := range slots {
		if f.keys[s] != lease {
			return false, nil
		}
	}
	for _, s := range slots {
		delete(f.keys, s)
	}
	return true, nil
}

// read is what a full read of the slot keys would send.
func (f *fakeStore) read() map[int]keyHolder {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := make(map[int]keyHolder, len(f.keys))
	for s, l := range f.keys {
		h[s] = keyHolder{Lease: l, Created: f.created[s]}
	}
	return h
}

func (f *fakeStore) holders() map[int]clientv3.LeaseID {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := make(map[int]clientv3.LeaseID, len(f.keys))
	for s, l := range f.keys {
		h[s] = l
	}
	return h
}

// recorder is a Listener and a Drainer that records what it is told.
type recorder struct {
	mu           sync.Mutex
	gained, lost [][]int
	drained      [][]int
}

func (r *recorder) SlotsGained(s []int) { r.mu.Lock(); r.gained = append(r.gained, s); r.mu.Unlock() }
func (r *recorder) SlotsLost(s []int)   { r.mu.Lock(); r.lost = append(r.lost, s); r.mu.Unlock() }
func (r *recorder) Drain(_ context.Context, s []int) bool {
	r.mu.Lock()
	r.drained = append(r.drained, s)
	r.mu.Unlock()
	return true
}

const testLease = clientv3.LeaseID(1)

// testTenure is a tenure of member "me" under testLease over store, with
// slots slots and no watches running.
func testTenure(t *testing.T, store ringStore, slots int, rec *recorder) *tenure {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return &tenure{
		id: "me", lease: testLease, ctx: ctx, slots: slots,
		store: store, table: make([]atomic.Pointer[heldSlot], slots),
		drainTimeout: time.Second, timings: DefaultTimings(),
		drain: rec.Drain, listeners: []Listener{rec}, report: func(Status, bool) {}, view: newRingView(slots),
		log: hclog.NewNullLogger(), metrics: noMetrics(t),
		holders: map[int]keyHolder{}, freeSince: map[int]time.Time{}, acquiring: map[int]bool{},
		discarding: map[int]int64{}, deleted: map[int]int64{},
		results: make(chan opResult),
	}
}

func upTo(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// Slots are acquired a chunk per transaction; a chunk with a key already
// held falls back to one transaction per key, and only the held key fails.
func TestTenureAcquireChunksAndFallsBackToSingleKeys(t *testing.T) {
	store := newFakeStore()
	store.keys[70] = 2 // another member's
	tn := testTenure(t, store, 150, &recorder{})
	r := tn.acquire(upTo(150))
	if !slices.Equal(r.failedAcquire, []int{70}) {
		t.Errorf("failed %v, want [70]", r.failedAcquire)
	}
	if len(r.acquired) != 149 {
		t.Errorf("acquired %d slots, want 149", len(r.acquired))
	}
	if store.keys[70] != 2 {
		t.Errorf("slot 70's key is under lease %d, want it left to lease 2", store.keys[70])
	}
	// One transaction for 0..63, one failed for 64..127 and then 64 alone,
	// one for 128..149.
	if n := len(store.creates); n != 1+1+txnChunk+1 {
		t.Errorf("%d create transactions, want %d", n, 1+1+txnChunk+1)
	}
	if r.acquired[0] != r.acquired[63] || r.acquired[0] == r.acquired[128] {
		t.Errorf("epochs %d, %d, %d: a chunk's slots share its transaction's revision", r.acquired[0], r.acquired[63], r.acquired[128])
	}
}

// A request that fails fails its whole chunk, with no key tried alone.
func TestTenureAcquireFailsAChunkOnAnError(t *testing.T) {
	store := newFakeStore()
	store.err = errors.New("etcd unreachable")
	tn := testTenure(t, store, 10, &recorder{})
	r := tn.acquire(upTo(10))
	if len(r.acquired) != 0 || !slices.Equal(r.failedAcquire, upTo(10)) || len(store.creates) != 1 {
		t.Errorf("acquired %v, failed %v after %d requests; want none, all, 1", r.acquired, r.failedAcquire, len(store.creates))
	}
}

// A release deletes only keys still under this member's lease. A key that
// another lease holds, or that is gone, counts as released and is left as it
// is.
func TestTenureReleasesOnlyKeysUnderItsLease(t *testing.T) {
	store := newFakeStore()
	for s := range 100 {
		store.keys[s] = testLease
	}
	store.keys[5] = 2     // taken by another lease meanwhile
	delete(store.keys, 6) // gone already
	tn := testTenure(t, store, 100, &recorder{})
	r := tn.deleteKeys(upTo(100), time.Now())
	if !slices.Equal(r.released, upTo(100)) || len(r.failedDelete) != 0 {
		t.Errorf("released %v, failed %v; want all released", r.released, r.failedDelete)
	}
	if got := store.holders(); len(got) != 1 || got[5] != 2 {
		t.Errorf("keys left %v, want only slot 5 under lease 2", got)
	}
	// 0..63 fails as a whole and goes key by key; 64..99 in one.
	if n := len(store.deletes); n != 1+txnChunk+1 {
		t.Errorf("%d delete transactions, want %d", n, 1+txnChunk+1)
	}
}

// A delete that fails is reported for a retry, and leaves the keys.
func TestTenureDeleteFailureIsRetried(t *testing.T) {
	store := newFakeStore()
	for s := range 3 {
		store.keys[s] = testLease
	}
	store.err = errors.New("etcd unreachable")
	tn := testTenure(t, store, 3, &recorder{})
	r := tn.deleteKeys(upTo(3), time.Now())
	if len(r.released) != 0 || !slices.Equal(r.failedDelete, upTo(3)) {
		t.Fatalf("released %v, failed %v; want none, all", r.released, r.failedDelete)
	}
	before := time.Now()
	tn.apply(r)
	if !slices.Equal(tn.pendingDel, upTo(3)) || tn.retryAt.Before(before.Add(tn.timings.RetryDelay)) {
		t.Fatalf("pending %v, retry at %v; want all three, no sooner than RetryDelay from now", tn.pendingDel, tn.retryAt)
	}
	if p := decideHandover(tn.situation(time.Now())); len(p.Delete) != 0 {
		t.Errorf("deletes tried again within the retry delay: %v", p.Delete)
	}
	store.err = nil
	tn.assignment, tn.holdersOK = []string{"b", "b", "b"}, true
	tn.retryAt = time.Now().Add(-time.Nanosecond)
	tn.reconcile()
	tn.ops--
	tn.apply(<-tn.results)
	if len(store.holders()) != 0 || len(tn.pendingDel) != 0 {
		t.Errorf("after the retry: keys %v, pending %v; want none", store.holders(), tn.pendingDel)
	}
}

// reconcile carries the plan out: it acquires the free slots assigned here,
// waits for one still held elsewhere, and hands over a slot assigned away,
// marking it releasing before anything else and telling the listeners after.
// A key it released, still in a read that lags behind the delete, is not
// taken for a key of its own to adopt.
func TestTenureReconcileAcquiresAndHandsOver(t *testing.T) {
	store := newFakeStore()
	store.keys[3] = 2 // still held by the member it was assigned to before
	rec := &recorder{}
	tn := testTenure(t, store, 8, rec)
	tn.assignment = []string{"me", "me", "me", "me", "b", "b", "b", "b"}
	tn.applyHolders(holderUpdate{reset: true, holders: store.read()})
	step := func() {
		t.Helper()
		tn.reconcile()
		if tn.ops != 1 {
			t.Fatalf("%d ops started, want 1", tn.ops)
		}
		tn.ops--
		tn.apply(<-tn.results)
	}

	step()
	if got := heldSlots(tn); !slices.Equal(got, []int{0, 1, 2}) {
		t.Fatalf("held %v, want [0 1 2]", got)
	}
	if len(rec.gained) != 1 || !slices.Equal(rec.gained[0], []int{0, 1, 2}) {
		t.Fatalf("listeners gained %v, want [[0 1 2]]", rec.gained)
	}
	if tn.reconcile(); tn.ops != 0 {
		t.Fatalf("%d ops started with slot 3 still held by another lease, want none", tn.ops)
	}

	tn.assignment[0] = "b"
	h := tn.table[0].Load()
	tn.reconcile()
	if !h.releasing.Load() {
		t.Fatal("slot 0 not marked releasing when its handover started")
	}
	tn.ops--
	tn.apply(<-tn.results)
	if got := heldSlots(tn); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("held %v after the handover, want [1 2]", got)
	}
	if h.ctx.Err() == nil {
		t.Error("the released slot's context is live")
	}
	if len(rec.drained) != 1 || !slices.Equal(rec.drained[0], []int{0}) || len(rec.lost) != 1 || !slices.Equal(rec.lost[0], []int{0}) {
		t.Errorf("drained %v, lost %v; want [[0]] each", rec.drained, rec.lost)
	}
	if _, ok := store.holders()[0]; ok {
		t.Error("slot 0's key is still there")
	}
	// A read lagging behind the delete still shows slot 0's key under this
	// lease when slot 0 comes back here: that key is gone, it is not
	// adopted; the tenure waits for the delete to be seen.
	tn.applyHolders(holderUpdate{holders: map[int]keyHolder{0: {Lease: testLease, Created: h.epoch}}})
	tn.assignment[0] = "me"
	if p := decideHandover(tn.situation(time.Now())); !slices.Equal(p.Wait, []int{0, 3}) || len(p.Adopt) != 0 {
		t.Fatalf("plan %+v for the released key still in the read, want a wait for slot 0 (and slot 3)", p)
	}
	tn.assignment[0] = "b"

	store.mu.Lock()
	delete(store.keys, 3) // the other member lets go, and the watch says so
	store.mu.Unlock()
	tn.applyHolders(holderUpdate{holders: map[int]keyHolder{3: {}}})
	step()
	if got := heldSlots(tn); !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("held %v, want [1 2 3]", got)
	}
}

// An acquire whose transaction commits but whose answer is lost leaves keys
// under this member's lease that its table does not have. Once the watch of
// the slot keys shows them, the tenure holds those assigned here as a
// successful acquire would have (the keys' create revisions as epochs, live
// contexts, the listeners and the metrics told), at once and while its
// session goes on, not when the lease ends. A key so left of a slot assigned
// elsewhere meanwhile is deleted with no listener told, and a read lagging
// behind that delete is not taken for the key.
func TestTenureAdoptsTheKeysOfAnAcquireWhoseAnswerWasLost(t *testing.T) {
	store := newFakeStore()
	store.loseAnswers = true
	rec := &recorder{}
	tn := testTenure(t, store, 4, rec)
	tn.assignment = []string{"me", "me", "me", "b"}
	tn.applyHolders(holderUpdate{reset: true, holders: store.read()})
	step := func() {
		t.Helper()
		tn.reconcile()
		if tn.ops != 1 {
			t.Fatalf("%d ops started, want 1", tn.ops)
		}
		tn.ops--
		tn.apply(<-tn.results)
	}

	step() // the create commits, its answer is lost
	if got := heldSlots(tn); len(got) != 0 {
		t.Fatalf("held %v after an acquire that failed, want none", got)
	}
	if got := store.holders(); len(got) != 3 || got[0] != testLease || got[1] != testLease || got[2] != testLease {
		t.Fatalf("keys %v, want slots 0, 1, 2 under this member's lease", got)
	}
	// The retry delay passes before the watch shows the keys: the acquire
	// is tried again and finds them held.
	tn.retryAt = time.Now().Add(-time.Nanosecond)
	step()
	if got := heldSlots(tn); len(got) != 0 || len(rec.gained) != 0 {
		t.Fatalf("held %v, gained %v after a second acquire that found the keys held; want none", got, rec.gained)
	}

	// Slot 2 is assigned elsewhere, then the watch shows the keys: slots 0
	// and 1 are held at once, within the retry delay, with no request to
	// etcd, and slot 2's key is deleted.
	tn.assignment[2] = "b"
	tn.applyHolders(holderUpdate{holders: store.read()})
	creates := len(store.creates)
	tn.reconcile()
	if got := heldSlots(tn); !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("held %v once the keys were seen, want [0 1]", got)
	}
	if len(store.creates) != creates {
		t.Errorf("%d more creates for an adoption, want none", len(store.creates)-creates)
	}
	for _, s := range []int{0, 1} {
		h := tn.table[s].Load()
		if h.epoch != store.created[s] || h.ctx.Err() != nil || h.releasing.Load() {
			t.Errorf("slot %d: epoch %d, context %v, releasing %v; want epoch %d (its key's create revision), live, not releasing",
				s, h.epoch, h.ctx.Err(), h.releasing.Load(), store.created[s])
		}
	}
	if len(rec.gained) != 1 || !slices.Equal(rec.gained[0], []int{0, 1}) {
		t.Errorf("listeners gained %v, want [[0 1]]", rec.gained)
	}
	if n := handovers(t, tn, "acquired"); n != 2 {
		t.Errorf("%v slots counted acquired, want 2", n)
	}
	var lag dto.Metric
	if err := tn.metrics.acquireLag.Write(&lag); err != nil || lag.GetHistogram().GetSampleCount() != 2 {
		t.Errorf("%d acquire durations observed (%v), want 2", lag.GetHistogram().GetSampleCount(), err)
	}
	if tn.ops != 1 {
		t.Fatalf("%d ops started, want 1: the delete of slot 2's key", tn.ops)
	}
	created2 := store.created[2]
	tn.ops--
	tn.apply(<-tn.results)
	if _, ok := store.holders()[2]; ok {
		t.Fatal("slot 2's key, assigned elsewhere, is still there")
	}
	if len(rec.gained) != 1 || len(rec.lost) != 0 || len(rec.drained) != 0 || !slices.Equal(heldSlots(tn), []int{0, 1}) {
		t.Errorf("gained %v, lost %v, drained %v, held %v after the delete of a key never held; want only [[0 1]] gained",
			rec.gained, rec.lost, rec.drained, heldSlots(tn))
	}
	if n := handovers(t, tn, "released"); n != 0 {
		t.Errorf("%v slots counted released, want 0", n)
	}

	// Slot 2 comes back here while the watch still shows its deleted key:
	// that key is not adopted, the tenure waits for the delete to be seen.
	tn.assignment[2] = "me"
	tn.applyHolders(holderUpdate{holders: map[int]keyHolder{2: {Lease: testLease, Created: created2}}})
	if p := decideHandover(tn.situation(time.Now())); !slices.Equal(p.Wait, []int{2}) || len(p.Adopt) != 0 {
		t.Fatalf("plan %+v for a deleted key still in the read, want a wait for slot 2", p)
	}
	tn.applyHolders(holderUpdate{holders: map[int]keyHolder{2: {}}})
	store.loseAnswers = false
	tn.retryAt = time.Time{}
	step()
	if got := heldSlots(tn); !slices.Equal(got, []int{0, 1, 2}) {
		t.Fatalf("held %v, want [0 1 2]", got)
	}
	if e := tn.table[2].Load().epoch; e != store.created[2] || e <= created2 {
		t.Errorf("slot 2's epoch %d, want its new key's create revision %d", e, store.created[2])
	}
	if tn.ctx.Err() != nil {
		t.Error("the session ended")
	}
}

// handovers is the tenure's count of slots acquired or released.
func handovers(t *testing.T, tn *tenure, direction string) float64 {
	t.Helper()
	var m dto.Metric
	if err := tn.metrics.handovers.WithLabelValues(direction).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func heldSlots(t *tenure) []int {
	var held []int
	for s := range t.table {
		if t.table[s].Load() != nil {
			held = append(held, s)
		}
	}
	return held
}

// DefaultManagerConfig has the documented defaults (docs/design.md,
// timings), and Validate refuses a zero wait instead of filling it in.
func TestManagerConfigDefaults(t *testing.T) {
	cfg := DefaultManagerConfig()
	got := cfg.Timings
	if cfg.DrainTimeout != 5*time.Second || cfg.RequestTimeout != 5*time.Second || cfg.Logger == nil {
		t.Errorf("defaults %+v", cfg)
	}
	if got.Recheck != 500*time.Millisecond || got.RetryDelay != 250*time.Millisecond || got.CancelGrace != time.Second ||
		got.WatchRetry.Min != 50*time.Millisecond || got.WatchRetry.Max != 2*time.Second ||
		got.RingRetry.Min != 100*time.Millisecond || got.RingRetry.Max != 5*time.Second {
		t.Errorf("default timings %+v", got)
	}
	for name, change := range map[string]func(*ManagerConfig){
		"no client":          func(c *ManagerConfig) { c.Client = nil },
		"no drain timeout":   func(c *ManagerConfig) { c.DrainTimeout = 0 },
		"no request timeout": func(c *ManagerConfig) { c.RequestTimeout = 0 },
		"zero timings":       func(c *ManagerConfig) { c.Timings = Timings{} },
		"shrinking backoff": func(c *ManagerConfig) {
			c.Timings.RingRetry = etcdloop.Backoff{Min: time.Second, Max: time.Millisecond}
		},
		"negative slots":      func(c *ManagerConfig) { c.Slots = -1 },
		"no logger":           func(c *ManagerConfig) { c.Logger = nil },
		"valid (no change)":   func(*ManagerConfig) {},
		"valid (more slots)":  func(c *ManagerConfig) { c.Slots = 64 },
		"valid (long drains)": func(c *ManagerConfig) { c.DrainTimeout = time.Minute },
	} {
		t.Run(name, func(t *testing.T) {
			cfg := DefaultManagerConfig()
			cfg.Client, cfg.Member = &clientv3.Client{}, &membership.Member{}
			change(&cfg)
			before := cfg
			err := cfg.Validate()
			if valid := strings.HasPrefix(name, "valid"); (err == nil) != valid {
				t.Errorf("Validate = %v, want valid %v", err, valid)
			}
			if !reflect.DeepEqual(before, cfg) {
				t.Errorf("Validate changed the config: %+v, was %+v", cfg, before)
			}
		})
	}
}

// noMetrics is a Manager's metrics registered nowhere.
func noMetrics(t *testing.T) *managerMetrics {
	t.Helper()
	m, err := newManagerMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
