package shard

import (
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// The handover decision, case by case (docs/design.md, "Computing the
// assignment"). "me" holds lease 1; "b" is another live member with lease 2;
// lease 9 belongs to a member that died and whose lease has not expired yet.
// Every key was created at revision 10 unless a row says otherwise.
func TestDecideHandover(t *testing.T) {
	const (
		me    = "me"
		mine  = clientv3.LeaseID(1)
		b     = clientv3.LeaseID(2)
		dead  = clientv3.LeaseID(9)
		later = 100 * time.Millisecond
	)
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	type row struct {
		name      string
		assigned  []string // owner per slot; nil: no member view yet
		holders   map[int]clientv3.LeaseID
		created   map[int]int64 // create revision of a key in holders, if not 10
		deleted   map[int]int64 // create revision of the newest key of a slot this tenure deleted
		held      map[int]holdState
		acquiring []int
		discard   map[int]int64 // discards under way or pending
		pending   []int
		notRead   bool      // the slot keys have not been read yet
		ended     bool      // the session has ended
		retryAt   time.Time // zero: no retry delay running
		want      plan
	}
	rows := []row{
		{name: "free slot assigned here: acquire",
			assigned: []string{me}, want: plan{Acquire: []int{0}}},
		{name: "free slot assigned here, acquire under way: nothing more",
			assigned: []string{me}, acquiring: []int{0}},
		{name: "free slot assigned here, acquire under way and its key already seen: nothing more",
			assigned: []string{me}, acquiring: []int{0}, holders: map[int]clientv3.LeaseID{0: mine}},
		{name: "free slot assigned here within the retry delay: deferred",
			assigned: []string{me}, retryAt: now.Add(later), want: plan{Deferred: []int{0}}},
		{name: "free slot assigned here as the retry delay ends: deferred, acquired only after it",
			assigned: []string{me}, retryAt: now, want: plan{Deferred: []int{0}}},
		{name: "free slot assigned here after the retry delay: acquire",
			assigned: []string{me}, retryAt: now.Add(-time.Nanosecond), want: plan{Acquire: []int{0}}},
		{name: "slot assigned here, held by a live member no longer assigned it: wait for its release",
			assigned: []string{me}, holders: map[int]clientv3.LeaseID{0: b}, want: plan{Wait: []int{0}}},
		{name: "slot assigned here, held under a dead member's lease: wait for the lease to expire",
			assigned: []string{me}, holders: map[int]clientv3.LeaseID{0: dead}, want: plan{Wait: []int{0}}},
		{name: "slot assigned here, the dead member's key gone: acquire",
			assigned: []string{me}, holders: map[int]clientv3.LeaseID{}, want: plan{Acquire: []int{0}}},
		{name: "slot assigned here, a key without a lease counts as free: acquire",
			assigned: []string{me}, holders: map[int]clientv3.LeaseID{0: 0}, want: plan{Acquire: []int{0}}},
		// An acquire whose transaction committed but whose answer was lost
		// leaves a key under this member's lease that its table does not
		// have. Only this member's create can have put it, so no other
		// member holds the slot: it is adopted if the slot is assigned
		// here, and its key deleted if not.
		{name: "slot assigned here, its key under this member's lease but not in its table: adopt",
			assigned: []string{me}, holders: map[int]clientv3.LeaseID{0: mine}, want: plan{Adopt: []int{0}}},
		{name: "slot assigned here, its key under this member's lease, within the retry delay: adopt at once",
			assigned: []string{me}, holders: map[int]clientv3.LeaseID{0: mine}, retryAt: now.Add(later),
			want: plan{Adopt: []int{0}}},
		{name: "slot assigned here, not in the table, its key under another live lease: wait, not adopted",
			assigned: []string{me}, holders: map[int]clientv3.LeaseID{0: b}, retryAt: now.Add(later),
			want: plan{Wait: []int{0}}},
		{name: "slot assigned elsewhere, not in the table, its key under this member's lease: discard",
			assigned: []string{"b"}, holders: map[int]clientv3.LeaseID{0: mine}, want: plan{Discard: []int{0}}},
		{name: "slot assigned elsewhere, its key under this member's lease, within the retry delay: discard at once",
			assigned: []string{"b"}, holders: map[int]clientv3.LeaseID{0: mine}, retryAt: now.Add(later),
			want: plan{Discard: []int{0}}},
		{name: "slot assigned to no member, its key under this member's lease: discard",
			assigned: []string{""}, holders: map[int]clientv3.LeaseID{0: mine}, want: plan{Discard: []int{0}}},
		{name: "slot assigned elsewhere, its key under this member's lease being discarded: nothing more",
			assigned: []string{"b"}, holders: map[int]clientv3.LeaseID{0: mine}, discard: map[int]int64{0: 10}},
		{name: "slot whose discard failed, assigned here again, its key under this member's lease: only the delete again",
			assigned: []string{me}, holders: map[int]clientv3.LeaseID{0: mine}, discard: map[int]int64{0: 10},
			pending: []int{0}, want: plan{Delete: []int{0}}},
		{name: "slot being discarded, assigned here again, its key seen gone: no acquire before the discard answers",
			assigned: []string{me}, discard: map[int]int64{0: 10}},
		// A key this tenure deleted, still in a read that lags behind the
		// delete, is neither adopted nor deleted again: another member may
		// hold the slot by now.
		{name: "slot assigned here, a key under this member's lease that it deleted already: wait for the read to catch up",
			assigned: []string{me}, holders: map[int]clientv3.LeaseID{0: mine}, deleted: map[int]int64{0: 10},
			want: plan{Wait: []int{0}}},
		{name: "slot assigned elsewhere, a key under this member's lease that it deleted already: nothing",
			assigned: []string{"b"}, holders: map[int]clientv3.LeaseID{0: mine}, deleted: map[int]int64{0: 10}},
		{name: "slot assigned here, a key under this member's lease older than one it deleted: wait",
			assigned: []string{me}, holders: map[int]clientv3.LeaseID{0: mine}, created: map[int]int64{0: 7},
			deleted: map[int]int64{0: 10}, want: plan{Wait: []int{0}}},
		{name: "slot assigned here, a key under this member's lease newer than the one it deleted: adopt",
			assigned: []string{me}, holders: map[int]clientv3.LeaseID{0: mine}, created: map[int]int64{0: 12},
			deleted: map[int]int64{0: 10}, want: plan{Adopt: []int{0}}},
		{name: "slot assigned here, its key deleted here and now under another lease: wait",
			assigned: []string{me}, holders: map[int]clientv3.LeaseID{0: b}, created: map[int]int64{0: 12},
			deleted: map[int]int64{0: 10}, want: plan{Wait: []int{0}}},
		{name: "slot held here and assigned here: nothing",
			assigned: []string{me}, holders: map[int]clientv3.LeaseID{0: mine}, held: map[int]holdState{0: holding}},
		{name: "slot held here, assigned away: drain then release",
			assigned: []string{"b"}, holders: map[int]clientv3.LeaseID{0: mine}, held: map[int]holdState{0: holding},
			want: plan{Release: []int{0}}},
		{name: "slot held here, assigned away, already draining: nothing more",
			assigned: []string{"b"}, holders: map[int]clientv3.LeaseID{0: mine}, held: map[int]holdState{0: draining}},
		{name: "slot draining and assigned here again: the handover goes on",
			assigned: []string{me}, holders: map[int]clientv3.LeaseID{0: mine}, held: map[int]holdState{0: draining}},
		// The decision does not look at the holders for a release: the
		// delete succeeds only for a key still under this member's lease.
		{name: "slot held here, assigned away, read under another lease: release all the same",
			assigned: []string{"b"}, holders: map[int]clientv3.LeaseID{0: b}, held: map[int]holdState{0: holding},
			want: plan{Release: []int{0}}},
		{name: "slot held here, not yet seen in the holders read: release all the same",
			assigned: []string{"b"}, held: map[int]holdState{0: holding}, want: plan{Release: []int{0}}},
		{name: "slot held here, no member left to assign it to: release",
			assigned: []string{""}, held: map[int]holdState{0: holding}, want: plan{Release: []int{0}}},
		{name: "slot held here, assigned away, within the retry delay: release at once",
			assigned: []string{"b"}, held: map[int]holdState{0: holding}, retryAt: now.Add(later),
			want: plan{Release: []int{0}}},
		{name: "free slot assigned elsewhere: nothing",
			assigned: []string{"b"}},
		{name: "slot assigned elsewhere and held there: nothing",
			assigned: []string{"b"}, holders: map[int]clientv3.LeaseID{0: b}},
		{name: "failed deletes after the retry delay: delete again",
			assigned: []string{"b", "b", "b"}, pending: []int{1, 2}, want: plan{Delete: []int{1, 2}}},
		{name: "failed deletes within the retry delay: wait",
			assigned: []string{"b", "b", "b"}, pending: []int{1, 2}, retryAt: now.Add(later)},
		{name: "no member view yet: nothing",
			assigned: nil, held: map[int]holdState{0: holding}},
		{name: "slot keys not read yet: nothing",
			assigned: []string{me, "b"}, held: map[int]holdState{1: holding}, notRead: true},
		{name: "session ended: nothing, not even the failed deletes",
			assigned: []string{me, "b"}, held: map[int]holdState{1: holding}, pending: []int{1}, ended: true},
		{name: "a ring in motion: each slot on its own",
			assigned: []string{me, me, me, me, me, "b", "b", "b", "b", me, me, "b", me, "b"},
			holders: map[int]clientv3.LeaseID{
				1:  b,    // being drained by b
				2:  dead, // waiting out a dead lease
				3:  mine, // held here
				5:  mine, // held here, assigned away
				6:  mine, // being handed over
				7:  b,    // b's
				10: mine, // an acquire's lost answer, assigned here
				11: mine, // an acquire's lost answer, assigned away
				12: mine, // deleted here already, the read lags
				13: mine, // being discarded
			},
			deleted:   map[int]int64{12: 10},
			held:      map[int]holdState{3: holding, 5: holding, 6: draining},
			acquiring: []int{4},
			discard:   map[int]int64{13: 10},
			pending:   []int{8},
			want: plan{Acquire: []int{0, 9}, Adopt: []int{10}, Release: []int{5}, Discard: []int{11},
				Delete: []int{8}, Wait: []int{1, 2, 12}}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			slots := max(len(r.assigned), 1)
			s := situation{
				Me: me, Lease: mine, Assignment: r.assigned, HoldersRead: !r.notRead,
				Holders: map[int]keyHolder{}, Deleted: r.deleted, Held: make([]holdState, slots),
				Acquiring: map[int]bool{}, Discarding: r.discard, PendingDeletes: r.pending,
				SessionEnded: r.ended, Now: now, RetryAt: r.retryAt,
			}
			for slot, lease := range r.holders {
				created, ok := r.created[slot]
				if !ok {
					created = 10
				}
				s.Holders[slot] = keyHolder{Lease: lease, Created: created}
			}
			for slot, h := range r.held {
				s.Held[slot] = h
			}
			for _, slot := range r.acquiring {
				s.Acquiring[slot] = true
			}
			got := decideHandover(s)
			for _, f := range []struct {
				what      string
				got, want []int
			}{
				{"acquire", got.Acquire, r.want.Acquire},
				{"adopt", got.Adopt, r.want.Adopt},
				{"release", got.Release, r.want.Release},
				{"discard", got.Discard, r.want.Discard},
				{"delete", got.Delete, r.want.Delete},
				{"wait", got.Wait, r.want.Wait},
				{"deferred", got.Deferred, r.want.Deferred},
			} {
				if !slices.Equal(f.got, f.want) {
					t.Errorf("%s: %v, want %v", f.what, f.got, f.want)
				}
			}
		})
	}
}

