package shard

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ringfire/ringfire/membership"
)

// txnChunk bounds the operations of one etcd transaction (etcd's default
// limit is 128 per branch).
const txnChunk = 64

// tenure runs the ring protocol for one membership session: from the
// session's start to its end (a fence, a lost lease, or a graceful stop). It
// follows the member set and the slot keys through its store, lets
// decideHandover (handover.go) say what to acquire and what to hand over,
// and carries that out. All its state is owned by the goroutine in run;
// etcd requests run in op goroutines that report back on results.
type tenure struct {
	// What the Manager gives it for the session (Manager.newTenure).
	id           string
	lease        clientv3.LeaseID
	ctx          context.Context // the session's: done when it ends
	slots        int
	store        ringStore
	table        []atomic.Pointer[heldSlot] // the Manager's: what Ownership reads
	drainTimeout time.Duration
	timings      Timings
	drain        func(ctx context.Context, slots []int) bool // every Drainer
	listeners    []Listener
	report       func(st Status, ready bool)
	view         *ringView // the Manager's: every slot's holder and assignee, for Status
	log          hclog.Logger
	metrics      *managerMetrics

	members    []string
	viewRev    int64
	assignment []string          // owner per slot; nil until the first member view
	holders    map[int]keyHolder // slot → its key, from the slot watch
	holdersOK  bool
	freeSince  map[int]time.Time // when a slot was seen free, for the acquire metric
	acquiring  map[int]bool
	discarding map[int]int64 // slot not held here → create revision of its key under this lease being deleted
	deleted    map[int]int64 // slot → create revision of the newest key of it this tenure deleted
	pendingDel []int         // drained or discarded slots whose key delete must be retried
	retryAt    time.Time     // no acquire or delete is tried again until after it
	ops        int
	results    chan opResult
}

type opResult struct {
	acquired      map[int]int64 // slot → epoch
	failedAcquire []int
	released      []int
	failedDelete  []int
	started       time.Time
}

func (t *tenure) run(ctx context.Context) {
	defer t.end()
	watchCtx, stopWatches := context.WithCancel(t.ctx)
	views := t.store.FollowMembers(watchCtx)
	_, _, viewChanged := views.Latest()
	holderCh := make(chan holderUpdate)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); t.store.FollowHolders(watchCtx, t.slots, holderCh) }()
	defer wg.Wait()
	defer stopWatches()
	tick := time.NewTicker(t.timings.Recheck)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			t.shutdown()
			return
		case <-t.ctx.Done():
			t.log.Warn("session ended; dropping all slots at once", "reason", context.Cause(t.ctx))
			return
		case <-viewChanged:
			var v membership.View
			v, _, viewChanged = views.Latest()
			t.setView(v)
		case u := <-holderCh:
			t.applyHolders(u)
		case r := <-t.results:
			t.ops--
			t.apply(r)
		case <-tick.C:
		}
		t.reconcile()
		t.publish()
	}
}

func (t *tenure) setView(v membership.View) {
	ids := v.IDs()
	if t.assignment == nil || !slices.Equal(ids, t.members) {
		t.assignment = Assign(ids, t.slots)
		t.view.setAssignment(t.assignment)
		t.log.Info("member set changed", "members", ids, "revision", v.Revision,
			"assigned_here", Counts(t.assignment)[t.id])
	}
	t.members, t.viewRev = ids, v.Revision
	t.metrics.members.Set(float64(len(ids)))
}

// applyHolders takes a read or a change of the slot keys. A slot stays
// free, for the acquire metric, until this tenure holds it (gain) or its key
// is seen under another lease: a key under this member's lease may be one
// whose acquire has not answered, or never will.
func (t *tenure) applyHolders(u holderUpdate) {
	now := time.Now()
	t.view.applyHolders(u, now)
	if u.reset {
		t.holders = map[int]keyHolder{}
		t.holdersOK = true
	}
	for s, key := range u.holders {
		if key.Lease == 0 {
			delete(t.holders, s)
			t.freeSince[s] = now
		} else {
			t.holders[s] = key
			if key.Lease != t.lease {
				delete(t.freeSince, s)
			}
		}
	}
	if u.reset {
		for s := range t.slots {
			if _, held := t.holders[s]; !held {
				if _, seen := t.freeSince[s]; !seen {
					t.freeSince[s] = now
				}
			}
		}
	}
}

// situation gathers decideHandover's input from the tenure's state.
func (t *tenure) situation(now time.Time) situation {
	held := make([]holdState, t.slots)
	for s := range t.table {
		if h := t.table[s].Load(); h != nil {
			held[s] = holding
			if h.releasing.Load() {
				held[s] = draining
			}
		}
	}
	return situation{
		Me: t.id, Lease: t.lease, Assignment: t.assignment, HoldersRead: t.holdersOK,
		Holders: t.holders, Deleted: t.deleted, Held: held, Acquiring: t.acquiring,
		Discarding: t.discarding, PendingDeletes: t.pendingDel,
		SessionEnded: t.ctx.Err() != nil, Now: now, RetryAt: t.retryAt,
	}
}

