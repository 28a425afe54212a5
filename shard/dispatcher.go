package shard

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
)

// A Dispatcher runs a controller's requests, one key at a time and in order
// per key, on the keys of the slots this replica holds (docs/dispatcher.md).
//
// Every key has a mailbox: a FIFO of requests. A key with requests waits in
// one ready queue; any of W workers takes the next ready key, hands its front
// request to the Handler and, once it returns, puts the key back at the tail
// of the ready queue if more requests arrived. A key is thus never in two
// workers at once, its requests run in the order they were enqueued, and a
// slow key holds up only itself.
//
// A failed request stays at the front of its mailbox and is retried after a
// per-key exponential backoff; after MaxRetries retries it is given up
// (OnGiveUp) and the key goes on with its next request. An error Transient
// calls passing is retried for ever and never counts toward MaxRetries.
//
// Work runs only on held slots: Enqueue drops requests for keys of slots that
// are not held (the slot's next owner enqueues all its keys), the Handler's
// context is the slot's context, and a request is dropped at dispatch if its
// slot is no longer held or was lost and regained since it was enqueued.
// Drain (shard.Drainer) waits for the handlers running on given slots.
//
// Enqueue, EnqueueAfter, Drain and Len are safe for concurrent use, before,
// during and after Run.
type Dispatcher[R any] struct {
	workers      int
	ownership    Ownership
	valid        func() error // the Ownership's Validity, if it has one
	handler      func(ctx context.Context, key string, req R) error
	maxRetries   int
	baseBackoff  time.Duration
	maxBackoff   time.Duration
	onGiveUp     func(key string, req R, err error)
	transient    func(error) bool
	maxWait      time.Duration // MaxTransientBackoff
	coalesce     func(queued, incoming R) bool
	name         string
	quarantine   *Quarantine
	onQuarantine func(key, reason string)
	uidOf        func(key string) (string, bool)
	logger       hclog.Logger
	metrics      *dispatchMetrics
	timed        bool         // observe latencies: the metrics are registered
	busy         *busyWorkers // when each worker's handler started, if timed

	// wake tells the timer goroutine that the earliest timer changed.
	wake chan struct{}

	mu      sync.Mutex
	work    *sync.Cond // signalled when a key becomes ready, or on close
	started bool       // Run was called
	closed  bool       // Run's context is done: take no more work
	boxes   map[string]*mailbox[R]
	spare   []*mailbox[R] // emptied mailboxes, for reuse
	ready   fairReady[R]  // fair between namespaces (fair.go)
	// low is the second lane of ready keys (EnqueueLow), taken from when
	// ready is empty or every lowEvery-th take; sinceLow counts the takes
	// from ready since the last from low.
	low      fifoOf[lowEntry[R]]
	sinceLow int
	timers   timerHeap[R]
	queued   int   // requests in mailboxes, less the ones being handled
	added    int64 // requests ever put in a mailbox (workqueue_adds_total)
	running  int   // handlers in flight
	inSlot   []int // handlers in flight, by slot
	draining []*drainWaiter
	told     map[string]bool // quarantined keys OnQuarantine was called for
}

// DispatcherConfig configures a Dispatcher. Start from
// DefaultDispatcherConfig and set Name, Ownership and Handler.
type DispatcherConfig[R any] struct {
	// Name names the dispatcher in logs and in the "name" label of its
	// metrics: the controller's name. Must be unique per Registerer.
	Name string
	// Workers is the number of handlers that run at once (W).
	Workers int
	// Ownership tells which slots are held and gives their contexts.
	Ownership Ownership
	// Handler handles one request of a key. ctx is the context of the key's
	// slot: it is cancelled when the slot is lost or the member fences
	// itself. A non-nil error (or a panic) retries the request.
	Handler func(ctx context.Context, key string, req R) error
	// MaxRetries is how many times a failed request is retried before it is
	// given up; 0 never retries, -1 retries forever. Volcano's default is 15.
	MaxRetries int
	// BaseBackoff is the wait before the first retry of a request; every
	// further failure doubles it, up to MaxBackoff.
	BaseBackoff time.Duration
	MaxBackoff  time.Duration
	// OnGiveUp, if set, is called with the request and its last error when
	// the request failed MaxRetries+1 times, before the key's next request
	// starts (like Volcano's TerminateJob at the requeue limit). It may call
	// Enqueue. Give-ups are logged either way.
	OnGiveUp func(key string, req R, err error)
	// Transient, if set, tells the errors that waiting cures (a throttled or
	// failing API server, a full quota): a request failing with one is
	// retried for ever, after a backoff of its own capped at
	// MaxTransientBackoff, and those failures neither count toward
	// MaxRetries nor reach OnGiveUp. It must be fast and must not call the
	// Dispatcher.
	Transient           func(error) bool
	MaxTransientBackoff time.Duration
	// Coalesce, if set, reports whether incoming may be merged into queued,
	// the last request waiting in the key's mailbox, which then stands for
	// both: true for two pure "resync" requests, false for anything whose
	// occurrence matters. It is called with the dispatcher's lock held and
	// must be fast and must not call the Dispatcher.
	Coalesce func(queued, incoming R) bool
	// Quarantine, if set, keeps poison keys from running (quarantine.go): a
	// key whose handler panics, runs past its time budget, or misbehaves as
	// the Quarantine's watchdog sees it, is not handled again, here or on
	// any replica, until Release; its requests are dropped meanwhile.
	Quarantine *Quarantine
	// Unfair serves the ready keys in the order they became ready, one queue for every
	// namespace, instead of fairly between namespaces (fair.go): for comparisons only.
	Unfair bool
	// OnQuarantine, if set, is told once per quarantine of a key on this
	// replica, with why (to record an Event on its object). It is called
	// from a worker, not under the dispatcher's lock, and may not block.
	OnQuarantine func(key, reason string)
	// UIDOf, if set, gives the UID of the object of key as the replica's
	// cache holds it, and false when it holds none. A quarantine's mark
	// carries the UID of the object it was written for: a mark of another
	// UID (an object deleted and made again under its name while no replica
	// saw the delete) is not this object's and is released at dispatch, and
	// the sweep (every QuarantineSweep) releases the marks of held keys whose
	// object is gone. It is called from workers and the sweep, not under the
	// dispatcher's lock, and must be fast.
	UIDOf func(key string) (string, bool)
	// Logger receives the dispatcher's logs; nil discards them.
	Logger hclog.Logger
	// Registerer, if set, gets the dispatcher's metrics (workqueue_* and
	// ringfire_workqueue_*, dispatchmetrics.go).
	Registerer prometheus.Registerer
}