// The decision reads its input and changes none of it.
func TestDecideHandoverLeavesItsInputAlone(t *testing.T) {
	s := situation{
		Me: "me", Lease: 1, Assignment: []string{"me", "b", "me", "b"}, HoldersRead: true,
		Holders: map[int]keyHolder{1: {Lease: 1, Created: 5}, 2: {Lease: 1, Created: 6}, 3: {Lease: 1, Created: 7}},
		Deleted: map[int]int64{}, Held: []holdState{notHolding, holding, notHolding, notHolding},
		Acquiring: map[int]bool{}, Discarding: map[int]int64{}, PendingDeletes: []int{1}, Now: time.Now(),
	}
	p := decideHandover(s)
	if !slices.Equal(p.Adopt, []int{2}) || !slices.Equal(p.Discard, []int{3}) {
		t.Fatalf("plan %+v, want slot 2 adopted and slot 3 discarded", p)
	}
	p.Delete[0] = 99
	if s.PendingDeletes[0] != 1 || len(s.Acquiring) != 0 || len(s.Discarding) != 0 || len(s.Deleted) != 0 ||
		len(s.Holders) != 3 || s.Held[1] != holding || s.Held[2] != notHolding {
		t.Fatalf("the decision or its plan changed its input: %+v", s)
	}
}
