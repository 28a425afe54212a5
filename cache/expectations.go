package cache

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
)

// DefaultExpectationTTL bounds how long an unseen create or delete is
// remembered. The cache normally catches up within a second; the bound is
// only there so that an event the cache never reports (an object created
// and deleted again inside a watch gap) cannot hold a Job up for longer.
const DefaultExpectationTTL = 30 * time.Second

// Expectations remembers the creates, deletes and updates a controller has
// issued for a Job's objects until the cache has seen them, so that a reconcile
// running before the cache caught up does not issue them again (a create
// would come back AlreadyExists, a delete NotFound: both are writes the API
// server pays for and the user's cluster waits behind).
//
// A create is seen when the object enters the cache; a delete when the
// cached object is marked for deletion or leaves the cache; an update when the
// cached object shows what the update was for (ExpectUpdate), or leaves. The
// cache feeds those observations itself for the Owned resources, before the
// controllers' handlers hear of the object; those of the VolcanoJobs a
// controller makes, which carry no slot label, that controller's handler
// feeds (Observed). Each expectation lapses after its TTL, so a lost observation
// delays a Job by at most that long.
//
// A resource the cache does not watch (Secrets: see Owned) has no
// observations: an expectation of it stands for the object the Job made until
// it lapses, or until CreateFailed forgets it when the object is deleted. Its
// lapse is its normal end and is not counted in Lapsed.
//
// The memory is kept per slot: the slot's next owner lists the slot's
// objects afresh and needs none of it, so it is dropped when the slot is
// lost (DropSlots). Safe for concurrent use.
type Expectations struct {
	ttl time.Duration
	now func() time.Time

	mu     sync.Mutex
	slots  map[int]map[expectation]entry // slot → expectation → when it lapses
	lapsed uint64                        // expectations that lapsed unmet, under mu
	// listing holds the slots gained whose objects are not all listed yet
	// (Hold, Release): nothing can meet their expectations before then, so
	// none of them lapses.
	listing map[int]bool
}

// entry is an expectation's lapse and, for an update, what meets it.
type entry struct {
	lapses time.Time
	done   func(metav1.Object) bool // an update's: the cached object shows it
}

// Lapsed is how many expectations lapsed before the cache saw what they
// expected: each a create or delete whose event was late or lost, after which
// the Job may issue it again.
func (e *Expectations) Lapsed() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lapsed
}

type op uint8

const (
	opCreate op = iota
	opDelete
	opUpdate
)

// expectation is one object a Job waits to see created or deleted.
type expectation struct {
	op        op
	res       Resource
	job       string // the owning Job's key
	namespace string
	name      string
	uid       types.UID // of the object deleted or updated; empty for a create
}

// NewExpectations returns an empty memory whose entries lapse after ttl
// (DefaultExpectationTTL when ttl is 0).
func NewExpectations(ttl time.Duration) *Expectations {
	if ttl <= 0 {
		ttl = DefaultExpectationTTL
	}
	return &Expectations{ttl: ttl, now: time.Now, slots: map[int]map[expectation]entry{}, listing: map[int]bool{}}
}

// ExpectCreate records that the Job at key (of slot) is about to create the
// object r namespace/name. Call it before the create, so that the cache's
// sight of the new object cannot come first, and CreateFailed if the create
// failed (AlreadyExists is no failure: the object is there to be seen).
func (e *Expectations) ExpectCreate(slot int, key string, r Resource, namespace, name string) {
	e.add(slot, createOf(key, r, namespace, name), nil)
}

// TTL is how long an unseen create or delete is expected before it lapses.
func (e *Expectations) TTL() time.Duration { return e.ttl }

// CreateFailed forgets a create that did not happen, or, for a resource the
// cache does not watch, one whose object was deleted since.
func (e *Expectations) CreateFailed(slot int, key string, r Resource, namespace, name string) {
	e.remove(slot, createOf(key, r, namespace, name))
}

// Creating reports whether a create of r namespace/name by the Job at key is
// still unseen, and how long until the expectation lapses.
func (e *Expectations) Creating(slot int, key string, r Resource, namespace, name string) (time.Duration, bool) {
	return e.pending(slot, createOf(key, r, namespace, name))
}

// ExpectDelete records that the Job at key (of slot) is about to delete the
// object r namespace/name with the given UID; DeleteFailed undoes it.
func (e *Expectations) ExpectDelete(slot int, key string, r Resource, namespace, name string, uid types.UID) {
	e.add(slot, deleteOf(key, r, namespace, name, uid), nil)
}

