package cache

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/ringfire/ringfire/shard"
)

// ListWatchFunc lists and watches one resource across namespaces, with the
// given label selector applied to both.
type ListWatchFunc struct {
	List  func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error)
	Watch func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// Index names shared by every sharded resource.
const (
	// ByJob indexes an object by the "namespace/name" of the Job that
	// controls it, whatever that Job's UID: the objects of an earlier Job of
	// the name land under the same key, so that their events (the garbage
	// collector deleting them) wake the Job that waits for their names.
	// Ownership is decided by UID when they are read (JobInfo, OwnedBy).
	ByJob = "job"
	// ByBatchJob indexes an object by the "namespace/name" of the batch/v1
	// Job that controls it.
	ByBatchJob = "batchjob"
	// bySlot indexes an object by its slot label.
	bySlot = "slot"
)

// Sharded is one resource's view over the held slots: an index fed by one
// reflector per batch of slots gained together.
type Sharded struct {
	name     string
	newObj   func() runtime.Object
	lw       ListWatchFunc
	handlers []toolscache.ResourceEventHandler // fixed once a reflector runs
	listed   func(slots []int)                 // fixed once a reflector runs
	log      hclog.Logger
	indexer  toolscache.Indexer
	first    int64 // the first page of a list (pages.go)

	// What the index keeps of an object (cut.go), once the Cache set it (keepOwned): res is
	// the resource, ownerOf what the cache knows of an object's controller, refetch is told
	// of a stub whose Job has come to the cache since, and panics of a cut that failed.
	// Unset (a Sharded of its own, in tests), pods are cut by SlimPod and nothing else.
	res     Resource
	ownerOf func(metav1.Object) owner
	refetch func(r Resource, key string)

	// gate is held shared by every write of a reflector into the index, and
	// exclusively by Lose while it takes slots out of scope: a write that
	// has passed its scope check lands before the lost slots are dropped,
	// and no write after that sees them in scope. So Lose never waits for a
	// reflector to stop, which can take long: a reflector backing off from
	// an API server that refuses connections checks its context only when
	// the back-off ends (up to 30 s in client-go's watch-list mode).
	gate sync.RWMutex

	mu       sync.Mutex // guards what follows; taken after gate
	owned    map[int]bool
	batches  map[*slotBatch]bool // the live batches; a batch out of this map writes nothing
	listings int                 // full lists (or initial watch streams) of a batch, for tests and metrics
	// stubs holds the keys of the objects kept as stubs, each with whether its controller is
	// no owner the cache knows (a foreign object: ringfire_cache_foreign_objects).
	stubs map[string]bool
	// fetched holds the resourceVersion of the objects a refetch stored, until the watch
	// brings that version or a newer one: an older one still on its way is not stored over it.
	fetched map[string]string
}

// slotBatch is one reflector over a set of slots gained together.
type slotBatch struct {
	slots  map[int]bool // still held
	parent context.Context
	cancel context.CancelFunc
	listed bool // its first list has landed
	pages  *pager
	// paged holds the keys of the objects of the list running that its pages cut to stubs,
	// until the list is stored (Replace): a stub is not cut again, and its Job may have come
	// to the cache meanwhile (refetch).
	pagedMu sync.Mutex
	paged   map[string]bool
}

// NewSharded returns the sharded view of a resource. newObj returns an empty
// object of its type.
func NewSharded(name string, newObj func() runtime.Object, lw ListWatchFunc, log hclog.Logger) *Sharded {
	return &Sharded{
		name: name, newObj: newObj, lw: lw, log: log.Named(name),
		indexer: toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{
			ByJob:      indexByJob,
			ByBatchJob: indexByBatchJob,
			bySlot:     indexBySlot,
		}),
		owned:   map[int]bool{},
		batches: map[*slotBatch]bool{},
		stubs:   map[string]bool{},
		fetched: map[string]string{},
		first:   firstPage(name),
	}
}