// DefaultDispatcherConfig returns a config with the defaults: 16 workers,
// 15 retries and client-go's per-item backoff of 5ms doubling up to 1000s
// (the rate limiter Volcano's controllers use), and transient errors (none
// unless Transient is set) retried at least once a minute (see
// DefaultMaxTransientBackoff).
func DefaultDispatcherConfig[R any]() DispatcherConfig[R] {
	return DispatcherConfig[R]{
		Workers:             16,
		MaxRetries:          15,
		BaseBackoff:         5 * time.Millisecond,
		MaxBackoff:          1000 * time.Second,
		MaxTransientBackoff: DefaultMaxTransientBackoff,
	}
}

// DefaultMaxTransientBackoff caps the wait between retries of a request that
// fails transiently. Once the fault ends, a waiting key is tried again within
// this long: a minute is short next to the outage it follows and to a Job's
// run, and Kubernetes' Job controller caps its API backoff at the same
// (MaxJobApiBackOff). While the fault lasts, each waiting key costs the API
// server at most one attempt a minute; client-go's QPS limit bounds the sum.
// A longer cap saves little (a 1000 s cap would leave Jobs idle for a quarter
// of an hour after a quota is raised); a shorter one retries a throttling
// API server harder when it can least afford it.
const DefaultMaxTransientBackoff = time.Minute

// validate reports the first thing wrong with c.
func (c *DispatcherConfig[R]) validate() error {
	switch {
	case c.Name == "":
		return errors.New("field Name is empty: set it to the controller's name")
	case c.Workers < 1:
		return fmt.Errorf("field Workers is %d: need at least 1", c.Workers)
	case c.Ownership == nil:
		return errors.New("field Ownership is nil: pass the shard Manager")
	case c.Handler == nil:
		return errors.New("field Handler is nil")
	case c.MaxRetries < -1:
		return fmt.Errorf("field MaxRetries is %d: use -1 to retry forever", c.MaxRetries)
	case c.BaseBackoff <= 0:
		return fmt.Errorf("field BaseBackoff is %v: must be positive", c.BaseBackoff)
	case c.MaxBackoff < c.BaseBackoff:
		return fmt.Errorf("field MaxBackoff %v is below BaseBackoff %v", c.MaxBackoff, c.BaseBackoff)
	case c.Transient != nil && c.MaxTransientBackoff < c.BaseBackoff:
		return fmt.Errorf("field MaxTransientBackoff %v is below BaseBackoff %v", c.MaxTransientBackoff, c.BaseBackoff)
	}
	return nil
}

