package guard

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
)

// KeyOf returns obj's namespace/name (name alone for a cluster-scoped
// object), from the object or from a tombstone's key; "" when obj has none.
// It never panics: it runs in a recover, on whatever a handler was given.
func KeyOf(obj any) (key string) {
	defer func() {
		if recover() != nil {
			key = ""
		}
	}()
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		if d.Key != "" {
			return d.Key
		}
		obj = d.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil || m == nil {
		return ""
	}
	if m.GetNamespace() == "" {
		return m.GetName()
	}
	return m.GetNamespace() + "/" + m.GetName()
}

// describe is KeyOf for logs: the key, else the object's type.
func describe(obj any) string {
	if key := KeyOf(obj); key != "" {
		return key
	}
	return fmt.Sprintf("(an object of type %T with no name)", obj)
}
