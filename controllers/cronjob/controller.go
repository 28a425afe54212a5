package cronjob

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcscheme "volcano.sh/apis/pkg/client/clientset/versioned/scheme"
	vcinformers "volcano.sh/apis/pkg/client/informers/externalversions"
	vcbatchinformers "volcano.sh/apis/pkg/client/informers/externalversions/batch/v1alpha1"
	batchlisters "volcano.sh/apis/pkg/client/listers/batch/v1alpha1"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/controllers/kit"
	"github.com/ringfire/ringfire/internal/guard"
	"github.com/ringfire/ringfire/shard"
)

// Config configures the CronJob controller.
type Config struct {
	kit.Config
	kit.Work
	// CronJobs and Jobs, when set, are informers whose owner starts them (the replica's cache:
	// cache.Cache.CronJobs, and cache.Jobs, which holds every Job at least as a summary —
	// metadata and status.state, all this controller reads), so that a replica watches each
	// kind once. Set both or neither: nil makes informers of the controller's own, started by
	// Run.
	CronJobs vcbatchinformers.CronJobInformer
	Jobs     JobSource
}

// DefaultWorkers is the Workers of DefaultConfig: CronJobs reconciled in parallel.
const DefaultWorkers = 2

// DefaultConfig returns a Config with the worker and retry defaults filled
// in; the caller adds the clients and the ring's Ownership.
func DefaultConfig() Config {
	return Config{Work: kit.DefaultWork(DefaultWorkers)}
}

// JobSource is what the controller reads Jobs from: a shared informer, or the replica's
// cache.Jobs.
type JobSource = kit.JobSource

// Controller starts the Jobs of the CronJobs whose slots this replica holds.
type Controller struct {
	kit.Base[request]
	kit.Fence
	cfg      Config
	clock    clock.PassiveClock
	factory  vcinformers.SharedInformerFactory // the controller's own, without Config.CronJobs: Run starts it
	cronJobs batchlisters.CronJobLister
	cronInf  toolscache.SharedIndexInformer
	jobInf   JobSource
	metrics  *metrics
	written  cache.Written[*batch.CronJob]
	memory   keyMemory
}

// request is what the dispatcher carries for a CronJob key: look at the CronJob.
type request struct {
	// scheduleChanged: the CronJob's schedule or time zone was edited. The reconcile then
	// waits for the new schedule's next time instead of syncing now (sync.go, untilNewSchedule).
	scheduleChanged bool
}

// coalesce merges an incoming request into the queued one, which then stands for both, unless
// the queued one waits for a changed schedule and the incoming asks for a look now: that look
// must still happen.
func coalesce(queued, incoming request) bool {
	return !queued.scheduleChanged || incoming.scheduleChanged
}

// New builds the controller and registers its handlers on the CronJob and Job informers;
// when they come from Config.Informers, that factory must not have started yet.
func New(cfg Config) (*Controller, error) {
	if cfg.Volcano == nil {
		return nil, errors.New("cronjob controller: Volcano is required")
	}
	cfg.Clock = cfg.ClockOr()
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("cronjob controller: %w", err)
	}
	c := &Controller{Fence: kit.Fence{Valid: cfg.Valid}, cfg: cfg, clock: cfg.Clock, metrics: m}
	err = c.Init(kit.Settings[request]{
		Name: "cronjob", Config: cfg.Config, Work: cfg.Work, Scheme: vcscheme.Scheme,
		Handler: c.reconcile, OnGiveUp: c.giveUp,
		Coalesce: coalesce,
		ObjectOf: kit.StoreObject(func() toolscache.Store { return c.cronInf.GetStore() }),
		UIDOf:    kit.StoreUID(func() toolscache.Store { return c.cronInf.GetStore() }, func() bool { return c.cronInf.HasSynced() }),
	})
	if err != nil {
		return nil, err
	}

	cronJobs, jobs := cfg.CronJobs, cfg.Jobs
	if (cronJobs == nil) != (jobs == nil) {
		return nil, errors.New("cronjob controller: set both CronJobs and Jobs, or neither")
	}
	if cronJobs == nil {
		c.factory = vcinformers.NewSharedInformerFactory(cfg.Volcano, 0)
		cronJobs, jobs = c.factory.Batch().V1alpha1().CronJobs(), c.factory.Batch().V1alpha1().Jobs().Informer()
	}
	c.cronJobs, c.cronInf, c.jobInf = cronJobs.Lister(), cronJobs.Informer(), jobs
	if err := kit.IndexJobsByController(c.jobInf); err != nil {
		return nil, fmt.Errorf("cronjob controller: %w", err)
	}
	if err := c.register(); err != nil {
		return nil, fmt.Errorf("cronjob controller: %w", err)
	}
	return c, nil
}

// Run lists and watches, then reconciles until ctx is done.
func (c *Controller) Run(ctx context.Context) {
	c.Base.Run(ctx, c.factory, "stopped before the CronJob and Job informers listed; is the CronJob CRD installed?",
		c.cronInf.HasSynced, c.jobInf.HasSynced)
}

// SlotsGained enqueues every CronJob of the slots: this replica now owns them. It implements
// shard.Listener. CronJobs the informer has not listed yet are enqueued by their add events.
func (c *Controller) SlotsGained(slots []int) {
	held, n := shard.NewSlotSet(slots), c.cfg.Ownership.Slots()
	for _, key := range c.cronInf.GetStore().ListKeys() {
		if held.HasKey(key, n) {
			c.Disp.Enqueue(key, request{})
		}
	}
}

// SlotsLost forgets the wake-ups asked for the CronJobs of the slots: the dispatcher drops
// them, and the slots' next owner asks its own. It implements shard.Listener.
func (c *Controller) SlotsLost(slots []int) {
	kit.ForgetSlots(slots, c.cfg.Ownership.Slots(), &c.memory, &c.Wakes)
}

