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
		held      map[int]holdState
		acquiring []int
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
		// have. It is not adopted: it goes when the key is deleted with the
		// lease.
		{name: "slot assigned here, its key under this member's lease but not in its table: wait",
			assigned: []string{me}, holders: map[int]clientv3.LeaseID{0: mine}, want: plan{Wait: []int{0}}},
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
			assigned: []string{me, me, me, me, me, "b", "b", "b", "b", me},
			holders: map[int]clientv3.LeaseID{
				1: b,    // being drained by b
				2: dead, // waiting out a dead lease
				3: mine, // held here
				5: mine, // held here, assigned away
				6: mine, // being handed over
				7: b,    // b's
			},
			held:      map[int]holdState{3: holding, 5: holding, 6: draining},
			acquiring: []int{4},
			pending:   []int{8},
			want:      plan{Acquire: []int{0, 9}, Release: []int{5}, Delete: []int{8}, Wait: []int{1, 2}}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			slots := max(len(r.assigned), 1)
			s := situation{
				Me: me, Assignment: r.assigned, HoldersRead: !r.notRead, Holders: r.holders,
				Held: make([]holdState, slots), Acquiring: map[int]bool{}, PendingDeletes: r.pending,
				SessionEnded: r.ended, Now: now, RetryAt: r.retryAt,
			}
			if s.Holders == nil {
				s.Holders = map[int]clientv3.LeaseID{}
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
				{"release", got.Release, r.want.Release},
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
		Me: "me", Assignment: []string{"me", "b"}, HoldersRead: true,
		Holders: map[int]clientv3.LeaseID{1: 1}, Held: []holdState{notHolding, holding},
		Acquiring: map[int]bool{}, PendingDeletes: []int{1}, Now: time.Now(),
	}
	p := decideHandover(s)
	p.Delete[0] = 99
	if s.PendingDeletes[0] != 1 || len(s.Acquiring) != 0 || len(s.Holders) != 1 || s.Held[1] != holding {
		t.Fatalf("the decision or its plan changed its input: %+v", s)
	}
}