// firstPage is the limit of the first page of a list of the resource name (pages.go).
func firstPage(name string) int64 {
	if name == string(Pods) {
		return firstPods
	}
	return firstOther
}

// keepOwned makes the resource keep of each object only what cut keeps, by what ownerOf
// knows of its controller; refetch is told of a stub whose Job came to the cache after it.
// Set it before the first Gain.
func (s *Sharded) keepOwned(r Resource, ownerOf func(metav1.Object) owner, refetch func(Resource, string)) {
	s.res, s.ownerOf, s.refetch = r, ownerOf, refetch
}

// AddHandler adds a receiver of the resource's events. Handlers run on the
// reflectors' goroutines and must not block. Add them before the first Gain.
func (s *Sharded) AddHandler(h toolscache.ResourceEventHandler) {
	s.handlers = append(s.handlers, h)
}

// OnListed sets what is told, once per batch, that the batch's first list
// has landed: the slots it holds then have all their objects in the index. A
// batch restarted by Lose over the slots it keeps tells again. Set it before
// the first Gain.
func (s *Sharded) OnListed(fn func(slots []int)) { s.listed = fn }

// Indexer is the resource's index over the held slots. Read only.
func (s *Sharded) Indexer() toolscache.Indexer { return s.indexer }

// Listings returns how many full lists the resource's reflectors have made:
// one per batch of gained slots, more only when a watch had to start over.
func (s *Sharded) Listings() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listings
}

// Gain starts a reflector for slots; OnListed learns when it has listed
// them. ctx bounds the reflector's life.
func (s *Sharded) Gain(ctx context.Context, slots []int) {
	s.mu.Lock()
	for _, n := range slots {
		s.owned[n] = true
	}
	s.mu.Unlock()
	s.startBatch(ctx, slots)
}

// startBatch runs a reflector over exactly slots.
func (s *Sharded) startBatch(ctx context.Context, slots []int) {
	b := &slotBatch{slots: map[int]bool{}, parent: ctx, pages: &pager{first: s.first}, paged: map[string]bool{}}
	for _, n := range slots {
		b.slots[n] = true
	}
	s.mu.Lock()
	s.batches[b] = true
	s.mu.Unlock()

	rctx, cancel := context.WithCancel(ctx)
	b.cancel = cancel
	selector := shard.SlotLabel + " in (" + joinInts(slots) + ")"
	// Each page's objects are cut as the page lands, in pages sized to what their objects
	// decode to (pages.go): the reflector gathers every page before it stores any, and a
	// gain of all the slots of 100,000 pods would otherwise hold them all whole at once (a
	// 1.6 GB peak for a 500 MB cache), a slot of forged 7 MB ConfigMaps all of them.
	list := cutList(b.pages, func(obj runtime.Object) runtime.Object { return s.cutOnPage(b, obj) },
		func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.LabelSelector = selector
			return s.lw.List(ctx, opts)
		})
	lw := newListFirst(
		func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			if opts.Continue == "" {
				b.pagedMu.Lock()
				clear(b.paged) // a list begins again
				b.pagedMu.Unlock()
			}
			return list(ctx, opts)
		},
		func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.LabelSelector = selector
			return s.lw.Watch(ctx, opts)
		},
	)
	r := toolscache.NewReflectorWithOptions(lw, s.newObj(), &batchStore{s: s, b: b}, toolscache.ReflectorOptions{
		Name: fmt.Sprintf("%s[%d slots]", s.name, len(slots)),
	})
	go r.RunWithContext(rctx)
}

