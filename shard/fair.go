package shard

import (
	"strings"
	"time"
)

// The ready keys are served fairly between namespaces: each namespace with a ready key is a
// flow, and the workers take one key from each flow in turn, each flow's keys in the order
// they became ready. One namespace's thousand ready keys (a RestartJob on each of its large
// Jobs, a burst of creates) wait behind each other, not in front of another namespace's one:
// that one is taken within one turn of the flows, however long the others' queues. A key with
// no namespace ("name", a cluster-scoped object's) is a flow of its own kind, "".
//
// Turns alone do not keep a worker for the other namespaces: when every worker runs one
// namespace's long reconciles (a kill's deletes at a busy API server), another namespace's key
// waits for one of them to end. So while other namespaces have started keys within the last
// sharedFor, no namespace runs on more than all the workers but one (perFlow, with 4 workers
// or more): one worker stays free for the others' next key. A namespace alone on the replica
// has every worker.

// fairReady is the ready queue: ready keys by flow, the flows with a ready key in a ring.
type fairReady[R any] struct {
	flows      map[string]*flow[R]
	head, tail *flow[R] // the ring of flows with ready keys, served from head
	n          int      // ready keys
	unfair     bool     // one flow for every key (DispatcherConfig.Unfair)
	// perFlow, when positive, is the most keys of one flow in flight at once; running counts
	// them (started, not yet settled), by flow.
	perFlow int
	running map[string]int
	// recent is when each flow last started a key, kept for sharedFor: the namespaces the
	// replica serves now. Stale entries go as it grows (started).
	recent map[string]time.Time
	now    func() time.Time
}

// sharedFor is how long after another namespace's last start a namespace is kept to perFlow.
const sharedFor = 30 * time.Second

// flow is the ready keys of one namespace.
type flow[R any] struct {
	name string
	keys readyList[R]
	next *flow[R]
}

// flowOf is the namespace of key ("namespace/name"), or "" for a key without one.
func flowOf(key string) string {
	ns, _, ok := strings.Cut(key, "/")
	if !ok {
		return ""
	}
	return ns
}

func (q *fairReady[R]) empty() bool { return q.n == 0 }

// flowName is the flow of key.
func (q *fairReady[R]) flowName(key string) string {
	if q.unfair {
		return ""
	}
	return flowOf(key)
}

// open reports whether a key of flow name may start: its flow runs fewer than perFlow.
func (q *fairReady[R]) open(name string) bool {
	if q.perFlow <= 0 || q.running[name] < q.perFlow {
		return true
	}
	since := q.clock().Add(-sharedFor)
	for other, at := range q.recent {
		if other != name && at.After(since) {
			return false // others are served now: one worker stays theirs
		}
	}
	return true
}

func (q *fairReady[R]) clock() time.Time {
	if q.now != nil {
		return q.now()
	}
	return time.Now()
}

// takeable reports whether pop would find a key: one of a flow that may start one.
func (q *fairReady[R]) takeable() bool {
	for f := q.head; f != nil; f = f.next {
		if q.open(f.name) {
			return true
		}
	}
	return false
}

// started and settled count a key of key's flow in flight (taken from either lane).
func (q *fairReady[R]) started(key string) {
	if q.perFlow <= 0 {
		return
	}
	if q.running == nil {
		q.running, q.recent = map[string]int{}, map[string]time.Time{}
	}
	name, now := q.flowName(key), q.clock()
	q.running[name]++
	if len(q.recent) >= 64 {
		for other, at := range q.recent {
			if now.Sub(at) > sharedFor {
				delete(q.recent, other)
			}
		}
	}
	q.recent[name] = now
}

func (q *fairReady[R]) settled(key string) {
	if q.perFlow <= 0 {
		return
	}
	name := q.flowName(key)
	if q.running[name]--; q.running[name] <= 0 {
		delete(q.running, name) // no memory is kept of an idle namespace
	}
}

// push makes b ready at the back of its namespace's flow; a flow that had no ready key joins
// the back of the ring.
func (q *fairReady[R]) push(b *mailbox[R]) {
	name := q.flowName(b.key)
	f := q.flows[name]
	if f == nil {
		if q.flows == nil {
			q.flows = map[string]*flow[R]{}
		}
		f = &flow[R]{name: name}
		q.flows[name] = f
		q.join(f)
	}
	f.keys.push(b)
	q.n++
}

// pop takes the first ready key of the first flow in the ring that may start one, and moves
// that flow to the back, or out of the ring (and the map: no memory is kept of an idle
// namespace) when it has no other ready key. It returns nil when no flow may start a key.
func (q *fairReady[R]) pop() *mailbox[R] {
	var prev *flow[R]
	f := q.head
	for f != nil && !q.open(f.name) {
		prev, f = f, f.next
	}
	if f == nil {
		return nil
	}
	b := f.keys.pop()
	q.n--
	// Out of the ring.
	if prev == nil {
		q.head = f.next
	} else {
		prev.next = f.next
	}
	if q.tail == f {
		q.tail = prev
	}
	f.next = nil
	if f.keys.head == nil {
		delete(q.flows, f.name)
	} else {
		q.join(f)
	}
	return b
}

// join puts f at the back of the ring.
func (q *fairReady[R]) join(f *flow[R]) {
	if q.tail == nil {
		q.head = f
	} else {
		q.tail.next = f
	}
	q.tail = f
}
