package shard

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ringfire/ringfire/membership"
)

// txnChunk bounds the operations of one etcd transaction (etcd's default
// limit is 128 per branch).
const txnChunk = 64

// tenure runs the ring protocol for one membership session: from the
// session's start to its end (a fence, a lost lease, or a graceful stop).
// All its state is owned by the goroutine in run; etcd requests run in op
// goroutines that report back on results.
type tenure struct {
	m     *Manager
	sess  *membership.Session
	ctx   context.Context // the session's: done when it ends
	id    string
	slots int

	members    []string
	viewRev    int64
	assignment []string                 // owner per slot; nil until the first member view
	holders    map[int]clientv3.LeaseID // slot → holder's lease, from the slot watch
	holdersOK  bool
	freeSince  map[int]time.Time // when a slot was seen free, for the acquire metric
	acquiring  map[int]bool
	pendingDel []int // drained slots whose key delete must be retried
	retryAt    time.Time
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

type holderUpdate struct {
	reset   bool
	holders map[int]clientv3.LeaseID // on reset: all holders; else changes, 0 = deleted
}

func newTenure(m *Manager, sess *membership.Session) *tenure {
	return &tenure{
		m: m, sess: sess, ctx: sess.Context(), id: sess.ID, slots: m.Slots(),
		holders:   map[int]clientv3.LeaseID{},
		freeSince: map[int]time.Time{},
		acquiring: map[int]bool{},
		results:   make(chan opResult),
	}
}

func (t *tenure) run(ctx context.Context) {
	defer t.end()
	watchCtx, stopWatches := context.WithCancel(t.ctx)
	views := membership.Watch(watchCtx, t.m.cfg.Client, t.m.cfg.Prefix, t.m.log)
	_, _, viewChanged := views.Latest()
	holderCh := make(chan holderUpdate)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); t.watchHolders(watchCtx, holderCh) }()
	defer wg.Wait()
	defer stopWatches()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			t.shutdown()
			return
		case <-t.ctx.Done():
			t.m.log.Warn("session ended; dropping all slots at once", "reason", context.Cause(t.ctx))
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
		t.m.log.Info("member set changed", "members", ids, "revision", v.Revision,
			"assigned_here", Counts(t.assignment)[t.id])
	}
	t.members, t.viewRev = ids, v.Revision
	t.m.metrics.members.Set(float64(len(ids)))
}

