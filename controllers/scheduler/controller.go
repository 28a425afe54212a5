package scheduler

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ringfire/ringfire/shard"

	"github.com/ringfire/ringfire/controllers/kit"
	"github.com/ringfire/ringfire/controllers/scheduler/core"
)

// podsAtMost × PodsQuiet bounds how long a PodGroup's changing counts go
// unwritten.
const podsAtMost = 10

// Key is the scheduler's ring key: the replica that holds the slot of this
// key runs the scheduler, and no other (docs/design.md: a ring singleton).
const Key = "ringfire/scheduler"

// Config configures the scheduler controller.
type Config struct {
	kit.Config
	// SchedulerNames are the pod scheduler names served. Default
	// [kit.DefaultSchedulerName].
	SchedulerNames []string
	// Period is the longest time between two cycles. Default 1s.
	Period time.Duration
	// Debounce is how long a cycle waits after the event that asked for it,
	// so that a burst of events makes one cycle. Default 50ms.
	Debounce time.Duration
	// MessageQuiet is how long the Unschedulable message of a gang still
	// waiting for the same reason is left as written: its amounts move with
	// every pod that starts or ends, and rewriting every waiting PodGroup
	// each cycle would cost a write per waiting gang per cycle. A new reason
	// or phase is written at once. Default 10s.
	MessageQuiet time.Duration
	// PodsQuiet: what moves with a gang's pods is written on its own once
	// the PodGroup's status has stood still this long, and at the latest
	// 10 × PodsQuiet after the PodGroup's last write: its counts (running,
	// succeeded, failed), the NotEnoughTasks condition of an admitted gang
	// whose pods are still being made, and Completed once they have all
	// ended. Writing each would cost several writes per gang (Volcano
	// writes the counts at most once per 1 s session, and never that
	// condition), and a Job's PodGroup is deleted soon after its pods end.
	// A write that is due anyway (another phase, a condition) carries them
	// at once. Default 30s.
	PodsQuiet time.Duration
	// PodEvents records a Normal Scheduled Event on every pod bound, as
	// kube-scheduler and Volcano's scheduler do. Off by default: it is one
	// more write per pod, ten for a 10-pod gang where the gang's own writes
	// are a handful, and the binding already says the same in the pod's
	// nodeName and PodScheduled condition. The PodGroup's Scheduled Event
	// (one per gang) is recorded either way.
	PodEvents bool
	// Parallelism bounds the bindings and PodGroup writes of a cycle in
	// flight at once. Default 16.
	Parallelism int
	// Options tune the allocation; zero means DefaultOptions.
	Options core.Options
	// Observe, when set, is told of every cycle this replica ran: when it
	// started and ended and what it decided (for tests and tracing).
	Observe func(start, end time.Time, r core.Result)
}

// Controller runs the gang scheduler as a ring singleton. It implements
// shard.Listener (it starts when this replica gains the slot of Key and
// stops when it loses it) and shard.Drainer (a handover waits for the cycle
// in flight). Run must be running for it to do anything.
type Controller struct {
	kit.Fence
	cfg     Config
	log     hclog.Logger
	metrics *metrics

	// wake tells Run that the slots held here changed.
	wake chan struct{}
	// cycleLock is held by a cycle from its ownership check to its last
	// write; Drain takes it to wait for the cycle in flight.
	cycleLock chan struct{}

	mu    sync.Mutex
	shift *shift // the scheduler's run on this replica, nil when not running
}

// New validates cfg and returns a Controller.
func New(cfg Config) (*Controller, error) {
	if cfg.Kube == nil || cfg.Volcano == nil || cfg.Ownership == nil {
		return nil, errors.New("scheduler controller: Kube, Volcano and Ownership are required")
	}
	if len(cfg.SchedulerNames) == 0 {
		cfg.SchedulerNames = []string{kit.DefaultSchedulerName}
	}
	for _, name := range cfg.SchedulerNames {
		if name == "" {
			return nil, errors.New("scheduler controller: an empty scheduler name")
		}
	}
	cfg.SchedulerNames = slices.Compact(slices.Sorted(slices.Values(cfg.SchedulerNames)))
	if cfg.Period <= 0 {
		cfg.Period = time.Second
	}
	if cfg.Debounce <= 0 {
		cfg.Debounce = 50 * time.Millisecond
	}
	if cfg.MessageQuiet <= 0 {
		cfg.MessageQuiet = 10 * time.Second
	}
	if cfg.PodsQuiet <= 0 {
		cfg.PodsQuiet = 30 * time.Second
	}
	if cfg.Parallelism <= 0 {
		cfg.Parallelism = 16
	}
	if cfg.Options == (core.Options{}) {
		cfg.Options = core.DefaultOptions()
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Controller{
		Fence:     kit.Fence{Valid: cfg.Valid},
		cfg:       cfg,
		log:       cfg.Logger.Named("scheduler"),
		metrics:   m,
		wake:      make(chan struct{}, 1),
		cycleLock: make(chan struct{}, 1),
	}, nil
}

// slot is the slot of Key, valid once the ring's slot count is known.
func (c *Controller) slot() int { return shard.SlotOf(Key, c.cfg.Ownership.Slots()) }

// SlotsGained implements shard.Listener: Run starts the scheduler if the
// slot of Key is among slots.
func (c *Controller) SlotsGained(slots []int) {
	if slices.Contains(slots, c.slot()) {
		c.poke()
	}
}

// SlotsLost implements shard.Listener: the scheduler's run has ended with
// its slot's context; Run drops what it held.
func (c *Controller) SlotsLost(slots []int) {
	if slices.Contains(slots, c.slot()) {
		c.poke()
	}
}

func (c *Controller) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Drain implements shard.Drainer: it returns once no cycle is in flight.
// The Manager has stopped new work on the slot before it drains, and a
// cycle checks ownership after taking cycleLock, so none starts after.
func (c *Controller) Drain(ctx context.Context, slots []int) bool {
	if !slices.Contains(slots, c.slot()) {
		return true
	}
	select {
	case c.cycleLock <- struct{}{}:
		<-c.cycleLock
		return true
	case <-ctx.Done():
		return false
	}
}

// Active reports whether the scheduler runs on this replica now.
func (c *Controller) Active() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.shift != nil && c.shift.ctx.Err() == nil
}

// Run starts the scheduler whenever this replica holds the slot of Key and
// reaps it when the slot is lost, until ctx is done.
func (c *Controller) Run(ctx context.Context) {
	poll := time.NewTicker(time.Second) // a safety net under the listener calls
	defer poll.Stop()
	defer c.reap(true)
	for {
		c.reap(false)
		c.startIfOwner(ctx)
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		case <-poll.C:
		}
	}
}

// startIfOwner starts a shift when the slot of Key is held here and none runs.
func (c *Controller) startIfOwner(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shift != nil || ctx.Err() != nil {
		return
	}
	slot := c.slot()
	slotCtx, ok := c.cfg.Ownership.SlotContext(slot)
	if !ok {
		return
	}
	c.shift = startShift(ctx, slotCtx, c, slot)
}

// reap waits for a shift whose context has ended (or for every shift when
// stopping) and forgets it, with its informers.
func (c *Controller) reap(stop bool) {
	c.mu.Lock()
	s := c.shift
	c.mu.Unlock()
	if s == nil || (!stop && s.ctx.Err() == nil) {
		return
	}
	s.cancel()
	<-s.done
	c.mu.Lock()
	c.shift = nil
	c.mu.Unlock()
}
