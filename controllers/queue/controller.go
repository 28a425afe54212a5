package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcscheme "volcano.sh/apis/pkg/client/clientset/versioned/scheme"
	vcinformers "volcano.sh/apis/pkg/client/informers/externalversions"
	vcbusinformers "volcano.sh/apis/pkg/client/informers/externalversions/bus/v1alpha1"
	vcschedulinginformers "volcano.sh/apis/pkg/client/informers/externalversions/scheduling/v1beta1"
	schedulinglisters "volcano.sh/apis/pkg/client/listers/scheduling/v1beta1"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/controllers/kit"
	"github.com/ringfire/ringfire/internal/guard"
	"github.com/ringfire/ringfire/shard"
)

// Config configures the Queue controller.
type Config struct {
	kit.Config
	kit.Work
	// StatusInterval is the window over which a queue's count-only status changes (its
	// PodGroup counts) are merged into one write (kit.Pacer): a change waits a window from the
	// first change held and from the last write. State changes are written at once. Positive:
	// DefaultStatusInterval in DefaultConfig.
	StatusInterval time.Duration
	// Shared, when set, are informers whose owner starts them (the replica's cache), so that
	// a replica watches each kind once. Nil makes informers of the controller's own, started
	// by Run.
	Shared *Informers
}

// DefaultWorkers is the Workers of DefaultConfig: queues reconciled in parallel.
const DefaultWorkers = 2

// DefaultStatusInterval is the StatusInterval of DefaultConfig.
const DefaultStatusInterval = time.Second

// DefaultConfig returns a Config with every default filled in; the caller
// adds the clients and the ring's Ownership.
func DefaultConfig() Config {
	return Config{Work: kit.DefaultWork(DefaultWorkers), StatusInterval: DefaultStatusInterval}
}

// Validate reports every field of c that cannot work. It changes nothing:
// defaults come from DefaultConfig, not from here.
func (c *Config) Validate() error {
	errs := []error{c.Config.Validate(), c.Work.Validate()}
	if c.Volcano == nil {
		errs = append(errs, errors.New("a Volcano client is required"))
	}
	if c.StatusInterval <= 0 {
		errs = append(errs, fmt.Errorf("status interval %v: must be positive", c.StatusInterval))
	}
	if s := c.Shared; s != nil && (s.Queues == nil || s.Commands == nil || s.PodGroups == nil) {
		errs = append(errs, errors.New("shared informers: Queues, Commands and PodGroups are all required (or no Shared, for informers of the controller's own)"))
	}
	return errors.Join(errs...)
}

// Informers are what the controller watches.
type Informers struct {
	Queues   vcschedulinginformers.QueueInformer
	Commands vcbusinformers.CommandInformer
	// PodGroups are every PodGroup of the cluster, as summaries (cache.SlimPodGroup):
	// cache.Cache.QueuePodGroups. The controller counts them by queue from their events.
	PodGroups toolscache.SharedIndexInformer
}

// Controller keeps the state and PodGroup counts of the Queues whose slots this replica holds,
// and runs the OpenQueue and CloseQueue Commands that target them.
type Controller struct {
	kit.Base[request]
	kit.Fence
	cfg      Config
	factory  vcinformers.SharedInformerFactory // the controller's own, without Config.Shared: Run starts it
	queues   schedulinglisters.QueueLister
	queueInf toolscache.SharedIndexInformer
	cmdInf   toolscache.SharedIndexInformer
	pgInf    toolscache.SharedIndexInformer
	counts   tally                     // the PodGroups of every queue, from pgInf's events
	counted  toolscache.InformerSynced // pgInf's initial list is in counts
	metrics  *metrics
	written  cache.Written[*scheduling.Queue]
	pace     kit.Pacer // count-only status writes, over StatusInterval
	taken    kit.Commands
	reported reported
}

// request is what the dispatcher carries for a queue key.
type request struct {
	// action is OpenQueue or CloseQueue from a Command; empty for a sync, which refreshes the
	// counts and lets Closing become Closed.
	action bus.Action
	// command is the Command behind action; it is deleted as the request is taken.
	command *kit.CommandRef
	// target is the UID of the queue the Command was made for (its target's uid, as vcctl
	// sets it); empty when it names none, and then it is for whichever queue has the name.
	target types.UID
}

