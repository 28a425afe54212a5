// Package shard splits the key space of ringfire into a fixed number of slots,
// assigns slots to ring members, holds slot ownership in etcd and dispatches
// work for the keys of owned slots.
//
// The pieces, each in its own file:
//
//   - slot.go: SlotOf, the hash from a key to its slot.
//   - assign.go: Assign, the pure slot→member table (consistent hashing with
//     bounded loads).
//   - ownership.go: the interfaces between the slot holder and the work that
//     runs on slots (Ownership, Drainer, Listener).
//   - manager.go: the Manager, which acquires and releases slot keys in etcd
//     as the member set changes.
//   - dispatcher.go: the Dispatcher, per-key ordered workers over owned slots.
package shard