// NewDispatcher checks cfg and returns a Dispatcher that runs once Run is
// called. It registers the metrics with cfg.Registerer, if set.
func NewDispatcher[R any](cfg DispatcherConfig[R]) (*Dispatcher[R], error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("dispatcher config: %w", err)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	d := &Dispatcher[R]{
		workers:      cfg.Workers,
		ownership:    cfg.Ownership,
		handler:      cfg.Handler,
		maxRetries:   cfg.MaxRetries,
		baseBackoff:  cfg.BaseBackoff,
		maxBackoff:   cfg.MaxBackoff,
		onGiveUp:     cfg.OnGiveUp,
		transient:    cfg.Transient,
		maxWait:      cfg.MaxTransientBackoff,
		coalesce:     cfg.Coalesce,
		name:         cfg.Name,
		quarantine:   cfg.Quarantine,
		ready:        fairReady[R]{unfair: cfg.Unfair, perFlow: perFlow(cfg.Workers, cfg.Unfair)},
		onQuarantine: cfg.OnQuarantine,
		uidOf:        cfg.UIDOf,
		told:         map[string]bool{},
		logger:       logger.Named("dispatcher").With("dispatcher", cfg.Name),
		wake:         make(chan struct{}, 1),
		boxes:        make(map[string]*mailbox[R]),
	}
	if v, ok := cfg.Ownership.(Validity); ok {
		d.valid = v.Valid
	}
	d.work = sync.NewCond(&d.mu)
	d.busy = newBusyWorkers(cfg.Workers)
	d.metrics = newDispatchMetrics(cfg.Name, dispatchGauges{depth: d.Len, inFlight: d.inFlight, adds: d.adds, busy: d.busy})
	if cfg.Quarantine != nil {
		d.metrics.quarantined = newQuarantinedGauge(cfg.Name, d.quarantinedHere)
	}
	if cfg.Registerer != nil {
		if err := d.metrics.register(cfg.Registerer); err != nil {
			return nil, fmt.Errorf("dispatcher %q: register metrics: %w", cfg.Name, err)
		}
		d.timed = true
	}
	return d, nil
}

// request is one enqueued request with what dispatch needs to know of it.
type request[R any] struct {
	req      R
	term     context.Context // the slot's context when the request was accepted
	queuedAt time.Time       // zero unless the dispatcher is timed
}

// ended reports whether the ownership term the request was accepted in is
// over: a request of an earlier term is stale even if the slot is held again.
func (r *request[R]) ended() bool {
	select {
	case <-r.term.Done():
		return true
	default:
		return false
	}
}

type keyState uint8

const (
	keyIdle    keyState = iota // in no queue: new, or between states
	keyReady                   // in the ready queue
	keyRunning                 // a worker handles its front request
	keyBackoff                 // its front request failed; a timer readies it again
)

// mailbox is the state of one key; it exists while the key has requests.
type mailbox[R any] struct {
	key      string
	slot     int
	reqs     fifo[R] // the front is the next request to handle, or the current
	state    keyState
	started  bool   // the front request went to the handler at least once
	failures int    // consecutive failures of the front request, transient ones left out
	waits    int    // consecutive transient failures of the front request
	backoffs uint64 // times in backoff, to tell a stale retry timer; kept on reuse
	next     *mailbox[R]
	// low: the key is ready in the low lane, entered as lowGen (kept on
	// reuse, to tell a stale entry of the lane).
	low    bool
	lowGen uint64
}

// lowEntry is a key in the low lane, valid while its mailbox is still low
// and of the same generation: an Enqueue moves the key to the first lane and
// leaves the entry behind.
type lowEntry[R any] struct {
	box *mailbox[R]
	gen uint64
}

func (e lowEntry[R]) valid() bool {
	return e.box.low && e.box.lowGen == e.gen && e.box.state == keyReady
}

// lowEvery is how many keys are taken from the first lane, while both have
// keys, for one from the low lane: a steady stream of events slows the
// low-priority keys down but never stops them.
const lowEvery = 4

// fifoOf is a plain queue in a slice.
type fifoOf[T any] struct {
	buf  []T
	head int
}

func (q *fifoOf[T]) len() int { return len(q.buf) - q.head }
func (q *fifoOf[T]) front() T { return q.buf[q.head] }
func (q *fifoOf[T]) push(t T) { q.buf = append(q.buf, t) }
func (q *fifoOf[T]) popFront() {
	var zero T
	q.buf[q.head] = zero
	q.head++
	if q.head == len(q.buf) {
		q.buf, q.head = q.buf[:0], 0
	} else if q.head > 1024 && q.head*2 > len(q.buf) {
		n := copy(q.buf, q.buf[q.head:])
		clear(q.buf[n:])
		q.buf, q.head = q.buf[:n], 0
	}
}

// popFront removes the front request; the next one has not failed yet.
func (b *mailbox[R]) popFront() {
	b.reqs.pop(1)
	b.started, b.failures, b.waits = false, 0, 0
}

// coalesceTarget returns the last request still waiting to start for the
// first time, or nil. A request of an ended term is no target: it is about
// to be dropped.
func (b *mailbox[R]) coalesceTarget() *request[R] {
	n := b.reqs.len()
	if n == 0 || (n == 1 && b.started) {
		return nil
	}
	if last := b.reqs.back(); !last.ended() {
		return last
	}
	return nil
}

// fifo is a queue of requests in a slice. The slots popped at the front are
// reused once the queue is empty or the slice is full.
type fifo[R any] struct {
	buf  []request[R]
	head int
}

func (q *fifo[R]) len() int             { return len(q.buf) - q.head }
func (q *fifo[R]) at(i int) *request[R] { return &q.buf[q.head+i] }
func (q *fifo[R]) front() *request[R]   { return q.at(0) }
func (q *fifo[R]) back() *request[R]    { return q.at(q.len() - 1) }

func (q *fifo[R]) push(r request[R]) {
	if q.head > 0 && len(q.buf) == cap(q.buf) {
		q.compact()
	}
	q.buf = append(q.buf, r)
}

