package job

import "sync"

// told remembers, per Job key, the PodGroupPending story recorded last.
type told struct {
	mu    sync.Mutex
	byKey map[string]string
}

// change records story as the Job's and reports whether it is a new one to
// tell; an empty story (nothing pending) is never told, and lets the next
// story be told even if it is the last one again.
func (t *told) change(key, story string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if story == "" {
		delete(t.byKey, key)
		return false
	}
	if t.byKey[key] == story {
		return false
	}
	if t.byKey == nil {
		t.byKey = map[string]string{}
	}
	t.byKey[key] = story
	return true
}

func (t *told) forget(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.byKey, key)
}

func (t *told) forgetWhere(drop func(key string) bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for key := range t.byKey {
		if drop(key) {
			delete(t.byKey, key)
		}
	}
}
