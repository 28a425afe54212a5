package shard

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ringfire/ringfire/internal/etcdloop"
)

// fakeStore keeps slot keys in memory with the conditions ringStore
// promises: a create succeeds only if no key of it exists, a delete only if
// every key is under the given lease. The watches are not used here.
type fakeStore struct {
	ringStore // FollowHolders, FollowMembers, Withdraw: not called

	mu      sync.Mutex
	keys    map[int]clientv3.LeaseID
	rev     int64
	err     error   // when set, every request fails with it
	creates [][]int // the slots of each CreateSlots call
	deletes [][]int // the slots of each DeleteSlots call
}

func newFakeStore() *fakeStore { return &fakeStore{keys: map[int]clientv3.LeaseID{}, rev: 1} }

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
		drain: rec.Drain, listeners: []Listener{rec}, report: func(Status, bool) {},
		log: hclog.NewNullLogger(), metrics: newManagerMetrics(nil),
		holders: map[int]clientv3.LeaseID{}, freeSince: map[int]time.Time{}, acquiring: map[int]bool{},
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
func TestTenureReconcileAcquiresAndHandsOver(t *testing.T) {
	store := newFakeStore()
	store.keys[3] = 2 // still held by the member it was assigned to before
	rec := &recorder{}
	tn := testTenure(t, store, 8, rec)
	tn.assignment = []string{"me", "me", "me", "me", "b", "b", "b", "b"}
	tn.applyHolders(holderUpdate{reset: true, holders: store.holders()})
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

	store.mu.Lock()
	delete(store.keys, 3) // the other member lets go, and the watch says so
	store.mu.Unlock()
	tn.applyHolders(holderUpdate{holders: map[int]clientv3.LeaseID{3: 0}})
	step()
	if got := heldSlots(tn); !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("held %v, want [1 2 3]", got)
	}
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

// A zero Timings takes the documented defaults (docs/design.md, timings).
func TestManagerTimingsDefaults(t *testing.T) {
	got := Timings{}.orDefault()
	if got.Recheck != 500*time.Millisecond || got.RetryDelay != 250*time.Millisecond || got.CancelGrace != time.Second ||
		got.WatchRetry.Min != 50*time.Millisecond || got.WatchRetry.Max != 2*time.Second ||
		got.RingRetry.Min != 100*time.Millisecond || got.RingRetry.Max != 5*time.Second {
		t.Errorf("defaults %+v", got)
	}
	set := Timings{Recheck: time.Second, RingRetry: etcdloop.Backoff{Min: time.Second}}.orDefault()
	if set.Recheck != time.Second || set.RingRetry.Min != time.Second || set.RingRetry.Max != 5*time.Second {
		t.Errorf("a set field was not kept: %+v", set)
	}
}