// pop removes n requests from the front.
func (q *fifo[R]) pop(n int) {
	clear(q.buf[q.head : q.head+n]) // let them be collected
	q.head += n
	if q.head == len(q.buf) {
		q.compact()
	}
}

func (q *fifo[R]) compact() {
	n := copy(q.buf, q.buf[q.head:])
	clear(q.buf[n:])
	q.buf, q.head = q.buf[:n], 0
}

// readyList is a FIFO of keys linked through their mailboxes: a flow's ready keys (fair.go).
type readyList[R any] struct{ head, tail *mailbox[R] }

func (l *readyList[R]) push(b *mailbox[R]) {
	if l.tail == nil {
		l.head = b
	} else {
		l.tail.next = b
	}
	l.tail = b
}

func (l *readyList[R]) pop() *mailbox[R] {
	b := l.head
	if b == nil {
		return nil
	}
	l.head, b.next = b.next, nil
	if l.head == nil {
		l.tail = nil
	}
	return b
}

// Enqueue appends req to the mailbox of key. It drops req if the key's slot
// is not held: the slot's next owner enqueues every key of the slot.
func (d *Dispatcher[R]) Enqueue(key string, req R) { d.enqueue(key, req, false) }

// EnqueueLow is Enqueue for a request no event asked for, such as the look a
// replica takes at every key of a slot it has just gained: a key with
// requests already gets req in its mailbox as Enqueue would; a key without
// waits in a second lane, behind every key Enqueue makes ready, until an
// Enqueue of it moves it up. Workers take one key of that lane for every
// lowEvery of the first while both have keys, so that the thousands of keys
// a start or a gain looks at do not stand in front of a new Job for
// minutes, and are still all looked at under a steady stream of events.
func (d *Dispatcher[R]) EnqueueLow(key string, req R) { d.enqueue(key, req, true) }

// enqueue is Enqueue, or EnqueueLow when low is set.
func (d *Dispatcher[R]) enqueue(key string, req R, low bool) {
	slot, term, ok := d.accept(key)
	if !ok {
		return
	}
	r := request[R]{req: req, term: term}
	if d.timed {
		r.queuedAt = time.Now()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		d.metrics.dropped(dropStopped, 1)
		return
	}
	if !low || d.boxes[key] != nil {
		d.enqueueLocked(key, slot, r)
		return
	}
	b := d.newMailboxLocked(key, slot)
	b.reqs.push(r)
	d.queued++
	d.added++
	b.state, b.low = keyReady, true
	b.lowGen++
	d.low.push(lowEntry[R]{box: b, gen: b.lowGen})
	d.work.Signal()
}

// EnqueueAfter enqueues req for key once delay has passed. Like Enqueue it
// drops req if the key's slot is not held, now or when the delay is over.
// Delayed requests are not merged with each other; Coalesce applies when
// they are due.
func (d *Dispatcher[R]) EnqueueAfter(key string, req R, delay time.Duration) {
	if delay <= 0 {
		d.Enqueue(key, req)
		return
	}
	slot, term, ok := d.accept(key)
	if !ok {
		return
	}
	at := time.Now().Add(delay)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		d.metrics.dropped(dropStopped, 1)
		return
	}
	d.addTimerLocked(timer[R]{at: at, key: key, slot: slot, req: request[R]{req: req, term: term}})
}

// accept finds the slot of key and its context, if the slot is held. It
// asks Ownership without holding d.mu: the Manager may hold its own lock
// while it calls Drain.
func (d *Dispatcher[R]) accept(key string) (slot int, term context.Context, ok bool) {
	slots := d.ownership.Slots()
	if slots > 0 {
		slot = SlotOf(key, slots)
		term, ok = d.ownership.SlotContext(slot)
	}
	if !ok {
		d.metrics.dropped(dropNotOwned, 1)
	}
	return slot, term, ok
}

func (d *Dispatcher[R]) enqueueLocked(key string, slot int, r request[R]) {
	b := d.boxes[key]
	if b == nil {
		b = d.newMailboxLocked(key, slot)
	}
	if d.coalesce != nil {
		if last := b.coalesceTarget(); last != nil && d.coalesce(last.req, r.req) {
			d.metrics.coalesced.Inc()
			return
		}
	}
	b.reqs.push(r)
	d.queued++
	d.added++
	switch {
	case b.state == keyIdle:
		d.readyLocked(b)
	case b.state == keyReady && b.low:
		// Waiting in the low lane: an event moves it up; its entry there goes stale.
		b.low = false
		d.ready.push(b)
	case b.state == keyBackoff && b.reqs.front().ended():
		// The failing request is of an ended term and will be dropped: the
		// new term's requests need not wait out its backoff.
		b.backoffs++ // the retry timer is void
		d.readyLocked(b)
	}
}

// readyLocked puts an idle key in the ready queue and wakes a worker.
func (d *Dispatcher[R]) readyLocked(b *mailbox[R]) {
	b.state = keyReady
	d.ready.push(b)
	d.work.Signal()
}

