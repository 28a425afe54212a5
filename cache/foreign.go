package cache

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/ringfire/ringfire/internal/guard"
	"github.com/ringfire/ringfire/shard"
)

// Only ringfire places an object in a slot, but the slot label is a label: anyone who may
// write an object may write it. The slots' caches select by it, in every namespace, so the
// cache does not trust it: an object of a slot is kept in full (as cut.go keeps it) only when
// its controller reference names, by UID, a Job the cache holds (a Volcano Job, or a batch/v1
// Job that ringfire manages). Any other is a foreign object, kept as a stub of a few hundred
// bytes (StubBytes) that still tells what the controllers need of it: its name, which a Job
// may wait for; its owner, by whose UID it is no Job's; its deletion, which wakes that Job;
// the tracking finalizer the batch/v1 Job controller takes off. The foreign objects of each
// resource are counted (ringfire_cache_foreign_objects).
//
// A Job's own objects can come to the cache before the Job does: a slot gained just after its
// last holder made a Job and its pods, a Job re-created under its name, a relist of the Jobs.
// Such an object is stored as a stub, and made whole when its Job comes: the Jobs' handler
// looks for stubs its UID controls, and the object is read again from the API server
// (refetcher), by name. An object stubbed while its Job was being stored is caught by the
// object's side (store). So a Job's object is never a stub for longer than one read after its
// Job is in the cache.

// keep cuts obj for the index: what is stored (nil when not even a stub of it could be made),
// whether it is a stub, and its owner as the cache knows it. A cut that panics (a bug) does
// not end the replica: the object is kept as guard.Stub makes it, a foreign stub, and the
// panic counted (ringfire_handler_panics_total{component="cache"}) and logged.
func (s *Sharded) keep(obj any) (kept any, stub bool, o owner) {
	if s.ownerOf == nil {
		kept, _ = SlimPod(obj)
		return kept, false, owner{known: true}
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return obj, false, owner{} // a tombstone: not the cache's to cut
	}
	done := false
	kept, err = guard.Transform("cache", s.log, func(obj any) (any, error) {
		o = s.ownerOf(m)
		k, st := cut(s.res, obj, o)
		stub, done = st, true
		return k, nil
	})(obj)
	if err != nil {
		return nil, false, owner{}
	}
	if !done {
		return kept, true, owner{}
	}
	return kept, stub, o
}

// cutOnPage cuts an object of a list page of batch b, remembering it when it is cut to a stub.
func (s *Sharded) cutOnPage(b *slotBatch, obj runtime.Object) runtime.Object {
	kept, stub, _ := s.keep(obj)
	if kept == nil {
		return obj // left as it came; its store leaves it out again
	}
	if stub {
		if key, err := toolscache.MetaNamespaceKeyFunc(kept); err == nil {
			b.pagedMu.Lock()
			b.paged[key] = true
			b.pagedMu.Unlock()
		}
	}
	if ro, ok := kept.(runtime.Object); ok {
		return ro
	}
	return obj
}

// olderThanFetched reports whether obj, at key, is older than the version a refetch stored
// (an event that was on its way while the refetch read), and forgets that version once the
// watch has brought it or a newer one.
func (s *Sharded) olderThanFetched(key string, obj any) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	rv, ok := s.fetched[key]
	if !ok {
		return false
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	if older(m.GetResourceVersion(), rv) {
		return true
	}
	delete(s.fetched, key)
	return false
}

// older reports whether resourceVersion a is older than b. Versions are opaque to clients in
// general; this API server's are etcd revisions, and one that is not a number is never older.
func older(a, b string) bool {
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	return err1 == nil && err2 == nil && x < y
}

// ForeignObjects is how many objects of the resource are kept as stubs because their
// controller is no owner the cache knows.
func (s *Sharded) ForeignObjects() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, foreign := range s.stubs {
		if foreign {
			n++
		}
	}
	return n
}

