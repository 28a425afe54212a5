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

// situation is everything decideHandover looks at.
type situation struct {
	// Me is this member's id.
	Me string
	// Assignment is the owner of each slot by the latest member view; nil
	// until the first view.
	Assignment []string
	// HoldersRead is whether the slot keys have been read in full yet.
	HoldersRead bool
	// Holders maps each slot whose key exists to the lease it is under, as
	// read from etcd; a free slot is absent (a lease of 0 counts as free).
	Holders map[int]clientv3.LeaseID
	// Held is the state of each slot in this tenure's table; its length is
	// the slot count.
	Held []holdState
	// Acquiring holds the slots whose acquire is under way.
	Acquiring map[int]bool
	// PendingDeletes are drained slots whose key delete failed.
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
	// Release: held slots assigned elsewhere that are not being handed over
	// yet; stop new work on them, drain it, then delete their keys.
	Release []int
	// Delete: drained slots whose key delete failed; delete them again now.
	Delete []int
	// Wait: slots assigned here, not held here, whose key exists under a
	// lease: the member that held them is draining them, or it died and its
	// lease has not expired yet. Nothing is done; each is acquired once its
	// key is seen deleted.
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
//   - assigned here, not held here, its key free, no acquire under way:
//     acquire it, or defer that while a failed request's retry delay runs;
//   - assigned here, not held here, its key under a lease (whichever,
//     including this member's own): wait for the key to go;
//   - held here and assigned elsewhere, not being handed over yet: release
//     it. The holders read do not matter: the delete succeeds only for a key
//     still under this member's lease;
//   - anything else (held and assigned here, being handed over, acquire
//     under way, assigned elsewhere and not held): nothing.
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
		switch {
		case state == notHolding && mine && !s.Acquiring[slot] && s.Holders[slot] == 0:
			if due {
				p.Acquire = append(p.Acquire, slot)
			} else {
				p.Deferred = append(p.Deferred, slot)
			}
		case state == notHolding && mine && !s.Acquiring[slot]:
			p.Wait = append(p.Wait, slot)
		case state == holding && !mine:
			p.Release = append(p.Release, slot)
		}
	}
	if len(s.PendingDeletes) > 0 && due {
		p.Delete = slices.Clone(s.PendingDeletes)
	}
	return p
}