// maxSpare bounds the emptied mailboxes kept for reuse, and maxSpareCap the
// requests a kept one has room for.
const maxSpare, maxSpareCap = 1024, 16

// newMailbox allocates a mailbox and room for its first requests at once.
func newMailbox[R any]() *mailbox[R] {
	m := new(struct {
		box  mailbox[R]
		room [4]request[R]
	})
	m.box.reqs.buf = m.room[:0]
	return &m.box
}

func (d *Dispatcher[R]) newMailboxLocked(key string, slot int) *mailbox[R] {
	var b *mailbox[R]
	if n := len(d.spare); n > 0 {
		b, d.spare = d.spare[n-1], d.spare[:n-1]
		b.key, b.slot = key, slot
	} else {
		b = newMailbox[R]()
		b.key, b.slot = key, slot
	}
	d.boxes[key] = b
	if slot >= len(d.inSlot) {
		d.inSlot = append(d.inSlot, make([]int, slot+1-len(d.inSlot))...)
	}
	return b
}

// freeMailboxLocked forgets an empty, idle key.
func (d *Dispatcher[R]) freeMailboxLocked(b *mailbox[R]) {
	delete(d.boxes, b.key)
	if len(d.spare) < maxSpare && cap(b.reqs.buf) <= maxSpareCap {
		*b = mailbox[R]{reqs: fifo[R]{buf: b.reqs.buf[:0]}, backoffs: b.backoffs, lowGen: b.lowGen}
		d.spare = append(d.spare, b)
	}
}

// Len returns the number of requests waiting in mailboxes, for a worker or
// for a retry. Requests being handled and delayed requests not yet due are
// not counted.
func (d *Dispatcher[R]) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.queued
}

func (d *Dispatcher[R]) adds() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.added
}

func (d *Dispatcher[R]) inFlight() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.running
}

// Run starts the workers and blocks until ctx is done. It then stops taking
// work, waits for the running handlers to return (they end when they finish
// or their slot's context is cancelled) and drops every request left. A
// Dispatcher runs once; a second Run returns at once.
func (d *Dispatcher[R]) Run(ctx context.Context) {
	d.mu.Lock()
	if d.started {
		d.mu.Unlock()
		d.logger.Error("Run called twice; the dispatcher runs once")
		return
	}
	d.started = true
	d.mu.Unlock()

	d.logger.Debug("starting", "workers", d.workers)
	var wg sync.WaitGroup
	for w := range d.workers {
		wg.Go(func() { d.runWorker(w) })
	}
	wg.Go(func() { d.runTimers(ctx) })
	if d.quarantine != nil && d.uidOf != nil {
		wg.Go(func() { d.sweepMarks(ctx) })
	}

	<-ctx.Done()
	d.mu.Lock()
	d.closed = true
	d.work.Broadcast()
	d.mu.Unlock()
	wg.Wait()
	d.dropAll()
	d.logger.Debug("stopped")
}

// dropAll empties every mailbox and timer once the workers are gone.
func (d *Dispatcher[R]) dropAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, t := range d.timers {
		if t.box == nil { // a retry's request is counted in its mailbox
			n++
		}
	}
	for _, b := range d.boxes {
		n += b.reqs.len()
	}
	d.metrics.dropped(dropStopped, n)
	clear(d.boxes)
	d.spare = nil
	d.ready = fairReady[R]{unfair: d.ready.unfair, perFlow: d.ready.perFlow, now: d.ready.now}
	d.low = fifoOf[lowEntry[R]]{}
	d.timers = nil
	d.queued = 0
}

// perFlow is the most keys of one namespace a dispatcher of workers runs at once while others
// are served (fair.go): all but one, with 4 workers or more and fair.
func perFlow(workers int, unfair bool) int {
	if unfair || workers < 4 {
		return 0
	}
	return workers - 1
}

// runWorker takes ready keys and handles their front request until the
// dispatcher closes. It holds d.mu except while it handles a request, and
// settles one key and takes the next under one lock.
func (d *Dispatcher[R]) runWorker(worker int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for {
		for !d.ready.takeable() && !d.lowReadyLocked() && !d.closed {
			d.work.Wait()
		}
		if d.closed {
			return
		}
		t := d.takeLocked()
		d.mu.Unlock()
		o := d.handle(worker, t)
		d.mu.Lock()
		d.settleLocked(t.box, o)
	}
}

// task is a key taken by a worker, with a copy of its front request.
type task[R any] struct {
	box      *mailbox[R]
	req      request[R]
	first    bool // first attempt at this request
	failures int  // failures of this request so far
}

// lowReadyLocked drops the stale entries at the front of the low lane and
// reports whether a key waits there.
func (d *Dispatcher[R]) lowReadyLocked() bool {
	for d.low.len() > 0 && !d.low.front().valid() {
		d.low.popFront()
	}
	return d.low.len() > 0
}