// register adds the handlers to the informers.
func (c *Controller) register() error {
	if _, err := c.cronInf.AddEventHandler(guard.Handler("cronjob", c.Log, toolscache.ResourceEventHandlerFuncs{
		AddFunc:    c.onCronJob,
		UpdateFunc: c.onCronJobUpdate,
		DeleteFunc: c.onCronJobDelete,
	}, guard.Quarantine(c.Disp))); err != nil {
		return err
	}
	_, err := c.jobInf.AddEventHandler(guard.Handler("cronjob", c.Log, toolscache.ResourceEventHandlerFuncs{
		AddFunc:    c.onJob,
		UpdateFunc: c.onJobUpdate,
		DeleteFunc: c.onJob,
	}))
	return err
}

func (c *Controller) onCronJob(obj any) {
	if key, err := toolscache.MetaNamespaceKeyFunc(obj); err == nil {
		c.Disp.Enqueue(key, request{})
	}
}

// onCronJobUpdate looks at the CronJob again. A new schedule or time zone is only compared
// here, never parsed: the text is the user's, and a handler runs on an informer's goroutine of
// every replica. The reconcile parses it (untilNewSchedule) and waits for its next time.
func (c *Controller) onCronJobUpdate(old, cur any) {
	oldCJ, ok1 := old.(*batch.CronJob)
	cj, ok2 := cur.(*batch.CronJob)
	if !ok1 || !ok2 || oldCJ.ResourceVersion == cj.ResourceVersion {
		return
	}
	key := toolscache.MetaObjectToName(cj).String()
	if kit.Changed(oldCJ, cj) {
		c.Disp.Release(key)
	}
	changed := oldCJ.Spec.Schedule != cj.Spec.Schedule || !ptr.Equal(oldCJ.Spec.TimeZone, cj.Spec.TimeZone)
	c.Disp.Enqueue(key, request{scheduleChanged: changed})
}

func (c *Controller) onCronJobDelete(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if cj, ok := obj.(*batch.CronJob); ok {
		key := toolscache.MetaObjectToName(cj).String()
		c.Disp.Release(key)
		c.written.Forget(key)
		c.memory.Forget(key)
		c.Wakes.Forget(key)
	}
}

// onJob looks at the CronJob that controls a Job that came, went, or changed owner.
func (c *Controller) onJob(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if job, ok := obj.(*batch.Job); ok {
		c.enqueueOwner(job)
	}
}

// onJobUpdate looks at the owner when what a CronJob reads of its Job changed: the phase, the
// controller, or a deletion begun. The Job's other status updates are many and do not matter.
func (c *Controller) onJobUpdate(old, cur any) {
	oldJob, ok1 := old.(*batch.Job)
	job, ok2 := cur.(*batch.Job)
	if !ok1 || !ok2 || oldJob.ResourceVersion == job.ResourceVersion {
		return
	}
	oldName, oldUID, _ := ownerOf(oldJob)
	name, uid, _ := ownerOf(job)
	if oldName != name || oldUID != uid {
		c.enqueueOwner(oldJob)
		c.enqueueOwner(job)
		return
	}
	if oldJob.Status.State.Phase != job.Status.State.Phase || (oldJob.DeletionTimestamp == nil) != (job.DeletionTimestamp == nil) {
		c.enqueueOwner(job)
	}
}

// enqueueOwner enqueues the CronJob that controls job, if it exists (same name and UID).
func (c *Controller) enqueueOwner(job *batch.Job) {
	name, uid, ok := ownerOf(job)
	if !ok {
		return
	}
	if cj, err := c.cronJobs.CronJobs(job.Namespace).Get(name); err == nil && cj.UID == uid {
		c.Disp.Enqueue(toolscache.NewObjectName(job.Namespace, name).String(), request{})
	}
}

// jobsOf returns the Jobs the CronJob controls, from the informer.
func (c *Controller) jobsOf(cj *batch.CronJob) ([]*batch.Job, error) {
	return kit.JobsControlledBy(c.jobInf, cj.Namespace, cj.UID)
}

// reconcile is the dispatcher's handler: sync the CronJob, then ask to be woken at its next
// schedule time, so that nothing polls.
func (c *Controller) reconcile(ctx context.Context, key string, req request) error {
	if req.scheduleChanged {
		if wait, ok := c.untilNewSchedule(key); ok {
			c.Disp.EnqueueAfter(key, request{}, wait)
			return nil
		}
	}
	wait, err := c.sync(ctx, key)
	if err == nil && wait > 0 {
		c.WakeAfter(key, request{}, wait)
	}
	return err
}

// giveUp records that a CronJob failed MaxRequeue times in a row (a Job template the API
// server refuses, say). The CronJob is looked at again at its next schedule time, or when it
// or one of its Jobs changes: a CronJob that stopped for good would miss every later time.
func (c *Controller) giveUp(key string, _ request, err error) {
	c.Log.Error("cronjob failed too often; trying again at its next schedule time", "cronjob", key, "error", err)
	ns, name, serr := toolscache.SplitMetaNamespaceKey(key)
	if serr != nil {
		return
	}
	cj, gerr := c.cronJobs.CronJobs(ns).Get(name)
	if gerr != nil {
		return
	}
	c.Recorder.Eventf(cj, corev1.EventTypeWarning, "RetryLimitReached",
		"gave up after %d failed tries: %v; the CronJob is tried again at its next schedule time or when it changes", c.MaxRequeue+1, err)
	if s, _, perr := ParseSchedule(cj.Spec); perr == nil {
		if wait, ok := untilNext(s, c.clock.Now()); ok {
			c.Disp.EnqueueAfter(key, request{}, wait)
		}
	}
}
