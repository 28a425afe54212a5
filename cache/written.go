package cache

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Written remembers the object each write of a controller returned until
// its informer has caught up, so that the next request of the key decides
// on what it just wrote and not on the older cached copy (which would only
// fail on a resourceVersion conflict and retry, or worse, undo a step).
// Writes can chain before the informer sees the first: each remembers every
// version it replaced, directly or through the writes before it.
//
// The zero value is ready to use; it is safe for concurrent use.
type Written[T metav1.Object] struct {
	mu   sync.Mutex
	objs map[string]written[T]
}

type written[T metav1.Object] struct {
	replaced map[string]bool // resourceVersions obj supersedes
	obj      T
}

// Remember records obj, returned by a write to key that was computed from
// the object at resourceVersion from.
func (w *Written[T]) Remember(key, from string, obj T) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.objs == nil {
		w.objs = map[string]written[T]{}
	}
	replaced := map[string]bool{from: true}
	if prev, ok := w.objs[key]; ok && prev.obj.GetResourceVersion() == from {
		for rv := range prev.replaced {
			replaced[rv] = true
		}
	}
	w.objs[key] = written[T]{replaced: replaced, obj: obj}
}

// Latest returns the written object of key while the cached one is a
// version it replaced, else cached (and forgets the written one: the
// informer has caught up, or someone else wrote since).
func (w *Written[T]) Latest(key string, cached T) T {
	w.mu.Lock()
	defer w.mu.Unlock()
	if wo, ok := w.objs[key]; ok {
		if wo.replaced[cached.GetResourceVersion()] {
			return wo.obj
		}
		delete(w.objs, key)
	}
	return cached
}

// Forget drops what is remembered of key, e.g. when the object is deleted.
func (w *Written[T]) Forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.objs, key)
}

// Len is how many keys have a written object remembered.
func (w *Written[T]) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.objs)
}