// reconcile carries out decideHandover's plan: it stops new work on the
// slots to hand over, holds the slots to adopt at once, and starts
// acquiring, releasing, discarding and deleting again.
func (t *tenure) reconcile() {
	now := time.Now()
	p := decideHandover(t.situation(now))
	releasing := make([]*heldSlot, len(p.Release))
	for i, s := range p.Release {
		releasing[i] = t.table[s].Load()
		releasing[i].releasing.Store(true) // no new work from here on
	}
	if len(p.Adopt) > 0 {
		// What a successful acquire of these keys would have answered: the
		// transaction's revision is each key's create revision.
		adopted := make(map[int]int64, len(p.Adopt))
		for _, s := range p.Adopt {
			adopted[s] = t.holders[s].Created
		}
		t.log.Info("adopting slot keys under this member's lease whose acquire did not answer", "count", len(p.Adopt))
		t.gain(adopted)
	}
	if len(p.Acquire) > 0 {
		for _, s := range p.Acquire {
			t.acquiring[s] = true
		}
		t.start(func() opResult { return t.acquire(p.Acquire) })
	}
	if len(p.Release) > 0 {
		t.log.Debug("handing slots over", "count", len(p.Release))
		t.start(func() opResult { return t.release(p.Release, releasing) })
	}
	if len(p.Discard) > 0 {
		for _, s := range p.Discard {
			t.discarding[s] = t.holders[s].Created
		}
		t.log.Info("deleting slot keys under this member's lease whose acquire did not answer; their slots are assigned elsewhere",
			"count", len(p.Discard))
		t.start(func() opResult { return t.deleteKeys(p.Discard, now) })
	}
	if len(p.Delete) > 0 {
		t.pendingDel = nil
		t.start(func() opResult { return t.deleteKeys(p.Delete, now) })
	}
}

func (t *tenure) start(op func() opResult) {
	t.ops++
	go func() { t.results <- op() }()
}

// apply takes the result of an op into the tenure's state.
func (t *tenure) apply(r opResult) {
	t.gain(r.acquired)
	for _, s := range r.failedAcquire {
		delete(t.acquiring, s)
	}
	if len(r.failedAcquire) > 0 && t.ctx.Err() == nil {
		t.retryAt = time.Now().Add(t.timings.RetryDelay)
	}
	var lost, discarded []int
	for _, s := range r.released {
		if created, ok := t.discarding[s]; ok {
			delete(t.discarding, s)
			t.deleted[s] = max(t.deleted[s], created)
			discarded = append(discarded, s)
		} else if h := t.table[s].Swap(nil); h != nil {
			t.deleted[s] = max(t.deleted[s], h.epoch)
			lost = append(lost, s)
		}
	}
	if len(r.failedDelete) > 0 {
		t.pendingDel = append(t.pendingDel, r.failedDelete...)
		t.retryAt = time.Now().Add(t.timings.RetryDelay)
	}
	if len(discarded) > 0 {
		t.log.Info("deleted slot keys whose acquire did not answer", "count", len(discarded))
	}
	if len(lost) > 0 {
		t.metrics.handovers.WithLabelValues("released").Add(float64(len(lost)))
		t.metrics.release.Observe(time.Since(r.started).Seconds())
		t.log.Debug("released slots", "count", len(lost), "took", time.Since(r.started))
		for _, l := range t.listeners {
			l.SlotsLost(lost)
		}
	}
}

// gain holds the slots whose keys this member created, slot → the key's
// create revision (the epoch): each gets a context derived from the
// session's, the acquire metrics count it, and the listeners hear of them.
// A successful acquire and an adoption both end here.
func (t *tenure) gain(acquired map[int]int64) {
	if len(acquired) == 0 {
		return
	}
	gained := make([]int, 0, len(acquired))
	for s, epoch := range acquired {
		delete(t.acquiring, s)
		ctx, cancel := context.WithCancel(t.ctx)
		t.table[s].Store(&heldSlot{epoch: epoch, ctx: ctx, cancel: cancel})
		gained = append(gained, s)
		if since, ok := t.freeSince[s]; ok {
			t.metrics.acquireLag.Observe(time.Since(since).Seconds())
			delete(t.freeSince, s)
		}
	}
	slices.Sort(gained)
	t.metrics.handovers.WithLabelValues("acquired").Add(float64(len(gained)))
	t.log.Debug("acquired slots", "count", len(gained))
	for _, l := range t.listeners {
		l.SlotsGained(gained)
	}
}

// acquire creates the slot keys under this member's lease, all of a chunk in
// one transaction when all are free, else one by one.
func (t *tenure) acquire(slots []int) opResult {
	r := opResult{acquired: map[int]int64{}}
	for chunk := range slices.Chunk(slots, txnChunk) {
		if t.ctx.Err() != nil {
			r.failedAcquire = append(r.failedAcquire, chunk...)
			continue
		}
		if rev, ok, err := t.store.CreateSlots(t.ctx, chunk, t.id, t.lease); err == nil && ok {
			for _, s := range chunk {
				r.acquired[s] = rev
			}
			continue
		} else if err != nil {
			r.failedAcquire = append(r.failedAcquire, chunk...)
			continue
		}
		for _, s := range chunk {
			if rev, ok, err := t.store.CreateSlots(t.ctx, []int{s}, t.id, t.lease); err == nil && ok {
				r.acquired[s] = rev
			} else {
				r.failedAcquire = append(r.failedAcquire, s)
			}
		}
	}
	return r
}

