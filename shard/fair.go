package shard

import "strings"

// The ready keys are served fairly between namespaces: each namespace with a ready key is a
// flow, and the workers take one key from each flow in turn, each flow's keys in the order
// they became ready. One namespace's thousand ready keys (a RestartJob on each of its large
// Jobs, a burst of creates) wait behind each other, not in front of another namespace's one:
// that one is taken within one turn of the flows, however long the others' queues. A key with
// no namespace ("name", a cluster-scoped object's) is a flow of its own kind, "".

// fairReady is the ready queue: ready keys by flow, the flows with a ready key in a ring.
type fairReady[R any] struct {
	flows      map[string]*flow[R]
	head, tail *flow[R] // the ring of flows with ready keys, served from head
	n          int      // ready keys
	unfair     bool     // one flow for every key (DispatcherConfig.Unfair)
}

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

// push makes b ready at the back of its namespace's flow; a flow that had no ready key joins
// the back of the ring.
func (q *fairReady[R]) push(b *mailbox[R]) {
	name := flowOf(b.key)
	if q.unfair {
		name = ""
	}
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

// pop takes the first ready key of the flow at the head of the ring, and moves that flow to
// the back, or out of the ring (and the map: no memory is kept of an idle namespace) when it
// has no other ready key.
func (q *fairReady[R]) pop() *mailbox[R] {
	f := q.head
	if f == nil {
		return nil
	}
	b := f.keys.pop()
	q.n--
	q.head, f.next = f.next, nil
	if q.head == nil {
		q.tail = nil
	}
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