// takeLocked takes the next ready key: from the first lane, but from the
// low one when the first is empty or has had lowEvery turns in a row.
func (d *Dispatcher[R]) takeLocked() task[R] {
	var b *mailbox[R]
	if (!d.ready.takeable() || d.sinceLow >= lowEvery) && d.lowReadyLocked() {
		b = d.low.front().box
		d.low.popFront()
		b.low = false
		d.sinceLow = 0
	} else {
		b = d.ready.pop()
		d.sinceLow++
	}
	b.state = keyRunning
	d.ready.started(b.key)
	d.queued--
	// Count the key in flight before its slot is checked, so that a Drain
	// that starts once the slot is no longer held waits for the check.
	d.running++
	d.inSlot[b.slot]++
	t := task[R]{box: b, req: *b.reqs.front(), first: !b.started, failures: b.failures}
	b.started = true
	return t
}

// outcome is what becomes of a key's front request after a dispatch.
type outcome uint8

const (
	handled     outcome = iota // done, or given up: go on with the next
	retry                      // failed: retry after the key's backoff
	wait                       // failed transiently: retry, however often, after a capped backoff
	slotLost                   // the handler failed as its slot was lost: drop it
	termEnded                  // it and the other requests of an ended term: drop them
	notHeld                    // the slot is not held: drop the whole mailbox
	quarantined                // the key is quarantined: drop the whole mailbox
)

// handle dispatches t's request on worker, if its slot is still held in the
// term the request was accepted in.
func (d *Dispatcher[R]) handle(worker int, t task[R]) outcome {
	slotCtx, held := d.ownership.SlotContext(t.box.slot)
	switch {
	case !held:
		return notHeld
	case t.req.ended():
		return termEnded
	}
	if d.valid != nil {
		if err := d.valid(); err != nil {
			// The lease is in doubt: no handler starts, and the request waits for the
			// renewal's answer or the end of the term, whichever comes.
			d.logger.Debug("lease in doubt; the request waits", "key", t.box.key, "error", err)
			return wait
		}
	}
	ctx := slotCtx
	var run *quarantineRun
	if q := d.quarantine; q != nil {
		if q.await(slotCtx) != nil {
			return slotLost
		}
		if q.weighed(d.name, t.box.key) {
			return wait // its last run's part in the heap's growth is being weighed
		}
		uid := d.uid(t.box.key)
		if m, ok := q.held(d.name, t.box.key); ok {
			if m.UID == "" || uid == "" || m.UID == uid {
				d.tell(t.box.key, m.Reason)
				return quarantined
			}
			// The mark of an earlier object of the name, whose delete no replica saw.
			d.logger.Info("released the quarantine of an earlier object of the name", "key", t.box.key, "marked_uid", m.UID, "uid", uid)
			d.Release(t.box.key)
		}
		run, ctx = q.begin(d.name, t.box.key, slotCtx, uid)
	}
	var start time.Time
	if d.timed {
		start = time.Now()
		if t.first {
			d.metrics.queueLatency.Observe(start.Sub(t.req.queuedAt).Seconds())
		}
		d.busy.start(worker, start)
	}
	panicked, err := d.call(ctx, t.box.key, t.req.req)
	if d.timed {
		d.busy.stop(worker)
		d.metrics.handlerDuration.Observe(time.Since(start).Seconds())
	}
	if run != nil {
		if reason := d.quarantine.end(run, panicked); reason != "" {
			d.logger.Error("key quarantined: it is not handled again until its object changes", "key", t.box.key, "reason", reason)
			d.tell(t.box.key, reason)
			return quarantined
		}
		if d.quarantine.cancelledToWeigh(run) {
			// Its part in the heap's growth is weighed: it goes again once that is done, the
			// cancel counted as a wait, not a failure.
			return wait
		}
	}
	if err == nil {
		return handled
	}
	d.metrics.errors.Inc()
	switch {
	case slotCtx.Err() != nil:
		d.logger.Debug("request failed as its slot was lost; dropping it",
			"key", t.box.key, "slot", t.box.slot, "error", err)
		return slotLost
	case d.transient != nil && d.transient(err):
		d.metrics.retries.Inc()
		d.logger.Debug("request failed transiently; will retry until it passes", "key", t.box.key, "error", err)
		return wait
	case d.maxRetries < 0 || t.failures < d.maxRetries:
		d.metrics.retries.Inc()
		d.logger.Debug("request failed; will retry", "key", t.box.key,
			"failures", t.failures+1, "error", err)
		return retry
	default:
		d.metrics.giveUps.Inc()
		d.logger.Warn("request failed too often; giving up", "key", t.box.key,
			"failures", t.failures+1, "error", err)
		d.giveUp(t.box.key, t.req.req, err)
		return handled
	}
}

// call runs the handler, turning a panic into an error; panicked is what
// the handler panicked with, if it did.
func (d *Dispatcher[R]) call(ctx context.Context, key string, req R) (panicked any, err error) {
	defer func() {
		if p := recover(); p != nil {
			d.metrics.panics.Inc()
			d.logger.Error("handler panicked", "key", key, "panic", p, "stack", string(debug.Stack()))
			panicked, err = p, fmt.Errorf("handler panicked on key %q: %v", key, p)
		}
	}()
	return nil, d.handler(ctx, key, req)
}