// release drains the slots' work, cancelling what outlives the drain
// timeout, and then deletes their keys.
func (t *tenure) release(slots []int, hs []*heldSlot) opResult {
	started := time.Now()
	dctx, cancel := context.WithTimeout(t.ctx, t.drainTimeout)
	drained := t.drain(dctx, slots)
	cancel()
	if !drained && t.ctx.Err() == nil {
		t.metrics.drainTimeout.Inc()
		t.log.Warn("in-flight work outlived the drain timeout; cancelling it", "slots", len(slots), "timeout", t.drainTimeout)
		for _, h := range hs {
			h.cancel()
		}
		gctx, cancel := context.WithTimeout(t.ctx, t.timings.CancelGrace)
		if !t.drain(gctx, slots) {
			t.log.Error("cancelled work did not return within the grace; handing the slots over anyway (writes carry preconditions)",
				"slots", len(slots), "grace", t.timings.CancelGrace)
		}
		cancel()
	}
	for _, h := range hs {
		h.cancel()
	}
	return t.deleteKeys(slots, started)
}

// deleteKeys deletes slot keys still held under this member's lease; a key
// that is not (any more) counts as released.
func (t *tenure) deleteKeys(slots []int, started time.Time) opResult {
	r := opResult{started: started}
	for chunk := range slices.Chunk(slots, txnChunk) {
		if err := t.deleteChunk(chunk); err != nil {
			if t.ctx.Err() == nil {
				t.log.Warn("cannot delete slot keys; will retry", "slots", len(chunk), "error", err)
			}
			r.failedDelete = append(r.failedDelete, chunk...)
			continue
		}
		r.released = append(r.released, chunk...)
	}
	return r
}

// deleteChunk deletes the slots' keys in one transaction if every one is
// still under this member's lease, else each alone.
func (t *tenure) deleteChunk(slots []int) error {
	deleted, err := t.store.DeleteSlots(t.ctx, slots, t.lease)
	if err != nil || deleted || len(slots) == 1 {
		return err // a single key no longer ours is gone already
	}
	for _, s := range slots {
		if err := t.deleteChunk([]int{s}); err != nil {
			return err
		}
	}
	return nil
}

// shutdown hands every slot over on a graceful stop: the member key goes
// first so the others recompute at once, then all work drains; the lease
// revoke that follows (when the Member stops) deletes every slot key in one
// step.
func (t *tenure) shutdown() {
	if err := t.store.Withdraw(t.ctx); err != nil {
		t.log.Warn("cannot withdraw from the member set; the others see the leave when the lease is revoked", "error", err)
	}
	for s := range t.table {
		if h := t.table[s].Load(); h != nil {
			h.releasing.Store(true)
		}
	}
	for t.ops > 0 {
		r := <-t.results
		t.ops--
		t.apply(r)
	}
	var slots []int
	for s := range t.table {
		if h := t.table[s].Load(); h != nil {
			h.releasing.Store(true)
			slots = append(slots, s)
		}
	}
	dctx, cancel := context.WithTimeout(t.ctx, t.drainTimeout)
	if !t.drain(dctx, slots) {
		t.log.Warn("in-flight work outlived the drain timeout on stop; cancelling it", "timeout", t.drainTimeout)
	}
	cancel()
	t.log.Info("drained all slots; leaving the ring", "slots", len(slots))
}

// end drops every slot held in this tenure: their contexts are cancelled
// and listeners learn they are lost.
func (t *tenure) end() {
	for t.ops > 0 {
		r := <-t.results
		t.ops--
		t.apply(r)
	}
	var lost []int
	for s := range t.table {
		if h := t.table[s].Swap(nil); h != nil {
			h.cancel()
			lost = append(lost, s)
		}
	}
	if len(lost) > 0 {
		for _, l := range t.listeners {
			l.SlotsLost(lost)
		}
	}
	t.publish()
}

// publish refreshes the Manager's status, metrics and readiness.
func (t *tenure) publish() {
	st := Status{ID: t.id, Slots: t.slots, Members: t.members, Revision: t.viewRev}
	for s := range t.table {
		if t.table[s].Load() != nil {
			st.Held = append(st.Held, s)
		}
		if t.assignment != nil && t.assignment[s] == t.id {
			st.Assigned++
		}
	}
	if t.holdersOK {
		st.Orphaned = t.slots - len(t.holders)
	}
	t.metrics.ringSlots.Set(float64(t.slots))
	t.metrics.owned.Set(float64(len(st.Held)))
	t.metrics.assigned.Set(float64(st.Assigned))
	t.metrics.orphaned.Set(float64(st.Orphaned))
	t.report(st, t.assignment != nil && t.holdersOK && t.ctx.Err() == nil)
}
