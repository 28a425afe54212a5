// Package shard splits the key space of ringfire into a fixed number of slots,
// assigns slots to ring members, holds slot ownership in etcd and dispatches
// work for the keys of owned slots.
//
// The pieces, each in its own file:
//
//   - slot.go: SlotOf (and SlotOfName), the hash from a key to its slot;
//     SlotLabel; SlotSet.
//   - assign.go: Assign, the pure slot→member table (consistent hashing with
//     bounded loads).
//   - ring.go: the ring's fixed configuration in etcd (EnsureRing) and its keys.
//   - ownership.go: the interfaces between the slot holder and the work that
//     runs on slots (Ownership, Drainer, Listener).
//   - manager.go, tenure.go: the Manager, which acquires and releases slot
//     keys in etcd as the member set changes, one tenure per membership
//     session; Timings, its waits.
//   - handover.go: decideHandover, the pure decision of what a tenure
//     acquires, adopts, releases, discards and waits for.
//   - store.go: ringStore, the etcd requests a tenure makes, and etcdStore,
//     their implementation over the etcd client.
//   - dispatcher.go: the Dispatcher, per-key ordered workers over owned slots.
//   - guard.go: CheckOwner, the check every controller makes before a write.
//   - snapshot.go: the whole ring read at one revision, for operators.
//   - ringview.go: every slot's holder and assignee as this replica sees
//     them, copied into Status on request.
package shard