// Lose drops the objects of slots from the index, without events. A
// reflector none of whose slots is held any more stops; one that still has
// some is restarted over just those, so that the API server stops sending
// this replica the lost slots' objects (its selector is fixed). That lists
// the slots it keeps again: losing slots costs a list, gaining them never
// does.
func (s *Sharded) Lose(slots []int) {
	s.gate.Lock()
	s.mu.Lock()
	changed := map[*slotBatch]bool{}
	for _, n := range slots {
		delete(s.owned, n)
		for b := range s.batches {
			if b.slots[n] {
				delete(b.slots, n)
				changed[b] = true
			}
		}
	}
	for b := range changed {
		delete(s.batches, b)
	}
	s.mu.Unlock()
	for _, n := range slots {
		objs, _ := s.indexer.ByIndex(bySlot, strconv.Itoa(n))
		for _, o := range objs {
			_ = s.indexer.Delete(o)
			s.forget(o)
		}
	}
	s.gate.Unlock()
	for b := range changed {
		b.cancel() // it stops in its own time; out of s.batches it writes nothing
	}
	for b := range changed {
		if len(b.slots) > 0 && b.parent.Err() == nil {
			kept := make([]int, 0, len(b.slots))
			for n := range b.slots {
				kept = append(kept, n)
			}
			s.startBatch(b.parent, kept)
		}
	}
}

// Stop stops every reflector (they end in their own time, writing nothing
// more) and drops everything.
func (s *Sharded) Stop() {
	s.mu.Lock()
	slots := make([]int, 0, len(s.owned))
	for n := range s.owned {
		slots = append(slots, n)
	}
	s.mu.Unlock()
	s.Lose(slots)
}

// batchStore is what one reflector writes to: the shared index, limited to
// the batch's held slots, with events to the handler.
type batchStore struct {
	s *Sharded
	b *slotBatch
}

// inScope reports whether obj belongs to a slot the batch holds, and the
// batch is live. Callers hold s.gate shared.
func (bs *batchStore) inScope(obj any) bool {
	slot, ok := slotLabel(obj)
	if !ok {
		return false
	}
	bs.s.mu.Lock()
	defer bs.s.mu.Unlock()
	return bs.s.batches[bs.b] && bs.s.owned[slot] && bs.b.slots[slot]
}

func (bs *batchStore) Add(obj any) error { return bs.Update(obj) }

func (bs *batchStore) Update(obj any) error {
	bs.s.gate.RLock()
	defer bs.s.gate.RUnlock()
	return bs.update(obj)
}

func (bs *batchStore) update(obj any) error {
	if !bs.inScope(obj) {
		return nil
	}
	s := bs.s
	key, err := toolscache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		return err
	}
	if s.olderThanFetched(key, obj) {
		return nil
	}
	bs.b.pagedMu.Lock()
	paged := bs.b.paged[key]
	delete(bs.b.paged, key)
	bs.b.pagedMu.Unlock()
	return s.store(key, obj, paged)
}

// store cuts obj (unless it is a stub cut already), puts it in the index at key and tells the
// handlers. A stub of an owner not known when it was cut whose Job is known now is handed to
// refetch once stored: the Job came to the cache between the two, and its handler may have
// looked for the stub before it was there. Callers hold s.gate shared.
func (s *Sharded) store(key string, obj any, stubbed bool) error {
	kept, stub, o := obj, stubbed, owner{}
	if stubbed {
		if m, err := meta.Accessor(obj); err == nil && s.ownerOf != nil {
			o = s.ownerOf(m)
		}
	} else {
		kept, stub, o = s.keep(obj)
	}
	if kept == nil {
		return nil // its cut failed: it is left out, and logged
	}
	old, exists, err := s.indexer.GetByKey(key)
	if err != nil {
		return err
	}
	if err := s.indexer.Update(kept); err != nil {
		return err
	}
	s.mu.Lock()
	if stub {
		s.stubs[key] = !o.known && !madeForBarePods(kept)
	} else {
		delete(s.stubs, key)
	}
	s.mu.Unlock()
	for _, h := range s.handlers {
		if exists {
			h.OnUpdate(old, kept)
		} else {
			h.OnAdd(kept, false)
		}
	}
	if stub && s.refetch != nil && wantsBody(kept, o) {
		if m, err := meta.Accessor(kept); err == nil {
			if now := s.ownerOf(m); now.known && wantsBody(kept, now) {
				s.refetch(s.res, key)
			}
		}
	}
	return nil
}

