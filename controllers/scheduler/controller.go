package scheduler

import (
	"context"
	"errors"
	"fmt"
	"math"
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

// Config configures the scheduler controller. Start from DefaultConfig.
type Config struct {
	kit.Config
	// SchedulerNames are the pod scheduler names served, at least one, none
	// empty; the controller serves each once, in sorted order.
	// [kit.DefaultSchedulerName] in DefaultConfig.
	SchedulerNames []string
	// Period is the longest time between two cycles. 1s in DefaultConfig.
	Period time.Duration
	// Debounce is how long a cycle waits after the event that asked for it,
	// so that a burst of events makes one cycle. 50ms in DefaultConfig.
	Debounce time.Duration
	// MessageQuiet is how long the Unschedulable message of a gang still
	// waiting for the same reason is left as written: its amounts move with
	// every pod that starts or ends, and rewriting every waiting PodGroup
	// each cycle would cost a write per waiting gang per cycle. A new reason
	// or phase is written at once. 10s in DefaultConfig.
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
	// at once. 30s in DefaultConfig.
	PodsQuiet time.Duration
	// PodEvents records a Normal Scheduled Event on every pod bound, as
	// kube-scheduler and Volcano's scheduler do. Off by default: it is one
	// more write per pod, ten for a 10-pod gang where the gang's own writes
	// are a handful, and the binding already says the same in the pod's
	// nodeName and PodScheduled condition. The PodGroup's Scheduled Event
	// (one per gang) is recorded either way.
	PodEvents bool
	// Parallelism bounds the bindings and PodGroup writes of a cycle in
	// flight at once, at least one. 16 in DefaultConfig.
	Parallelism int
	// Options tune the allocation: core.DefaultOptions in DefaultConfig.
	Options core.Options
	// Observe, when set, is told of every cycle this replica ran: when it
	// started and ended and what it decided (for tests and tracing).
	Observe func(start, end time.Time, r core.Result)
}

// DefaultConfig returns a Config with every default filled in; the caller
// adds the clients and the ring's Ownership.
func DefaultConfig() Config {
	return Config{
		SchedulerNames: []string{kit.DefaultSchedulerName},
		Period:         time.Second,
		Debounce:       50 * time.Millisecond,
		MessageQuiet:   10 * time.Second,
		PodsQuiet:      30 * time.Second,
		Parallelism:    16,
		Options:        core.DefaultOptions(),
	}
}

// Validate reports every field of c that cannot work. It changes nothing:
// defaults come from DefaultConfig, not from here.
func (c *Config) Validate() error {
	errs := []error{c.Config.Validate()}
	if c.Volcano == nil {
		errs = append(errs, errors.New("a Volcano client is required"))
	}
	if len(c.SchedulerNames) == 0 || slices.Contains(c.SchedulerNames, "") {
		errs = append(errs, fmt.Errorf("scheduler names %q: at least one, none empty (kit.DefaultSchedulerName is Volcano's)", c.SchedulerNames))
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"period", c.Period}, {"debounce", c.Debounce}, {"message quiet", c.MessageQuiet}, {"pods quiet", c.PodsQuiet}} {
		if d.d <= 0 {
			errs = append(errs, fmt.Errorf("%s %v: must be positive", d.name, d.d))
		}
	}
	if c.Parallelism < 1 {
		errs = append(errs, fmt.Errorf("parallelism %d: at least 1", c.Parallelism))
	}
	if f := c.Options.OvercommitFactor; math.IsNaN(f) {
		errs = append(errs, fmt.Errorf("overcommit factor %v: a number (below 1 counts as 1; core.DefaultOptions has Volcano's 1.2)", f))
	}
	return errors.Join(errs...)
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
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("scheduler controller: %w", err)
	}
	// Each name served once, in order; a copy, so the caller's slice stays as it was.
	cfg.SchedulerNames = slices.Compact(slices.Sorted(slices.Values(cfg.SchedulerNames)))
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Controller{
		Fence:     kit.Fence{Valid: cfg.Valid},
		cfg:       cfg,
		log:       cfg.LoggerOr().Named("scheduler"),
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