// tell calls OnQuarantine for a key once per quarantine.
func (d *Dispatcher[R]) tell(key, reason string) {
	d.mu.Lock()
	told := d.told[key]
	d.told[key] = true
	d.mu.Unlock()
	if told || d.onQuarantine == nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			d.logger.Error("OnQuarantine panicked", "key", key, "panic", p, "stack", string(debug.Stack()))
		}
	}()
	d.onQuarantine(key, reason)
}

// Release ends the quarantine of key, if it was quarantined, here and in
// etcd: its object changed, so what made it a poison may be gone. The
// caller enqueues the key as usual. It reports whether key was quarantined.
func (d *Dispatcher[R]) Release(key string) bool {
	if d.quarantine == nil {
		return false
	}
	released := d.quarantine.release(d.name, key)
	d.mu.Lock()
	delete(d.told, key)
	d.mu.Unlock()
	if released {
		d.logger.Info("quarantine of a key released: its object changed", "key", key)
	}
	return released
}

// QuarantineKey quarantines key, of a slot this replica holds, as if its
// handler had panicked with reason: for a panic of the controller's code
// outside a reconcile, such as an informer event handler's (guard.Handler),
// which would otherwise go unseen here. The key is kept from running here at
// once; its mark is written to etcd in the background. It reports false,
// and does nothing, without a Quarantine or when the slot is not held: the
// holder's own handler sees the same object.
func (d *Dispatcher[R]) QuarantineKey(key, reason string) bool {
	if d.quarantine == nil {
		return false
	}
	slots := d.ownership.Slots()
	if slots == 0 {
		return false
	}
	if _, held := d.ownership.SlotContext(SlotOf(key, slots)); !held {
		return false
	}
	d.quarantine.mark(d.name, key, reason, d.uid(key))
	d.tell(key, reason)
	return true
}

// uid is the UID of key's object as UIDOf tells it, "" when unknown.
func (d *Dispatcher[R]) uid(key string) string {
	if d.uidOf == nil {
		return ""
	}
	uid, _ := d.uidOf(key)
	return uid
}

// QuarantineSweep is how often a dispatcher with UIDOf releases the marks of keys of its held
// slots whose object is gone: the marks in etcd are bounded by the objects that exist, even
// for objects deleted while no replica watched.
var QuarantineSweep = time.Minute

// sweepMarks runs the sweep every QuarantineSweep until ctx is done.
func (d *Dispatcher[R]) sweepMarks(ctx context.Context) {
	tick := time.NewTicker(QuarantineSweep)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		slots := d.ownership.Slots()
		if slots == 0 {
			continue
		}
		for _, key := range d.quarantine.keys(d.name) {
			if _, held := d.ownership.SlotContext(SlotOf(key, slots)); !held {
				continue
			}
			if _, exists := d.uidOf(key); !exists && d.Release(key) {
				d.logger.Info("released the quarantine of a key whose object is gone", "key", key)
			}
		}
	}
}

// quarantinedHere counts the quarantined keys of the slots this replica holds.
func (d *Dispatcher[R]) quarantinedHere() int {
	return d.quarantine.count(d.name, func(key string) bool {
		slots := d.ownership.Slots()
		if slots == 0 {
			return false
		}
		_, ok := d.ownership.SlotContext(SlotOf(key, slots))
		return ok
	})
}

// giveUp calls OnGiveUp while the worker still holds the key, so that it
// runs before the key's next request.
func (d *Dispatcher[R]) giveUp(key string, req R, err error) {
	if d.onGiveUp == nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			d.logger.Error("OnGiveUp panicked", "key", key, "panic", p, "stack", string(debug.Stack()))
		}
	}()
	d.onGiveUp(key, req, err)
}

// settleLocked applies the outcome of a dispatch to the key and releases
// it: back to the ready queue if it has requests, into backoff, or gone. It
// signals no worker: the worker that settles takes the next key itself.
func (d *Dispatcher[R]) settleLocked(b *mailbox[R], o outcome) {
	d.leaveSlotLocked(b.slot)
	if d.ready.settled(b.key); !d.ready.empty() {
		d.work.Signal() // a flow at its limit may start a key again
	}
	switch o {
	case handled:
		b.popFront()
	case retry, wait:
		var delay time.Duration
		if o == wait {
			b.waits++
			delay = min(d.backoff(b.waits), d.maxWait)
		} else {
			b.failures++
			delay = d.backoff(b.failures)
		}
		b.backoffs++
		d.queued++ // the front request waits again
		b.state = keyBackoff
		d.addTimerLocked(timer[R]{at: time.Now().Add(delay), box: b, backoff: b.backoffs})
		return
	case slotLost:
		b.popFront()
		d.metrics.dropped(dropSlotLost, 1)
	case termEnded:
		n := 1
		for n < b.reqs.len() && b.reqs.at(n).ended() {
			n++
		}
		d.dropFrontLocked(b, n, dropSlotLost)
	case notHeld:
		d.dropFrontLocked(b, b.reqs.len(), dropSlotLost)
	case quarantined:
		d.dropFrontLocked(b, b.reqs.len(), dropQuarantined)
	}
	if b.reqs.len() == 0 {
		d.freeMailboxLocked(b)
		return
	}
	b.state = keyReady
	d.ready.push(b)
}