// IsStub reports whether the object at key is kept as a stub: its metadata only.
func (s *Sharded) IsStub(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.stubs[key]
	return ok
}

// ownerCame is told that the Job of key (under index) has come to the cache with uid: its
// stubs that want more are handed to refetch, the others count as foreign no more.
func (s *Sharded) ownerCame(index, key, name string, uid types.UID) {
	objs, err := s.indexer.ByIndex(index, key)
	if err != nil || len(objs) == 0 {
		return
	}
	o := owner{known: true, job: name, uid: uid}
	for _, obj := range objs {
		m, ok := obj.(metav1.Object)
		if !ok || !ControlledBy(m, uid) {
			continue
		}
		k, err := toolscache.MetaNamespaceKeyFunc(obj)
		if err != nil {
			continue
		}
		s.mu.Lock()
		foreign, stub := s.stubs[k]
		if stub && foreign && !wantsBody(obj, o) {
			s.stubs[k] = false // nothing more would be kept of it
		}
		s.mu.Unlock()
		if stub && wantsBody(obj, o) && s.refetch != nil {
			s.refetch(s.res, k)
		}
	}
}

// refresh reads the object at key from the API server and stores it in place of its stub,
// cut as its owner is known now. It stores nothing if the stub has changed or gone meanwhile
// (its watch brought newer news), or its slot is no longer held.
func (s *Sharded) refresh(ctx context.Context, key string) error {
	stubObj, ok, _ := s.indexer.GetByKey(key)
	if !ok || !s.IsStub(key) {
		return nil
	}
	ns, name, err := toolscache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	list, err := s.lw.List(ctx, metav1.ListOptions{
		LabelSelector: shard.SlotLabel,
		FieldSelector: fields.AndSelectors(fields.OneTermEqualSelector("metadata.namespace", ns),
			fields.OneTermEqualSelector("metadata.name", name)).String(),
	})
	if err != nil {
		return fmt.Errorf("read %s %s: %w", s.name, key, err)
	}
	var fresh runtime.Object
	_ = meta.EachListItem(list, func(obj runtime.Object) error {
		if m, err := meta.Accessor(obj); err == nil && m.GetNamespace() == ns && m.GetName() == name {
			fresh = obj
		}
		return nil
	})
	if fresh == nil {
		return nil // deleted: its watch tells
	}
	rv := ""
	if m, err := meta.Accessor(fresh); err == nil {
		rv = m.GetResourceVersion()
	}
	s.gate.RLock()
	defer s.gate.RUnlock()
	now, ok, _ := s.indexer.GetByKey(key)
	if !ok || now != stubObj {
		return nil
	}
	slot, ok := slotLabel(fresh)
	s.mu.Lock()
	held := ok && s.owned[slot]
	if held {
		s.fetched[key] = rv
	}
	s.mu.Unlock()
	if !held {
		return nil
	}
	return s.store(key, fresh, false)
}

// ownerOf is what the cache knows of the controller of m: a Volcano Job in the Jobs' cache
// (in full or as a summary) of the UID the reference names, or a batch/v1 Job ringfire
// manages, with the keys of its selector; else no owner it knows.
func (c *Cache) ownerOf(m metav1.Object) owner {
	ref := metav1.GetControllerOfNoCopy(m)
	if ref == nil || ref.Kind != "Job" || ref.UID == "" {
		return owner{}
	}
	key := toolscache.NewObjectName(m.GetNamespace(), ref.Name).String()
	switch {
	case isVolcanoJob(ref):
		if uid, ok := c.jobs.uid(key); ok && uid == ref.UID {
			return owner{known: true, job: ref.Name, uid: uid}
		}
	case ref.APIVersion == "batch/v1":
		store := c.batchJobs.Load()
		if store == nil {
			return owner{}
		}
		obj, ok, _ := (*store).GetByKey(key)
		if job, isJob := obj.(*batchv1.Job); ok && isJob && job.UID == ref.UID && managed(job) {
			return owner{known: true, job: job.Name, uid: job.UID, labels: selectorKeys(job.Spec.Selector)}
		}
	}
	return owner{}
}