// DeleteFailed forgets a delete that did not happen. NotFound is no failure:
// the cache is still to see that object go, or has seen it already, and then
// the expectation, bound to that object's UID, only waits to lapse.
func (e *Expectations) DeleteFailed(slot int, key string, r Resource, namespace, name string, uid types.UID) {
	e.remove(slot, deleteOf(key, r, namespace, name, uid))
}

// Deleting reports whether a delete of the object r namespace/name with the
// given UID by the Job at key is still unseen, and how long until the
// expectation lapses.
func (e *Expectations) Deleting(slot int, key string, r Resource, namespace, name string, uid types.UID) (time.Duration, bool) {
	return e.pending(slot, deleteOf(key, r, namespace, name, uid))
}

// ExpectUpdate records that the Job at key (of slot) is about to update the
// object r namespace/name with the given UID (say, take a finalizer off it);
// the cache sees the update when the cached object of that UID makes done
// true, or leaves. UpdateFailed undoes it.
func (e *Expectations) ExpectUpdate(slot int, key string, r Resource, namespace, name string, uid types.UID, done func(metav1.Object) bool) {
	e.add(slot, updateOf(key, r, namespace, name, uid), done)
}

// UpdateFailed forgets an update that did not happen.
func (e *Expectations) UpdateFailed(slot int, key string, r Resource, namespace, name string, uid types.UID) {
	e.remove(slot, updateOf(key, r, namespace, name, uid))
}

// Updating reports whether an update of the object r namespace/name with the
// given UID by the Job at key is still unseen, and how long until the
// expectation lapses.
func (e *Expectations) Updating(slot int, key string, r Resource, namespace, name string, uid types.UID) (time.Duration, bool) {
	return e.pending(slot, updateOf(key, r, namespace, name, uid))
}

// Observed tells the expectations what a controller's handler saw of an object
// of r that the cache does not feed them itself (VolcanoJobs): present, or
// going, made by the object at key of slot.
func (e *Expectations) Observed(slot int, key string, r Resource, obj metav1.Object, going bool) {
	e.observe(slot, key, r, obj, going || obj.GetDeletionTimestamp() != nil)
}

// CreatingAny reports whether any create of an object of r by the Job at key
// is still unseen, and how long until the last of them lapses: what a
// controller whose objects' names are generated waits on, without keeping the
// names. (Deletes have no such form: one whose object the cache had dropped
// before it was expected is never seen, and would hold the Job until it
// lapsed; ask Deleting of the objects the cache still shows.)
func (e *Expectations) CreatingAny(slot int, key string, r Resource) (time.Duration, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.slots[slot]
	now := e.now()
	var wait time.Duration
	found := false
	for x, en := range m {
		if x.op != opCreate || x.job != key || x.res != r {
			continue
		}
		left := en.lapses.Sub(now)
		if left <= 0 && e.held(slot, x.res) {
			left = e.ttl // Release renews it
		}
		if left <= 0 {
			if Watched(x.res) {
				e.lapsed++
			}
			delete(m, x)
			continue
		}
		wait, found = max(wait, left), true
	}
	if m != nil && len(m) == 0 {
		delete(e.slots, slot)
	}
	return wait, found
}

func createOf(key string, r Resource, namespace, name string) expectation {
	return expectation{op: opCreate, res: r, job: key, namespace: namespace, name: name}
}

func deleteOf(key string, r Resource, namespace, name string, uid types.UID) expectation {
	return expectation{op: opDelete, res: r, job: key, namespace: namespace, name: name, uid: uid}
}

func updateOf(key string, r Resource, namespace, name string, uid types.UID) expectation {
	return expectation{op: opUpdate, res: r, job: key, namespace: namespace, name: name, uid: uid}
}

// DropSlots forgets everything expected in slots, and that they are being
// listed.
func (e *Expectations) DropSlots(slots []int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, n := range slots {
		delete(e.slots, n)
		delete(e.listing, n)
	}
}

// Hold keeps the expectations of slots, just gained, of the Owned
// resources from lapsing until Release: a slot's objects are listed a part
// at a time, its pods last and on a large cluster tens of seconds after the
// rest, and meanwhile its Jobs may run on their objects read from the API
// server (early.go) and make more. Nothing can meet those expectations
// before the slot's list is in; a lapse then would let a reconcile on the
// freshly listed cache, whose snapshot may predate the create, make it again
// (under a new name, for a batch/v1 pod). A lost observation thus delays a
// Job until its slot is listed and one TTL more.
func (e *Expectations) Hold(slots []int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, n := range slots {
		e.listing[n] = true
	}
}