func (t *tenure) applyHolders(u holderUpdate) {
	now := time.Now()
	if u.reset {
		t.holders = map[int]clientv3.LeaseID{}
		t.holdersOK = true
	}
	for s, lease := range u.holders {
		if lease == 0 {
			delete(t.holders, s)
			t.freeSince[s] = now
		} else {
			t.holders[s] = lease
			delete(t.freeSince, s)
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

// reconcile starts acquiring the free slots assigned here and handing over
// the held slots assigned elsewhere.
func (t *tenure) reconcile() {
	if t.assignment == nil || !t.holdersOK || t.ctx.Err() != nil {
		return
	}
	table := *t.m.table.Load()
	var acquire, release []int
	var releasing []*heldSlot
	for s := range t.slots {
		h := table[s].Load()
		mine := t.assignment[s] == t.id
		switch {
		case h == nil && mine && !t.acquiring[s] && t.holders[s] == 0:
			acquire = append(acquire, s)
		case h != nil && !mine && !h.releasing.Load():
			h.releasing.Store(true) // no new work from here on
			release = append(release, s)
			releasing = append(releasing, h)
		}
	}
	if len(acquire) > 0 && time.Now().After(t.retryAt) {
		for _, s := range acquire {
			t.acquiring[s] = true
		}
		t.start(func() opResult { return t.acquire(acquire) })
	}
	if len(release) > 0 {
		t.m.log.Debug("handing slots over", "count", len(release))
		t.start(func() opResult { return t.release(release, releasing) })
	}
	if len(t.pendingDel) > 0 && time.Now().After(t.retryAt) {
		pending := t.pendingDel
		t.pendingDel = nil
		t.start(func() opResult { return t.deleteKeys(pending, time.Now()) })
	}
}

func (t *tenure) start(op func() opResult) {
	t.ops++
	go func() { t.results <- op() }()
}

// apply takes the result of an op into the tenure's state.
func (t *tenure) apply(r opResult) {
	table := *t.m.table.Load()
	var gained []int
	for s, epoch := range r.acquired {
		delete(t.acquiring, s)
		ctx, cancel := context.WithCancel(t.ctx)
		table[s].Store(&heldSlot{epoch: epoch, ctx: ctx, cancel: cancel})
		gained = append(gained, s)
		if since, ok := t.freeSince[s]; ok {
			t.m.metrics.acquireLag.Observe(time.Since(since).Seconds())
		}
	}
	for _, s := range r.failedAcquire {
		delete(t.acquiring, s)
	}
	if len(r.failedAcquire) > 0 && t.ctx.Err() == nil {
		t.retryAt = time.Now().Add(250 * time.Millisecond)
	}
	for _, s := range r.released {
		table[s].Store(nil)
	}
	if len(r.failedDelete) > 0 {
		t.pendingDel = append(t.pendingDel, r.failedDelete...)
		t.retryAt = time.Now().Add(250 * time.Millisecond)
	}
	if len(gained) > 0 {
		slices.Sort(gained)
		t.m.metrics.handovers.WithLabelValues("acquired").Add(float64(len(gained)))
		t.m.log.Debug("acquired slots", "count", len(gained))
		for _, l := range t.m.listeners {
			l.SlotsGained(gained)
		}
	}
	if len(r.released) > 0 {
		t.m.metrics.handovers.WithLabelValues("released").Add(float64(len(r.released)))
		t.m.metrics.release.Observe(time.Since(r.started).Seconds())
		t.m.log.Debug("released slots", "count", len(r.released), "took", time.Since(r.started))
		for _, l := range t.m.listeners {
			l.SlotsLost(r.released)
		}
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
		if rev, ok, err := t.createKeys(chunk); err == nil && ok {
			for _, s := range chunk {
				r.acquired[s] = rev
			}
			continue
		} else if err != nil {
			r.failedAcquire = append(r.failedAcquire, chunk...)
			continue
		}
		for _, s := range chunk {
			if rev, ok, err := t.createKeys([]int{s}); err == nil && ok {
				r.acquired[s] = rev
			} else {
				r.failedAcquire = append(r.failedAcquire, s)
			}
		}
	}
	return r
}

func (t *tenure) createKeys(slots []int) (rev int64, ok bool, err error) {
	cmps := make([]clientv3.Cmp, len(slots))
	puts := make([]clientv3.Op, len(slots))
	for i, s := range slots {
		k := slotKey(t.m.cfg.Prefix, s)
		cmps[i] = clientv3.Compare(clientv3.CreateRevision(k), "=", 0)
		puts[i] = clientv3.OpPut(k, t.id, clientv3.WithLease(t.sess.Lease))
	}
	ctx, cancel := context.WithTimeout(t.ctx, t.m.cfg.RequestTimeout)
	defer cancel()
	resp, err := t.m.cfg.Client.Txn(ctx).If(cmps...).Then(puts...).Commit()
	if err != nil {
		return 0, false, fmt.Errorf("acquire slots: %w", err)
	}
	return resp.Header.Revision, resp.Succeeded, nil
}

// release drains the slots' work, cancelling what outlives the drain
// timeout, and then deletes their keys.
func (t *tenure) release(slots []int, hs []*heldSlot) opResult {
	started := time.Now()
	dctx, cancel := context.WithTimeout(t.ctx, t.m.cfg.DrainTimeout)
	drained := t.m.drain(dctx, slots)
	cancel()
	if !drained && t.ctx.Err() == nil {
		t.m.metrics.drainTimeout.Inc()
		t.m.log.Warn("in-flight work outlived the drain timeout; cancelling it", "slots", len(slots), "timeout", t.m.cfg.DrainTimeout)
		for _, h := range hs {
			h.cancel()
		}
		gctx, cancel := context.WithTimeout(t.ctx, time.Second)
		if !t.m.drain(gctx, slots) {
			t.m.log.Error("cancelled work did not return within 1s; handing the slots over anyway (writes carry preconditions)", "slots", len(slots))
		}
		cancel()
	}
	for _, h := range hs {
		h.cancel()
	}
	return t.deleteKeys(slots, started)
}

// deleteKeys deletes slot keys still held under this member's lease.
func (t *tenure) deleteKeys(slots []int, started time.Time) opResult {
	r := opResult{started: started}
	for chunk := range slices.Chunk(slots, txnChunk) {
		if err := t.deleteChunk(chunk); err != nil {
			if t.ctx.Err() == nil {
				t.m.log.Warn("cannot delete slot keys; will retry", "slots", len(chunk), "error", err)
			}
			r.failedDelete = append(r.failedDelete, chunk...)
			continue
		}
		r.released = append(r.released, chunk...)
	}
	return r
}

func (t *tenure) deleteChunk(slots []int) error {
	ctx, cancel := context.WithTimeout(t.ctx, t.m.cfg.RequestTimeout)
	defer cancel()
	cmps := make([]clientv3.Cmp, len(slots))
	dels := make([]clientv3.Op, len(slots))
	for i, s := range slots {
		k := slotKey(t.m.cfg.Prefix, s)
		cmps[i] = clientv3.Compare(clientv3.LeaseValue(k), "=", t.sess.Lease)
		dels[i] = clientv3.OpDelete(k)
	}
	resp, err := t.m.cfg.Client.Txn(ctx).If(cmps...).Then(dels...).Commit()
	if err != nil || resp.Succeeded || len(slots) == 1 {
		return err // a single key no longer ours is gone already
	}
	for _, s := range slots {
		if err := t.deleteChunk([]int{s}); err != nil {
			return err
		}
	}
	return nil
}

// drain waits for every drainer to have no work in flight on the slots.
func (m *Manager) drain(ctx context.Context, slots []int) bool {
	var wg sync.WaitGroup
	ok := make([]bool, len(m.drainers))
	for i, d := range m.drainers {
		wg.Add(1)
		go func() { defer wg.Done(); ok[i] = d.Drain(ctx, slots) }()
	}
	wg.Wait()
	return !slices.Contains(ok, false)
}

// shutdown hands every slot over on a graceful stop: the member key goes
// first so the others recompute at once, then all work drains; the lease
// revoke that follows (when the Member stops) deletes every slot key in one
// step.
func (t *tenure) shutdown() {
	ctx, cancel := context.WithTimeout(t.ctx, t.m.cfg.RequestTimeout)
	if err := t.m.cfg.Member.Withdraw(ctx); err != nil {
		t.m.log.Warn("cannot withdraw from the member set; the others see the leave when the lease is revoked", "error", err)
	}
	cancel()
	table := *t.m.table.Load()
	for s := range table {
		if h := table[s].Load(); h != nil {
			h.releasing.Store(true)
		}
	}
	for t.ops > 0 {
		r := <-t.results
		t.ops--
		t.apply(r)
	}
	var slots []int
	var hs []*heldSlot
	for s := range table {
		if h := table[s].Load(); h != nil {
			h.releasing.Store(true)
			slots, hs = append(slots, s), append(hs, h)
		}
	}
	dctx, cancel := context.WithTimeout(t.ctx, t.m.cfg.DrainTimeout)
	if !t.m.drain(dctx, slots) {
		t.m.log.Warn("in-flight work outlived the drain timeout on stop; cancelling it", "timeout", t.m.cfg.DrainTimeout)
	}
	cancel()
	t.m.log.Info("drained all slots; leaving the ring", "slots", len(slots))
}

// end drops every slot held in this tenure: their contexts are cancelled
// and listeners learn they are lost.
func (t *tenure) end() {
	for t.ops > 0 {
		r := <-t.results
		t.ops--
		t.apply(r)
	}
	table := *t.m.table.Load()
	var lost []int
	for s := range table {
		if h := table[s].Swap(nil); h != nil {
			h.cancel()
			lost = append(lost, s)
		}
	}
	if len(lost) > 0 {
		for _, l := range t.m.listeners {
			l.SlotsLost(lost)
		}
	}
	t.publish()
}

// publish refreshes the Manager's status, metrics and readiness.
func (t *tenure) publish() {
	table := *t.m.table.Load()
	st := Status{ID: t.id, Slots: t.slots, Members: t.members, Revision: t.viewRev}
	for s := range table {
		if table[s].Load() != nil {
			st.Held = append(st.Held, s)
		}
		if t.assignment != nil && t.assignment[s] == t.id {
			st.Assigned++
		}
	}
	if t.holdersOK {
		st.Orphaned = t.slots - len(t.holders)
	}
	t.m.statusMu.Lock()
	t.m.status = st
	t.m.statusMu.Unlock()
	t.m.metrics.owned.Set(float64(len(st.Held)))
	t.m.metrics.orphaned.Set(float64(st.Orphaned))
	t.m.ready.Store(t.assignment != nil && t.holdersOK && t.ctx.Err() == nil)
}

// watchHolders follows the slot keys: a full read, then a watch from the
// next revision, again from a full read whenever the watch breaks.
func (t *tenure) watchHolders(ctx context.Context, out chan<- holderUpdate) {
	prefix := SlotsPrefix(t.m.cfg.Prefix)
	wait := 50 * time.Millisecond
	send := func(u holderUpdate) bool {
		select {
		case out <- u:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for ctx.Err() == nil {
		rctx, cancel := context.WithTimeout(ctx, t.m.cfg.RequestTimeout)
		resp, err := t.m.cfg.Client.Get(rctx, prefix, clientv3.WithPrefix())
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				t.m.log.Warn("cannot read slot holders; will retry", "error", err)
				select {
				case <-time.After(wait):
				case <-ctx.Done():
				}
				wait = min(2*wait, 2*time.Second)
			}
			continue
		}
		wait = 50 * time.Millisecond
		u := holderUpdate{reset: true, holders: map[int]clientv3.LeaseID{}}
		for _, kv := range resp.Kvs {
			if s, ok := parseSlotKey(t.m.cfg.Prefix, string(kv.Key), t.slots); ok {
				u.holders[s] = clientv3.LeaseID(kv.Lease)
			}
		}
		if !send(u) {
			return
		}
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		for wr := range t.m.cfg.Client.Watch(wctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1)) {
			if wr.Err() != nil {
				break
			}
			u := holderUpdate{holders: map[int]clientv3.LeaseID{}}
			for _, ev := range wr.Events {
				if s, ok := parseSlotKey(t.m.cfg.Prefix, string(ev.Kv.Key), t.slots); ok {
					if ev.Type == clientv3.EventTypeDelete {
						u.holders[s] = 0
					} else {
						u.holders[s] = clientv3.LeaseID(ev.Kv.Lease)
					}
				}
			}
			if !send(u) {
				break
			}
		}
		cancel()
	}
}