// managed reports whether ringfire runs job.
func managed(job *batchv1.Job) bool {
	return job.Spec.ManagedBy != nil && *job.Spec.ManagedBy == BatchJobManager
}

// selectorKeys are the label keys sel reads.
func selectorKeys(sel *metav1.LabelSelector) map[string]bool {
	if sel == nil {
		return nil
	}
	keys := make(map[string]bool, len(sel.MatchLabels)+len(sel.MatchExpressions))
	for k := range sel.MatchLabels {
		keys[k] = true
	}
	for _, e := range sel.MatchExpressions {
		keys[e.Key] = true
	}
	return keys
}

// jobCame tells the owned resources that the Job namespace/name of uid is in the cache now (a
// Volcano Job, or with batch a batch/v1 Job). It runs under the Jobs' lock: it only looks
// up indexes and hands keys to the refetcher.
func (c *Cache) jobCame(batch bool, namespace, name string, uid types.UID) {
	index := ByJob
	if batch {
		index = ByBatchJob
	}
	key := toolscache.NewObjectName(namespace, name).String()
	for _, r := range Owned {
		c.owned[r].ownerCame(index, key, name, uid)
	}
}

// jobsHandler tells jobCame of every Job that enters the Jobs' cache or changes UID there (a
// relist that missed a delete and a create of the name).
func (c *Cache) jobsHandler(batch bool) toolscache.ResourceEventHandler {
	uidOf := func(obj any) (metav1.Object, bool) {
		m, err := meta.Accessor(obj)
		return m, err == nil
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if m, ok := uidOf(obj); ok {
				c.jobCame(batch, m.GetNamespace(), m.GetName(), m.GetUID())
			}
		},
		UpdateFunc: func(old, cur any) {
			o, ok1 := uidOf(old)
			n, ok2 := uidOf(cur)
			if ok1 && ok2 && o.GetUID() != n.GetUID() {
				c.jobCame(batch, n.GetNamespace(), n.GetName(), n.GetUID())
			}
		},
	}
}

// refetcher reads again, one at a time, the objects whose stubs their Job, come to the cache,
// wants in full (Sharded.refresh). A read that fails is tried again after refetchRetry while
// the stub is there. At most one read of a key is pending.
type refetcher struct {
	c       *Cache
	mu      sync.Mutex
	pending map[refetchKey]bool
	wake    chan struct{}
}

type refetchKey struct {
	r   Resource
	key string
}

// refetchRetry is how soon a failed read is tried again; refetchTimeout bounds one read.
const (
	refetchRetry   = time.Second
	refetchTimeout = 10 * time.Second
)

func newRefetcher(c *Cache) *refetcher {
	return &refetcher{c: c, pending: map[refetchKey]bool{}, wake: make(chan struct{}, 1)}
}

// add asks for a read of key of r; it never blocks.
func (f *refetcher) add(r Resource, key string) {
	f.mu.Lock()
	f.pending[refetchKey{r, key}] = true
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// run reads what add asked for until ctx ends.
func (f *refetcher) run(ctx context.Context) {
	retry := time.NewTimer(refetchRetry)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.wake:
		case <-retry.C:
		}
		f.mu.Lock()
		todo := f.pending
		f.pending = map[refetchKey]bool{}
		f.mu.Unlock()
		failed := false
		for k := range todo {
			rctx, cancel := context.WithTimeout(ctx, refetchTimeout)
			err := f.c.owned[k.r].refresh(rctx, k.key)
			cancel()
			if err != nil && ctx.Err() == nil {
				f.c.log.Warn("cannot read an object whose Job came to the cache after it; trying again", "resource", k.r, "object", k.key, "error", err)
				f.mu.Lock()
				f.pending[k] = true
				f.mu.Unlock()
				failed = true
			}
		}
		if failed {
			retry.Reset(refetchRetry)
		}
	}
}