// dropFrontLocked drops the front request of a key just dispatched (not
// counted as queued) and the n-1 after it, for the given reason.
func (d *Dispatcher[R]) dropFrontLocked(b *mailbox[R], n int, reason string) {
	b.reqs.pop(n)
	b.started, b.failures, b.waits = false, 0, 0
	d.queued -= n - 1
	d.metrics.dropped(reason, n)
}

// backoff is the wait before the retry that follows the given number of
// consecutive failures: BaseBackoff doubled per failure after the first,
// capped at MaxBackoff.
func (d *Dispatcher[R]) backoff(failures int) time.Duration {
	wait := d.baseBackoff
	for i := 1; i < failures; i++ {
		if wait > d.maxBackoff/2 {
			return d.maxBackoff
		}
		wait *= 2
	}
	return wait
}

// Drain returns true once no handler runs for a key of the given slots, or
// false if ctx is done first. Handlers that start later are not waited for:
// the caller stops new work first by no longer holding the slots.
func (d *Dispatcher[R]) Drain(ctx context.Context, slots []int) bool {
	d.mu.Lock()
	if d.idleLocked(slots) {
		d.mu.Unlock()
		return true
	}
	w := &drainWaiter{slots: slices.Clone(slots), done: make(chan struct{})}
	d.draining = append(d.draining, w)
	d.mu.Unlock()

	select {
	case <-w.done:
		return true
	case <-ctx.Done():
	}
	d.mu.Lock()
	d.draining = slices.DeleteFunc(d.draining, func(x *drainWaiter) bool { return x == w })
	d.mu.Unlock()
	select {
	case <-w.done: // drained as ctx ended
		return true
	default:
		return false
	}
}

// drainWaiter is a Drain call waiting for its slots to go idle.
type drainWaiter struct {
	slots []int
	done  chan struct{} // closed when the slots are idle
}

func (d *Dispatcher[R]) idleLocked(slots []int) bool {
	for _, s := range slots {
		if s >= 0 && s < len(d.inSlot) && d.inSlot[s] > 0 {
			return false
		}
	}
	return true
}

// leaveSlotLocked counts a handler of slot out and releases the Drain calls
// that waited for the slot to go idle.
func (d *Dispatcher[R]) leaveSlotLocked(slot int) {
	d.running--
	if d.inSlot[slot]--; d.inSlot[slot] > 0 || len(d.draining) == 0 {
		return
	}
	d.draining = slices.DeleteFunc(d.draining, func(w *drainWaiter) bool {
		if !d.idleLocked(w.slots) {
			return false
		}
		close(w.done)
		return true
	})
}

// timer is a pending retry of box's front request, or, with box nil, a
// delayed request of EnqueueAfter.
type timer[R any] struct {
	at      time.Time
	box     *mailbox[R]
	backoff uint64 // box.backoffs when the timer was set
	key     string
	slot    int
	req     request[R]
}

// timerHeap orders timers by due time (container/heap).
type timerHeap[R any] []timer[R]

func (h timerHeap[R]) Len() int           { return len(h) }
func (h timerHeap[R]) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h timerHeap[R]) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *timerHeap[R]) Push(x any)        { *h = append(*h, x.(timer[R])) }
func (h *timerHeap[R]) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = timer[R]{}
	*h = old[:len(old)-1]
	return t
}

func (d *Dispatcher[R]) addTimerLocked(t timer[R]) {
	heap.Push(&d.timers, t)
	if d.timers[0].at.Equal(t.at) {
		select { // the earliest timer changed: tell runTimers
		case d.wake <- struct{}{}:
		default:
		}
	}
}

// runTimers fires retries and delayed requests when due, until ctx is done.
// One goroutine and one time.Timer serve all timers.
func (d *Dispatcher[R]) runTimers(ctx context.Context) {
	clock := time.NewTimer(time.Hour)
	defer clock.Stop()
	for {
		if wait, ok := d.fireDue(time.Now()); ok {
			clock.Reset(wait)
		} else {
			clock.Stop()
		}
		select {
		case <-ctx.Done():
			return
		case <-clock.C:
		case <-d.wake:
		}
	}
}

// fireDue fires the timers due at now and returns the wait until the next.
func (d *Dispatcher[R]) fireDue(now time.Time) (wait time.Duration, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for len(d.timers) > 0 && !d.timers[0].at.After(now) {
		t := heap.Pop(&d.timers).(timer[R])
		switch {
		case t.box != nil:
			if t.box.state == keyBackoff && t.box.backoffs == t.backoff {
				d.readyLocked(t.box)
			}
		case t.req.ended():
			d.metrics.dropped(dropSlotLost, 1)
		default:
			t.req.queuedAt = now
			d.enqueueLocked(t.key, t.slot, t.req)
		}
	}
	if len(d.timers) == 0 {
		return 0, false
	}
	return d.timers[0].at.Sub(now), true
}
