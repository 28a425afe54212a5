package guard

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/hashicorp/go-hclog"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
)

// Transform returns f with every call recovered. An object whose transform
// panics is counted in ringfire_handler_panics_total{component}, logged with
// its key and the stack, and stored as Stub(obj): the transform's error
// would not drop it alone, it fails the informer's whole list (client-go's
// FIFO refuses the list at the first error, and the reflector lists again,
// for ever), so that no object of the kind would be cached. Only where not
// even a stub can be made is an error returned.
func Transform(component string, log hclog.Logger, f toolscache.TransformFunc) toolscache.TransformFunc {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return func(obj any) (out any, err error) {
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			panics.WithLabelValues(component).Inc()
			key := describe(obj)
			out, err = Stub(obj)
			log.Error("an informer transform panicked; the object is cached as a stub of its name, UID, owners and ringfire labels",
				"component", component, "object", key, "stub", err == nil, "panic", fmt.Sprint(p), "stack", stack())
			if err != nil {
				out, err = nil, fmt.Errorf("transform of %s panicked (%v), and no stub of it could be made: %w", key, p, err)
			}
		}()
		return f(obj)
	}
}

// Stub bounds: a stub is a few hundred bytes whatever obj carried.
const (
	stubOwners = 4 // owner references kept, the controller's first
	stubLabels = 8 // ringfire.io/ labels kept
)

// StubLabelPrefix is the prefix of the labels a Stub keeps: ringfire's own,
// the slot label among them.
const StubLabelPrefix = "ringfire.io/"

// slotLabel is shard.SlotLabel (a test holds them equal), kept first: this
// package imports no other of ringfire's.
const slotLabel = StubLabelPrefix + "slot"

// Stub returns a new object of obj's type that carries only obj's kind,
// name, namespace, UID, resourceVersion, generation, creation and deletion
// times, at most 4 owner references (the controller's first) and at most 8
// labels with the prefix ringfire.io/ (the slot's among them); no spec, no
// status. Label keys and values, names and UIDs are bounded by the API
// server's validation, so a stub costs a few hundred bytes whatever obj
// carried. obj must be a pointer to a struct that implements metav1.Object;
// Stub never panics.
func Stub(obj any) (stub any, err error) {
	defer func() {
		if p := recover(); p != nil {
			stub, err = nil, fmt.Errorf("stub of a %T: %v", obj, p)
		}
	}()
	src, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	t := reflect.TypeOf(obj)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("a %T is not a pointer to a struct", obj)
	}
	out := reflect.New(t.Elem()).Interface()
	dst, err := meta.Accessor(out)
	if err != nil {
		return nil, err
	}
	if ro, ok := obj.(runtime.Object); ok {
		if to, ok := out.(runtime.Object); ok {
			to.GetObjectKind().SetGroupVersionKind(ro.GetObjectKind().GroupVersionKind())
		}
	}
	dst.SetName(src.GetName())
	dst.SetNamespace(src.GetNamespace())
	dst.SetUID(src.GetUID())
	dst.SetResourceVersion(src.GetResourceVersion())
	dst.SetGeneration(src.GetGeneration())
	dst.SetCreationTimestamp(src.GetCreationTimestamp())
	dst.SetDeletionTimestamp(src.GetDeletionTimestamp())
	dst.SetOwnerReferences(stubOwnersOf(src.GetOwnerReferences()))
	var labels map[string]string
	if v, ok := src.GetLabels()[slotLabel]; ok {
		labels = map[string]string{slotLabel: v}
	}
	var more []string
	for k := range src.GetLabels() {
		if strings.HasPrefix(k, StubLabelPrefix) && k != slotLabel {
			more = append(more, k)
		}
	}
	slices.Sort(more) // which are kept does not depend on map order
	for _, k := range more {
		if len(labels) == stubLabels {
			break
		}
		if labels == nil {
			labels = map[string]string{}
		}
		labels[k] = src.GetLabels()[k]
	}
	dst.SetLabels(labels)
	return out, nil
}

// stubOwnersOf keeps the controller's reference and the first others, up
// to stubOwners in all.
func stubOwnersOf(refs []metav1.OwnerReference) []metav1.OwnerReference {
	if len(refs) == 0 {
		return nil
	}
	out := make([]metav1.OwnerReference, 0, min(len(refs), stubOwners))
	for _, r := range refs {
		if r.Controller != nil && *r.Controller {
			out = append(out, r)
			break
		}
	}
	for _, r := range refs {
		if len(out) == stubOwners {
			break
		}
		if r.Controller == nil || !*r.Controller {
			out = append(out, r)
		}
	}
	return out
}