// forget drops what the resource remembers of obj beyond the index.
func (s *Sharded) forget(obj any) {
	key, err := toolscache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	s.mu.Lock()
	delete(s.stubs, key)
	delete(s.fetched, key)
	s.mu.Unlock()
}

func (bs *batchStore) Delete(obj any) error {
	bs.s.gate.RLock()
	defer bs.s.gate.RUnlock()
	old, exists, err := bs.s.indexer.Get(obj)
	if err != nil || !exists {
		return err
	}
	if !bs.inScope(old) {
		return nil
	}
	if err := bs.s.indexer.Delete(old); err != nil {
		return err
	}
	bs.s.forget(old)
	for _, h := range bs.s.handlers {
		h.OnDelete(obj)
	}
	return nil
}

// Replace is a (re)list of the batch's slots: objects of those slots that
// are not in the list are gone.
func (bs *batchStore) Replace(list []any, _ string) error {
	bs.s.gate.RLock()
	defer bs.s.gate.RUnlock()
	bs.s.mu.Lock()
	live := bs.s.batches[bs.b]
	if live {
		bs.s.listings++
	}
	bs.s.mu.Unlock()
	if !live {
		return nil
	}
	seen := make(map[string]bool, len(list))
	for _, obj := range list {
		if key, err := toolscache.MetaNamespaceKeyFunc(obj); err == nil {
			seen[key] = true
		}
		if err := bs.update(obj); err != nil {
			return err
		}
	}
	bs.b.pagedMu.Lock()
	clear(bs.b.paged)
	bs.b.pagedMu.Unlock()
	bs.s.mu.Lock()
	slots := make([]int, 0, len(bs.b.slots))
	for n := range bs.b.slots {
		slots = append(slots, n)
	}
	first := !bs.b.listed
	bs.b.listed = true
	bs.s.mu.Unlock()
	sort.Ints(slots)
	for _, n := range slots {
		objs, _ := bs.s.indexer.ByIndex(bySlot, strconv.Itoa(n))
		for _, o := range objs {
			if key, err := toolscache.MetaNamespaceKeyFunc(o); err == nil && !seen[key] {
				_ = bs.s.indexer.Delete(o)
				bs.s.forget(o)
				for _, h := range bs.s.handlers {
					h.OnDelete(o)
				}
			}
		}
	}
	if first && bs.s.listed != nil {
		bs.s.listed(slots)
	}
	return nil
}

func (bs *batchStore) Resync() error { return nil }

// slotLabel reads an object's slot label.
func slotLabel(obj any) (int, bool) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return 0, false
	}
	n, err := strconv.Atoi(m.GetLabels()[shard.SlotLabel])
	return n, err == nil
}

func indexBySlot(obj any) ([]string, error) {
	if n, ok := slotLabel(obj); ok {
		return []string{strconv.Itoa(n)}, nil
	}
	return nil, nil
}

// indexByJob indexes by the controlling Job's key.
func indexByJob(obj any) ([]string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil
	}
	if ref := metav1.GetControllerOf(m); ref != nil && ref.Kind == "Job" && strings.HasPrefix(ref.APIVersion, "batch.volcano.sh/") {
		return []string{toolscache.NewObjectName(m.GetNamespace(), ref.Name).String()}, nil
	}
	return nil, nil
}

// indexByBatchJob indexes by the controlling batch/v1 Job's key.
func indexByBatchJob(obj any) ([]string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil
	}
	if ref := metav1.GetControllerOf(m); ref != nil && ref.Kind == "Job" && ref.APIVersion == "batch/v1" {
		return []string{toolscache.NewObjectName(m.GetNamespace(), ref.Name).String()}, nil
	}
	return nil, nil
}

func joinInts(ns []int) string {
	sorted := append([]int(nil), ns...)
	sort.Ints(sorted)
	parts := make([]string, len(sorted))
	for i, n := range sorted {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}
