package queue

import (
	"sync"

	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// writtenQueues remembers the Queue each status write returned until the informer has caught
// up, so that the next request of the queue decides on the state it just wrote rather than on
// the older cached one (which would only fail on a resourceVersion conflict and retry).
type writtenQueues struct {
	mu     sync.Mutex
	queues map[string]writtenQueue
}

type writtenQueue struct {
	from  string // the resourceVersion the write replaced
	queue *scheduling.Queue
}

func (w *writtenQueues) remember(from string, q *scheduling.Queue) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.queues == nil {
		w.queues = map[string]writtenQueue{}
	}
	w.queues[q.Name] = writtenQueue{from: from, queue: q}
}

// latest returns the written Queue if the cache still holds the version it replaced, else the
// cached one.
func (w *writtenQueues) latest(cached *scheduling.Queue) *scheduling.Queue {
	w.mu.Lock()
	defer w.mu.Unlock()
	if wq, ok := w.queues[cached.Name]; ok {
		if wq.from == cached.ResourceVersion {
			return wq.queue
		}
		delete(w.queues, cached.Name)
	}
	return cached
}

func (w *writtenQueues) forget(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.queues, name)
}
