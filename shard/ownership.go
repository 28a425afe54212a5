package shard

import "context"

// Ownership is what work on keys sees of the ring: which slots this replica
// holds right now. The Manager implements it.
type Ownership interface {
	// Slots is the ring's slot count S; SlotOf(key, Slots()) is the slot of key.
	Slots() int
	// SlotContext returns the context of a held slot. The context is cancelled
	// the moment the slot is lost or the member fences itself. ok is false when
	// the slot is not held, or is being handed over: no new work may start then.
	// A slot whose lease is in doubt (Validity) is still held: work on it waits.
	SlotContext(slot int) (ctx context.Context, ok bool)
}

// Validity is an Ownership whose lease can be in doubt for a moment while its slots stay
// held: its fence deadline has passed and the renewal has not been answered yet. Either the
// answer comes (Valid is nil again, nothing was lost) or the session ends, and every slot's
// context with it. The Manager implements it. A Dispatcher over a Validity starts no handler
// while Valid reports an error, and keeps the requests for when it does not.
type Validity interface {
	Valid() error
}

// Drainer is a source of in-flight work on slots, such as a Dispatcher. Before
// a slot is handed over, the Manager stops new work on it (SlotContext reports
// it not held) and then drains every Drainer.
type Drainer interface {
	// Drain returns once no work on any of the slots is in flight, or ctx is
	// done, whichever is first. It reports whether the slots drained.
	Drain(ctx context.Context, slots []int) bool
}

// Listener learns which slots this replica gained and lost: the cache starts
// and stops per-slot informers with it, and controllers enqueue every key of
// a gained slot. The Manager calls listeners from one goroutine, in order;
// they must not block.
type Listener interface {
	// SlotsGained is called once the slots are held (their keys exist in etcd
	// under this member's lease) and their contexts are live.
	SlotsGained(slots []int)
	// SlotsLost is called once no work on the slots runs any more on this
	// replica: after draining on handover, at once on fencing.
	SlotsLost(slots []int)
}

// HoldAll is the Ownership of a process that works alone, with no ring: it
// holds all of S slots (DefaultSlots if S is 0) for as long as Ctx lives
// (for ever if Ctx is nil). Controller tests and one-process tools use it.
type HoldAll struct {
	Ctx context.Context
	S   int
}

// Slots implements Ownership.
func (h HoldAll) Slots() int {
	if h.S > 0 {
		return h.S
	}
	return DefaultSlots
}

// SlotContext implements Ownership: every slot is held until Ctx ends.
func (h HoldAll) SlotContext(int) (context.Context, bool) {
	if h.Ctx == nil {
		return context.Background(), true
	}
	return h.Ctx, h.Ctx.Err() == nil
}