// New validates cfg and builds the controller and its informers (Queues, Commands, and every
// PodGroup, slimmed to queue and phase for counting). Run starts them.
func New(cfg Config) (*Controller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("queue controller: %w", err)
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("queue controller: %w", err)
	}
	c := &Controller{Fence: kit.Fence{Valid: cfg.Valid}, cfg: cfg, metrics: m, pace: kit.Pacer{Window: cfg.StatusInterval}}
	err = c.Init(kit.Settings[request]{
		Name: "queue", Config: cfg.Config, Work: cfg.Work, Scheme: vcscheme.Scheme,
		Handler: c.reconcile, OnGiveUp: c.giveUp,
		Coalesce: func(queued, incoming request) bool { return queued == request{} && incoming == request{} },
	})
	if err != nil {
		return nil, err
	}

	shared := cfg.Shared
	if shared == nil {
		c.factory = vcinformers.NewSharedInformerFactory(cfg.Volcano, 0)
		pgs := c.factory.Scheduling().V1beta1().PodGroups().Informer()
		if err := pgs.SetTransform(guard.Transform("queue", c.Log, cache.SlimPodGroup)); err != nil {
			return nil, fmt.Errorf("queue controller: podgroup transform: %w", err)
		}
		shared = &Informers{
			Queues: c.factory.Scheduling().V1beta1().Queues(), Commands: c.factory.Bus().V1alpha1().Commands(), PodGroups: pgs,
		}
	}
	c.queues, c.queueInf = shared.Queues.Lister(), shared.Queues.Informer()
	if _, ok := c.queueInf.GetIndexer().GetIndexers()[ByParent]; !ok {
		if err := c.queueInf.AddIndexers(toolscache.Indexers{ByParent: parentIndex}); err != nil {
			return nil, fmt.Errorf("queue controller: queue index: %w", err)
		}
	}
	c.cmdInf, c.pgInf = shared.Commands.Informer(), shared.PodGroups
	if err := c.register(); err != nil {
		return nil, fmt.Errorf("queue controller: %w", err)
	}
	return c, nil
}

// Run lists and watches, then reconciles until ctx is done. No request is handled before every
// informer has listed and the PodGroups listed are counted: a Closing queue must not close on
// counts that are still loading.
func (c *Controller) Run(ctx context.Context) {
	c.Base.Run(ctx, c.factory, "stopped before the Queue, Command and PodGroup informers listed; are the Volcano CRDs installed?",
		c.queueInf.HasSynced, c.cmdInf.HasSynced, c.counted)
}

// SlotsGained enqueues a sync of every Queue of the slots, and every Command that targets one:
// this replica now owns them. It implements shard.Listener.
func (c *Controller) SlotsGained(slots []int) {
	held, n := shard.NewSlotSet(slots), c.cfg.Ownership.Slots()
	for _, name := range c.queueInf.GetStore().ListKeys() {
		if held.HasKey(name, n) {
			c.Disp.Enqueue(name, request{})
		}
	}
	for _, obj := range c.cmdInf.GetStore().List() {
		if name, req, ok := commandRequest(obj); ok && held.HasKey(name, n) {
			c.Disp.Enqueue(name, req)
		}
	}
}

// SlotsLost implements shard.Listener. Nothing is kept per slot: what the controller remembers
// of a queue (its last write) is checked against the cache before use.
func (c *Controller) SlotsLost([]int) {}

// register adds the handlers to the informers.
func (c *Controller) register() error {
	handlers := []struct {
		inf toolscache.SharedIndexInformer
		h   toolscache.ResourceEventHandler
	}{
		{c.queueInf, toolscache.ResourceEventHandlerFuncs{
			AddFunc:    c.onQueueAdd,
			UpdateFunc: c.onQueueUpdate,
			DeleteFunc: c.onQueueDelete,
		}},
		{c.cmdInf, toolscache.ResourceEventHandlerFuncs{
			AddFunc: c.onCommand,
		}},
	}
	for _, x := range handlers {
		if _, err := x.inf.AddEventHandler(guard.Handler("queue", c.Log, x.h)); err != nil {
			return err
		}
	}
	reg, err := c.pgInf.AddEventHandler(guard.Handler("queue", c.Log, toolscache.ResourceEventHandlerFuncs{
		AddFunc:    c.onPodGroupAdd,
		UpdateFunc: c.onPodGroupUpdate,
		DeleteFunc: c.onPodGroupDelete,
	}))
	if err != nil {
		return err
	}
	c.counted = reg.HasSynced
	return nil
}

