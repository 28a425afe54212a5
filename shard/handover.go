package shard

import (
	"slices"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// This file holds the tenure's decision, apart from etcd and goroutines:
// given what the tenure knows at one moment, which slots it acquires, which
// it hands over, and which it waits for. decideHandover is a pure function;
// the tenure (tenure.go) gathers its input and carries out its plan.

// holdState is what a tenure knows of a slot from its own table.
type holdState uint8

const (
	notHolding holdState = iota // this tenure does not hold the slot
	holding                     // held, its work running
	draining                    // held and being handed over: no new work, its key deleted once drained
)

// keyHolder is a slot key as read from etcd.
type keyHolder struct {
	// Lease is the lease the key is under; 0 for a free slot.
	Lease clientv3.LeaseID
	// Created is the key's create revision: the revision of the create
	// transaction that put it, the epoch its creator holds the slot with.
	Created int64
	// Holder is the member id the key names (its value), for the status
	// page; the protocol goes by Lease.
	Holder string
}

// holderID is the member holding the slot, "" when it is free.
func (k keyHolder) holderID() string {
	if k.Lease == 0 {
		return ""
	}
	return k.Holder
}

// situation is everything decideHandover looks at.
type situation struct {
	// Me is this member's id, Lease its session's lease.
	Me    string
	Lease clientv3.LeaseID
	// Assignment is the owner of each slot by the latest member view; nil
	// until the first view.
	Assignment []string
	// HoldersRead is whether the slot keys have been read in full yet.
	HoldersRead bool
	// Holders maps each slot whose key exists to the key as read from etcd;
	// a free slot is absent (a lease of 0 counts as free).
	Holders map[int]keyHolder
	// Deleted maps a slot to the create revision of the newest key of it
	// this tenure has deleted (a release or a discard). A key read under
	// this member's lease with that create revision or an older one is gone
	// already: the read has not caught up with the delete.
	Deleted map[int]int64
	// Held is the state of each slot in this tenure's table; its length is
	// the slot count.
	Held []holdState
	// Acquiring holds the slots whose acquire is under way.
	Acquiring map[int]bool
	// Discarding holds the slots, not held here, whose key under this
	// member's lease is being deleted, or whose delete failed and waits in
	// PendingDeletes (slot → the key's create revision).
	Discarding map[int]int64
	// PendingDeletes are drained or discarded slots whose key delete
	// failed.
	PendingDeletes []int
	// SessionEnded is whether the membership session has ended.
	SessionEnded bool
	// Now is the time of the decision; a failed acquire or delete is not
	// tried again until after RetryAt.
	Now, RetryAt time.Time
}

// plan is decideHandover's answer. Every list is in slot order.
type plan struct {
	// Acquire: free slots assigned here; create their keys now.
	Acquire []int
	// Adopt: slots assigned here, not held here, whose key is under this
	// member's own lease: an acquire whose transaction committed but whose
	// answer was lost created it. Hold them now, as if that acquire had
	// answered, with the key's create revision as epoch.
	Adopt []int
	// Release: held slots assigned elsewhere that are not being handed over
	// yet; stop new work on them, drain it, then delete their keys.
	Release []int
	// Discard: slots neither held nor assigned here whose key is under this
	// member's own lease (an acquire whose answer was lost, of a slot
	// assigned away since). No work ran on them: delete their keys now, with
	// no drain and nothing told to the listeners.
	Discard []int
	// Delete: drained or discarded slots whose key delete failed; delete
	// them again now.
	Delete []int
	// Wait: slots assigned here, not held here, whose key exists under
	// another lease (the member that held them is draining them, or it died
	// and its lease has not expired yet), or under this member's lease in a
	// key this tenure has deleted already and the read has not caught up.
	// Nothing is done; each is acquired once its key is seen deleted.
	Wait []int
	// Deferred: free slots assigned here whose acquire waits until after
	// RetryAt, because an acquire or delete failed just before.
	Deferred []int
}

// decideHandover compares the assignment with what this tenure holds and
// what etcd holds. It decides nothing before both a member view and a full
// read of the slot keys are in, or once the session has ended. For each
// slot:
//
//   - held here and assigned elsewhere, not being handed over yet: release
//     it. The holders read do not matter: the delete succeeds only for a key
//     still under this member's lease;
//   - held here otherwise, or not held here with an acquire or a discard
//     under way: nothing;
//   - assigned here, not held here, its key free: acquire it, or defer that
//     while a failed request's retry delay runs;
//   - assigned here, not held here, its key under this member's lease:
//     adopt it, at once. Slot keys are created only if absent, and only this
//     member deletes a key under its lease while its session lasts (the
//     lease ends with the session), so such a key exists only because this
//     tenure's own create committed, and no other member can hold the slot:
//     adopting it cannot make two owners. A key this tenure has deleted
//     already (its create revision no newer than Deleted's) is not adopted
//     but waited for: the read lags behind the delete, and another member
//     may hold the slot by now;
//   - not assigned here, not held here, its key under this member's lease
//     and not deleted already: discard it (delete the key, as a release
//     does once drained), so that the member it is assigned to can take it;
//   - assigned here, not held here, its key under another lease: wait for
//     the key to go.
//
// Failed deletes are tried again once the retry delay has passed.
func decideHandover(s situation) plan {
	var p plan
	if s.Assignment == nil || !s.HoldersRead || s.SessionEnded {
		return p
	}
	due := s.Now.After(s.RetryAt)
	for slot, state := range s.Held {
		mine := s.Assignment[slot] == s.Me
		key := s.Holders[slot]
		_, discarding := s.Discarding[slot]
		ours := key.Lease != 0 && key.Lease == s.Lease
		fresh := ours && key.Created > s.Deleted[slot] // not a key this tenure deleted
		switch {
		case state == holding && !mine:
			p.Release = append(p.Release, slot)
		case state != notHolding || s.Acquiring[slot] || discarding:
		case mine && key.Lease == 0:
			if due {
				p.Acquire = append(p.Acquire, slot)
			} else {
				p.Deferred = append(p.Deferred, slot)
			}
		case mine && fresh:
			p.Adopt = append(p.Adopt, slot)
		case mine:
			p.Wait = append(p.Wait, slot)
		case fresh:
			p.Discard = append(p.Discard, slot)
		}
	}
	if len(s.PendingDeletes) > 0 && due {
		p.Delete = slices.Clone(s.PendingDeletes)
		slices.Sort(p.Delete)
	}
	return p
}
