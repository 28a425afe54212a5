package shard

import "github.com/cespare/xxhash/v2"

// DefaultSlots is the slot count S of a new ring. S is fixed when the ring is
// created and never changes: every object a Job owns is labelled with its slot.
const DefaultSlots = 1024

// SlotOf returns the slot of key among slots slots: xxhash64(key) mod slots.
// The key is "namespace/name", or the bare name of a cluster-scoped object
// (a Queue). The result is in [0, slots) and stays the same across versions
// of ringfire, because it is stored in the ringfire.io/slot label of objects.
// A slots value of zero or less has no valid slot; SlotOf then returns 0
// rather than panic.
func SlotOf(key string, slots int) int {
	if slots <= 0 {
		return 0
	}
	return int(xxhash.Sum64String(key) % uint64(slots))
}

// SlotLabel is the label every object a Job owns carries: the decimal slot of
// its Job's key. Replicas watch only the objects of the slots they hold by
// selecting on it.
const SlotLabel = "ringfire.io/slot"

// SlotSet is a set of slots, for picking the keys that fall in them.
type SlotSet map[int]bool

// NewSlotSet holds the given slots.
func NewSlotSet(slots []int) SlotSet {
	s := make(SlotSet, len(slots))
	for _, n := range slots {
		s[n] = true
	}
	return s
}

// HasKey reports whether key's slot, among slots slots, is in the set.
func (s SlotSet) HasKey(key string, slots int) bool { return s[SlotOf(key, slots)] }

// SlotOfName is SlotOf("namespace/name", slots) without building the key,
// for walking many objects.
func SlotOfName(namespace, name string, slots int) int {
	if slots <= 0 {
		return 0
	}
	var d xxhash.Digest
	d.Reset()
	_, _ = d.WriteString(namespace)
	_, _ = d.WriteString("/")
	_, _ = d.WriteString(name)
	return int(d.Sum64() % uint64(slots))
}