// onQueueAdd syncs a new queue, its parent (which now has a child) and the queues below it
// (whose parent now exists, and whose depth is now known).
func (c *Controller) onQueueAdd(obj any) {
	if q, ok := queueOf(obj); ok {
		c.Disp.Enqueue(q.Name, request{})
		if p := ParentOf(q); p != "" {
			c.Disp.Enqueue(p, request{})
		}
		c.enqueueSubtree(q.Name)
	}
}

// onQueueUpdate syncs the queue; its children when its state changed (they follow it); its
// old and new parents when it moved (their has-children label), and the queues below it (their
// depth).
func (c *Controller) onQueueUpdate(old, obj any) {
	oldQ, ok1 := queueOf(old)
	q, ok2 := queueOf(obj)
	if !ok1 || !ok2 {
		return
	}
	c.Disp.Enqueue(q.Name, request{})
	if oldQ.Status.State != q.Status.State {
		c.enqueueChildren(q.Name)
	}
	if from, to := ParentOf(oldQ), ParentOf(q); from != to {
		for _, p := range []string{from, to} {
			if p != "" {
				c.Disp.Enqueue(p, request{})
			}
		}
		c.enqueueSubtree(q.Name)
	}
}

// onQueueDelete forgets the queue, and syncs its parent (which may have lost its last child)
// and the queues below it (whose parent is gone).
func (c *Controller) onQueueDelete(obj any) {
	q, ok := queueOf(obj)
	if !ok {
		return
	}
	c.written.Forget(q.Name)
	c.pace.Forget(q.Name)
	c.Wakes.Forget(q.Name)
	c.reported.Forget(q.Name)
	if p := ParentOf(q); p != "" {
		c.Disp.Enqueue(p, request{})
	}
	c.enqueueSubtree(q.Name)
}

// onPodGroupAdd counts a new PodGroup in and syncs its queue.
func (c *Controller) onPodGroupAdd(obj any) {
	if pg, ok := podGroupOf(obj); ok {
		c.counts.event(nil, pg)
		c.Disp.Enqueue(pg.Spec.Queue, request{})
	}
}

// onPodGroupDelete counts a PodGroup that went out and syncs its queue.
func (c *Controller) onPodGroupDelete(obj any) {
	if pg, ok := podGroupOf(obj); ok {
		c.counts.event(pg, nil)
		c.Disp.Enqueue(pg.Spec.Queue, request{})
	}
}

// onPodGroupUpdate moves the PodGroup's count from its old phase and queue to the new, and syncs
// the queue when the phase changed, and both queues when the PodGroup moved from one to another.
func (c *Controller) onPodGroupUpdate(old, new any) {
	oldPG, ok1 := podGroupOf(old)
	newPG, ok2 := podGroupOf(new)
	if !ok1 || !ok2 {
		return
	}
	if !c.counts.event(oldPG, newPG) {
		return
	}
	if oldPG.Spec.Queue != newPG.Spec.Queue {
		c.Disp.Enqueue(oldPG.Spec.Queue, request{})
	}
	c.Disp.Enqueue(newPG.Spec.Queue, request{})
}

func (c *Controller) onCommand(obj any) {
	if name, req, ok := commandRequest(obj); ok {
		c.Disp.Enqueue(name, req)
	}
}

// commandRequest is the request of a Command that targets a Queue: its queue key and action.
// Commands that target anything else belong to other controllers.
func commandRequest(obj any) (string, request, bool) {
	cmd, ok := obj.(*bus.Command)
	if !ok || !TargetsQueue(cmd.TargetObject) {
		return "", request{}, false
	}
	return cmd.TargetObject.Name, request{
		action:  bus.Action(cmd.Action),
		command: kit.RefOf(cmd),
		target:  cmd.TargetObject.UID,
	}, true
}

// giveUp records why a request of a queue failed for good, as Volcano does when a queue
// request reaches the requeue limit.
func (c *Controller) giveUp(name string, req request, err error) {
	action := req.action
	if action == "" {
		action = bus.SyncQueueAction
	}
	c.Log.Error("queue request failed too often; dropping it", "queue", name, "action", action, "error", err)
	if q, gerr := c.queues.Get(name); gerr == nil {
		c.Recorder.Eventf(q, corev1.EventTypeWarning, string(action), "%s queue failed for %v", action, err)
	}
}
