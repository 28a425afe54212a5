package scheduler

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	vcv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcscheme "volcano.sh/apis/pkg/client/clientset/versioned/scheme"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/controllers/scheduler/core"
)

// eventScheme knows the kinds the scheduler records Events on: Pods and PodGroups.
var eventScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(vcscheme.AddToScheme(s))
	return s
}()

// shift is one stretch of the scheduler running on this replica, from
// gaining the slot of Key to losing it. It owns the informers and what
// cycles carry over (pods bound but not yet seen bound, PodGroups written
// but not yet seen); all of it goes when the shift ends. Only the shift's
// goroutine touches its state.
type shift struct {
	c      *Controller
	slot   int
	ctx    context.Context // the slot's context, also ended by Run's
	cancel context.CancelFunc
	done   chan struct{}

	trigger  chan struct{} // an event asks for a cycle
	watch    *watch
	assumed  assumedPods
	written  cache.Written[*vcv1beta1.PodGroup] // PodGroups written that the informer has not caught up with
	history  *groupHistory
	pods     podCache
	recorder record.EventRecorder
}

// startShift runs the scheduler under slotCtx (and parent) until either ends.
func startShift(parent, slotCtx context.Context, c *Controller, slot int) *shift {
	ctx, cancel := context.WithCancel(slotCtx)
	s := &shift{
		c: c, slot: slot, ctx: ctx, cancel: cancel, done: make(chan struct{}),
		trigger: make(chan struct{}, 1),
		assumed: assumedPods{}, history: newGroupHistory(time.Now()), pods: newPodCache(),
	}
	stopWithParent := context.AfterFunc(parent, cancel)
	go func() {
		defer close(s.done)
		defer stopWithParent()
		s.run()
	}()
	return s
}

// poke asks for a cycle soon; it never blocks (informer handlers call it).
func (s *shift) poke() {
	select {
	case s.trigger <- struct{}{}:
	default:
	}
}

func (s *shift) run() {
	c := s.c
	c.log.Info("this replica runs the scheduler now", "slot", s.slot, "scheduler_names", c.cfg.SchedulerNames)
	c.metrics.active.Set(1)
	defer c.metrics.active.Set(0)

	events := record.NewBroadcaster(record.WithContext(s.ctx))
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.cfg.Kube.CoreV1().Events("")})
	defer events.Shutdown()
	s.recorder = events.NewRecorder(eventScheme, corev1.EventSource{Component: "ringfire-scheduler"})

	s.watch = newWatch(c.cfg, s.poke)
	s.watch.start(s.ctx)
	defer func() {
		s.cancel()
		s.watch.shutdown() // waits for the informers' goroutines; their caches go with s
		c.log.Info("the scheduler stopped on this replica", "reason", context.Cause(s.ctx))
	}()
	if !s.watch.waitForSync(s.ctx) {
		return
	}

	tick := time.NewTicker(c.cfg.Period)
	defer tick.Stop()
	for {
		s.cycle()
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		case <-s.trigger:
			select { // let a burst of events settle into one cycle
			case <-time.After(c.cfg.Debounce):
			case <-s.ctx.Done():
				return
			}
		}
	}
}

// cycle runs one scheduling cycle if this replica still holds the slot:
// read the informers, decide (Allocate), bind, write PodGroup statuses.
func (s *shift) cycle() {
	c := s.c
	select {
	case c.cycleLock <- struct{}{}:
	case <-s.ctx.Done():
		return
	}
	defer func() { <-c.cycleLock }()
	// Checked under cycleLock: once a handover has begun, Drain holds or
	// has passed the lock and no new cycle starts.
	if _, ok := c.cfg.Ownership.SlotContext(s.slot); !ok || s.ctx.Err() != nil || !c.valid() {
		return // not held, or the lease is in doubt: the next cycle looks again
	}
	start := time.Now()
	v := s.view(s.watch.read(), start)
	result := core.Allocate(v.snap, c.cfg.Options)
	decided := time.Now()
	bound := s.bind(v, result.Bindings)
	written := s.writeStatuses(v, result)
	end := time.Now()

	c.metrics.cycle.Observe(end.Sub(start).Seconds())
	c.metrics.gangsUnschedulable.Set(float64(result.Stats.Unschedulable))
	if len(result.Bindings) > 0 || written > 0 {
		c.log.Debug("cycle", "nodes", result.Stats.Nodes, "podgroups", result.Stats.Jobs,
			"admitted", result.Stats.Admitted, "gangs_placed", result.Stats.GangsPlaced,
			"bindings", len(result.Bindings), "bound", bound, "statuses_written", written,
			"unschedulable", result.Stats.Unschedulable, "decide", decided.Sub(start), "took", end.Sub(start))
	}
	if c.cfg.Observe != nil {
		c.cfg.Observe(start, end, result)
	}
}

// stillOwner reports whether the slot is still held and not being handed
// over: between gangs, a cycle stops acting once it is not.
func (s *shift) stillOwner() bool {
	_, ok := s.c.cfg.Ownership.SlotContext(s.slot)
	return ok && s.ctx.Err() == nil && s.c.valid()
}

// valid reports whether this replica's membership is valid right now (Config.Valid): while
// its lease is in doubt, its slots are held and no cycle acts.
func (c *Controller) valid() bool { return c.cfg.Valid == nil || c.cfg.Valid() == nil }
