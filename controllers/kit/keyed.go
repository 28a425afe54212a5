package kit

import (
	"sync"

	"github.com/ringfire/ringfire/shard"
)

// Keyed is a per-key memory: one V for each key (a Job's, a flow's, a Queue's) that a
// controller remembers between reconciles. Every such memory is forgotten the same two ways,
// the key whose object went (Forget) and the keys of the slots lost (ForgetWhere), and its
// readings and changes are made under one lock. A V that holds references (a map, a pointer)
// is to be read and changed only inside Update, under that lock. Safe for concurrent use; the
// zero value is ready to use.
type Keyed[V any] struct {
	mu sync.Mutex
	m  map[string]V
}

// Forgetter is a per-key memory that can be forgotten by key and by slot (Keyed, and the
// kit types built on it): what a controller calls when an object goes or a slot is lost.
type Forgetter interface {
	Forget(key string)
	ForgetWhere(drop func(key string) bool)
}

// Forget forgets key in each of memories: its object is gone.
func Forget(key string, memories ...Forgetter) {
	for _, m := range memories {
		m.Forget(key)
	}
}

// ForgetSlots forgets, in each of memories, the keys that fall in slots of a ring of n: the
// slots this replica lost, whose next holder starts without any of it.
func ForgetSlots(slots []int, n int, memories ...Forgetter) {
	held := shard.NewSlotSet(slots)
	in := func(key string) bool { return held.HasKey(key, n) }
	for _, m := range memories {
		m.ForgetWhere(in)
	}
}

// Get returns key's value, if one is remembered.
func (k *Keyed[V]) Get(key string) (V, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	v, ok := k.m[key]
	return v, ok
}

// Set remembers v for key.
func (k *Keyed[V]) Set(key string, v V) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.setLocked(key, v)
}

func (k *Keyed[V]) setLocked(key string, v V) {
	if k.m == nil {
		k.m = map[string]V{}
	}
	k.m[key] = v
}

// Update reads and changes key's value under the lock: change gets the value (the zero V
// and false when none is remembered) and returns the one to keep, or keep false to forget
// the key.
func (k *Keyed[V]) Update(key string, change func(v V, ok bool) (next V, keep bool)) {
	k.mu.Lock()
	defer k.mu.Unlock()
	v, ok := k.m[key]
	if next, keep := change(v, ok); keep {
		k.setLocked(key, next)
	} else if ok {
		delete(k.m, key)
	}
}

// Forget drops key (its object is gone).
func (k *Keyed[V]) Forget(key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.m, key)
}

// ForgetWhere drops the keys drop reports (those of the slots lost).
func (k *Keyed[V]) ForgetWhere(drop func(key string) bool) {
	k.Prune(func(key string, _ V) bool { return drop(key) })
}

// Prune drops the keys whose values drop reports (those no longer of use).
func (k *Keyed[V]) Prune(drop func(key string, v V) bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for key, v := range k.m {
		if drop(key, v) {
			delete(k.m, key)
		}
	}
}

// Len is how many keys are remembered.
func (k *Keyed[V]) Len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.m)
}