// held reports whether an expectation of r in slot is kept from lapsing
// (Hold): r is one of the Owned resources, which the slot's list brings;
// the VolcanoJobs a JobFlow makes are seen through a cluster-wide informer,
// list or no list. e.mu is held.
func (e *Expectations) held(slot int, r Resource) bool {
	return e.listing[slot] && slices.Contains(Owned, r)
}

// Release ends Hold for slots, whose objects are all listed now, and gives
// each of their expectations a full TTL from now: the list's snapshot may
// be older than a create or delete, and its watch replays what came since.
func (e *Expectations) Release(slots []int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	renewed := e.now().Add(e.ttl)
	for _, n := range slots {
		if !e.listing[n] {
			continue
		}
		delete(e.listing, n)
		for x, en := range e.slots[n] {
			if en.lapses.Before(renewed) {
				en.lapses = renewed
				e.slots[n][x] = en
			}
		}
	}
}

// len is how many expectations are held, lapsed ones included until their
// slot is next touched.
func (e *Expectations) len() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, m := range e.slots {
		n += len(m)
	}
	return n
}

func (e *Expectations) add(slot int, x expectation, done func(metav1.Object) bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.slots[slot]
	if m == nil {
		m = map[expectation]entry{}
		e.slots[slot] = m
	}
	m[x] = entry{lapses: e.now().Add(e.ttl), done: done}
	if len(m)%256 == 0 && !e.listing[slot] {
		e.lapsed += pruneLapsed(m, e.now())
	}
}

func (e *Expectations) remove(slot int, x expectation) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if m := e.slots[slot]; m != nil {
		delete(m, x)
		if len(m) == 0 {
			delete(e.slots, slot)
		}
	}
}

func (e *Expectations) pending(slot int, x expectation) (time.Duration, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.slots[slot]
	en, ok := m[x]
	if !ok {
		return 0, false
	}
	left := en.lapses.Sub(e.now())
	if left <= 0 && e.held(slot, x.res) {
		return e.ttl, true // Release renews it
	}
	if left <= 0 {
		if Watched(x.res) {
			e.lapsed++
		}
		delete(m, x)
		if len(m) == 0 {
			delete(e.slots, slot)
		}
		return 0, false
	}
	return left, true
}

// observe is told by the cache what it saw of an object of r in slot,
// controlled by the Job at key: present (and not being deleted), or going.
func (e *Expectations) observe(slot int, key string, r Resource, obj metav1.Object, going bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.slots[slot]
	if len(m) == 0 {
		return
	}
	delete(m, createOf(key, r, obj.GetNamespace(), obj.GetName())) // present or going, it was created
	if going {
		delete(m, deleteOf(key, r, obj.GetNamespace(), obj.GetName(), obj.GetUID()))
	}
	up := updateOf(key, r, obj.GetNamespace(), obj.GetName(), obj.GetUID())
	if en, ok := m[up]; ok && (going || en.done == nil || en.done(obj)) {
		delete(m, up)
	}
	if len(m) == 0 {
		delete(e.slots, slot)
	}
}

// pruneLapsed drops the lapsed entries of a slot; add calls it now and
// then, so a slot whose observations never come does not grow for ever. It
// counts those of watched resources.
func pruneLapsed(m map[expectation]entry, now time.Time) (n uint64) {
	for x, en := range m {
		if !en.lapses.After(now) {
			delete(m, x)
			if Watched(x.res) {
				n++
			}
		}
	}
	return n
}

// observer feeds a resource's events to the expectations.
type observer struct {
	r Resource
	e *Expectations
}

func (o observer) see(obj any, going bool) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj, going = d.Obj, true
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	slot, ok := slotLabel(obj)
	if !ok {
		return
	}
	key, ok := JobKey(obj)
	if !ok {
		// Pods of batch/v1 Jobs: their names are unique in the namespace
		// as any pod's, so one key space serves both kinds.
		if key, ok = BatchJobKey(obj); !ok {
			return
		}
	}
	o.e.observe(slot, key, o.r, m, going || m.GetDeletionTimestamp() != nil)
}

func (o observer) OnAdd(obj any, _ bool) { o.see(obj, false) }
func (o observer) OnUpdate(_, obj any)   { o.see(obj, false) }
func (o observer) OnDelete(obj any)      { o.see(obj, true) }
