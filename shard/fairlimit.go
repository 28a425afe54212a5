package shard

import (
	"context"
	"strings"
	"sync"
	"time"
)

// FairLimiter is a client-side rate limiter (client-go's flowcontrol.RateLimiter) that shares
// its requests a second fairly between namespaces. client-go's token bucket serves waiters in
// the order they came: one namespace's RestartJob on twenty large Jobs puts hundreds of deletes
// in front of every other namespace's first create, so a two-pod Job waits for seconds behind
// work that is not its own. Here each waiting request joins the flow of its namespace (the
// namespace of the key whose reconcile it is made for, read from its context; "" for requests
// of no reconcile: informers' lists, Events) and tokens go to the flows in turn, each flow's
// requests in their order. A namespace alone gets the whole rate; two busy namespaces get half
// each, whatever their queues' lengths.
//
// The bucket is client-go's: qps tokens a second, up to burst at once, a request that finds a
// token and no one waiting passes at once.
type FairLimiter struct {
	qps   float64
	burst float64

	mu      sync.Mutex
	tokens  float64
	last    time.Time
	waiting fairFlows
	serving bool // a goroutine hands tokens to the waiters
	stopped bool
	wake    chan struct{} // wakes the serving goroutine early (Stop)
}

// NewFairLimiter is a FairLimiter of qps requests a second and burst at once (qps > 0, burst ≥ 1).
func NewFairLimiter(qps float32, burst int) *FairLimiter {
	return &FairLimiter{qps: float64(qps), burst: float64(max(burst, 1)), tokens: float64(max(burst, 1)), last: time.Now(),
		wake: make(chan struct{}, 1)}
}

// fairWaiter is one request waiting for a token.
type fairWaiter struct {
	ready   chan struct{} // closed when it is given a token
	granted bool
	gone    bool // its context ended first: skipped
	next    *fairWaiter
}

// fairFlow is the waiters of one namespace, in order.
type fairFlow struct {
	name       string
	head, tail *fairWaiter
	next       *fairFlow
}

// fairFlows are the flows with waiters in a ring, served from head.
type fairFlows struct {
	byName     map[string]*fairFlow
	head, tail *fairFlow
}

func (q *fairFlows) push(name string, w *fairWaiter) {
	f := q.byName[name]
	if f == nil {
		if q.byName == nil {
			q.byName = map[string]*fairFlow{}
		}
		f = &fairFlow{name: name}
		q.byName[name] = f
		q.join(f)
	}
	if f.tail == nil {
		f.head = w
	} else {
		f.tail.next = w
	}
	f.tail = w
}

func (q *fairFlows) join(f *fairFlow) {
	if q.tail == nil {
		q.head = f
	} else {
		q.tail.next = f
	}
	q.tail = f
}

// pop takes the first live waiter of the flow at the head and moves that flow to the back
// (or out, when it has no other waiter). Waiters whose context ended are dropped on the way.
func (q *fairFlows) pop() *fairWaiter {
	for q.head != nil {
		f := q.head
		q.head, f.next = f.next, nil
		if q.head == nil {
			q.tail = nil
		}
		var w *fairWaiter
		for f.head != nil && w == nil {
			c := f.head
			f.head, c.next = c.next, nil
			if !c.gone {
				w = c
			}
		}
		if f.head == nil {
			f.tail = nil
			delete(q.byName, f.name)
		} else {
			q.join(f)
		}
		if w != nil {
			return w
		}
	}
	return nil
}

func (q *fairFlows) empty() bool { return q.head == nil }

// refillLocked adds the tokens earned since last.
func (l *FairLimiter) refillLocked(now time.Time) {
	if d := now.Sub(l.last); d > 0 {
		l.tokens = min(l.burst, l.tokens+d.Seconds()*l.qps)
		l.last = now
	}
}

// Wait blocks until the request whose context ctx is may go, or ctx ends.
func (l *FairLimiter) Wait(ctx context.Context) error {
	l.mu.Lock()
	l.refillLocked(time.Now())
	if l.waiting.empty() && l.tokens >= 1 || l.stopped {
		l.tokens--
		l.mu.Unlock()
		return nil
	}
	w := &fairWaiter{ready: make(chan struct{})}
	l.waiting.push(namespaceOfContext(ctx), w)
	if !l.serving {
		l.serving = true
		go l.serve()
	}
	l.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		l.mu.Lock()
		defer l.mu.Unlock()
		if w.granted {
			return nil // given its token as its context ended: it may go
		}
		w.gone = true
		return ctx.Err()
	}
}

// serve hands tokens to the waiters, one flow after another, until none waits.
func (l *FairLimiter) serve() {
	for {
		l.mu.Lock()
		l.refillLocked(time.Now())
		for l.tokens >= 1 || l.stopped {
			w := l.waiting.pop()
			if w == nil {
				break
			}
			l.tokens--
			w.granted = true
			close(w.ready)
		}
		if l.waiting.empty() {
			l.serving = false
			l.mu.Unlock()
			return
		}
		wait := time.Duration((1 - l.tokens) / l.qps * float64(time.Second))
		l.mu.Unlock()
		t := time.NewTimer(max(wait, time.Millisecond))
		select {
		case <-t.C:
		case <-l.wake:
			t.Stop()
		}
	}
}

// TryAccept takes a token if one is there and no one waits.
func (l *FairLimiter) TryAccept() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refillLocked(time.Now())
	if l.waiting.empty() && l.tokens >= 1 {
		l.tokens--
		return true
	}
	return false
}

// Accept blocks until a token is given, in the flow of no namespace.
func (l *FairLimiter) Accept() { _ = l.Wait(context.Background()) }

// Stop lets every waiter and every later request go at once.
func (l *FairLimiter) Stop() {
	l.mu.Lock()
	l.stopped = true
	serving := l.serving
	if !serving && !l.waiting.empty() {
		l.serving = true
	}
	l.mu.Unlock()
	if !serving {
		go l.serve()
		return
	}
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// QPS is the limiter's rate.
func (l *FairLimiter) QPS() float32 { return float32(l.qps) }

// namespaceOfContext is the namespace of the key whose run ctx belongs to ("" for a context of
// no run, or of a key with no namespace).
func namespaceOfContext(ctx context.Context) string {
	r, ok := ctx.Value(runKey{}).(*quarantineRun)
	if !ok {
		return ""
	}
	_, key, _ := strings.Cut(r.id, "/") // "<dispatcher>/<namespace>/<name>"
	return flowOf(key)
}
