package batchjob

import (
	"context"
	"errors"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	batchv1listers "k8s.io/client-go/listers/batch/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/controllers/batchjob/state"
	"github.com/ringfire/ringfire/controllers/kit"
	"github.com/ringfire/ringfire/internal/guard"
	"github.com/ringfire/ringfire/shard"
)

// Config configures the batch Job controller.
type Config struct {
	kit.Config
	kit.Work
	// Cache is the replica's: the batch/v1 Jobs (Cache.BatchJobs, asked for before the cache
	// starts), the pods of the held slots and the expectations of creates and deletes.
	Cache *cache.Cache
}

// DefaultWorkers is the Workers of DefaultConfig: Jobs reconciled in parallel.
const DefaultWorkers = 4

// DefaultConfig returns a Config with the worker and retry defaults filled
// in; the caller adds the clients and the ring's Ownership.
func DefaultConfig() Config {
	return Config{Work: kit.DefaultWork(DefaultWorkers)}
}

// Controller runs the batch/v1 Jobs whose spec.managedBy is ringfire.io/job-controller, for
// the slots this replica holds.
type Controller struct {
	kit.Base[request]
	kit.Fence
	cfg    Config
	clock  clock.PassiveClock
	jobs   batchv1listers.JobLister
	jobInf toolscache.SharedIndexInformer
	pods   *cache.Sharded

	written cache.Written[*batchv1.Job]

	// backoff is each Job's pod-failure record (state.Backoff), as Kubernetes keeps it in
	// memory: a new holder of the slot starts without it.
	backoff kit.Keyed[state.Backoff]
}

// request is what the dispatcher carries for a Job key: look at the Job. Any two coalesce.
type request struct{}

// New builds the controller and registers its handlers on the cache's informers, which must
// not have started yet.
func New(cfg Config) (*Controller, error) {
	if cfg.Cache == nil {
		return nil, errors.New("batchjob controller: Cache is required")
	}
	cfg.Clock = cfg.ClockOr()
	c := &Controller{Fence: kit.Fence{Valid: cfg.Valid}, cfg: cfg, clock: cfg.Clock}
	err := c.Init(kit.Settings[request]{
		Name: "batchjob", Config: cfg.Config, Work: cfg.Work, Scheme: scheme.Scheme,
		Handler: c.reconcile, OnGiveUp: c.giveUp, OnWait: c.waiting,
		Coalesce: func(request, request) bool { return true },
		ObjectOf: kit.StoreObject(func() toolscache.Store { return c.jobInf.GetStore() }),
		UIDOf:    kit.StoreUID(func() toolscache.Store { return c.jobInf.GetStore() }, func() bool { return c.jobInf.HasSynced() }),
	})
	if err != nil {
		return nil, err
	}
	inf := cfg.Cache.BatchJobs()
	c.jobs, c.jobInf, c.pods = inf.Lister(), inf.Informer(), cfg.Cache.Owned(cache.Pods)
	if _, err := c.jobInf.AddEventHandler(guard.Handler("batchjob", c.Log, toolscache.ResourceEventHandlerFuncs{
		AddFunc:    c.onJob,
		UpdateFunc: c.onJobUpdate,
		DeleteFunc: c.onJobDelete,
	}, guard.Quarantine(c.Disp))); err != nil {
		return nil, fmt.Errorf("batchjob controller: %w", err)
	}
	c.pods.AddHandler(guard.Handler("batchjob", c.Log, toolscache.ResourceEventHandlerFuncs{
		AddFunc:    c.onPod,
		UpdateFunc: func(_, cur any) { c.onPod(cur) },
		DeleteFunc: c.onPod,
	}, guard.QuarantineBy(c.Disp, batchJobKeyOf)))
	return c, nil
}

// Run reconciles until ctx is done; the cache lists and watches.
func (c *Controller) Run(ctx context.Context) {
	c.Base.Run(ctx, nil, "stopped before the batch Job informer listed", c.jobInf.HasSynced)
}

// SlotsReady enqueues the managed Jobs of slots whose pods the cache has listed: this replica
// now owns them. The cache calls it (through the replica) once per gain.
func (c *Controller) SlotsReady(slots []int) {
	held, n := shard.NewSlotSet(slots), c.cfg.Ownership.Slots()
	for _, obj := range c.jobInf.GetStore().List() {
		job, ok := obj.(*batchv1.Job)
		if !ok || !managed(job) {
			continue
		}
		key := toolscache.MetaObjectToName(job).String()
		switch {
		case !held.HasKey(key, n):
		case job.Status.StartTime == nil:
			c.Disp.Enqueue(key, request{}) // new: its pods come first
		default:
			// Started or finished: its look can wait behind new work (shard.Dispatcher.EnqueueLow).
			c.Disp.EnqueueLow(key, request{})
		}
	}
}

// SlotsLost forgets what this replica remembers of the slots' Jobs. It implements
// shard.Listener.
func (c *Controller) SlotsLost(slots []int) {
	kit.ForgetSlots(slots, c.cfg.Ownership.Slots(), &c.backoff)
}

// SlotsGained is a no-op: the Jobs of gained slots are enqueued once the cache has listed
// all but their pods (SlotsEarly, the new ones) and then their pods (SlotsReady, all). It
// implements shard.Listener.
func (c *Controller) SlotsGained([]int) {}

func managed(job *batchv1.Job) bool {
	return job.Spec.ManagedBy != nil && *job.Spec.ManagedBy == state.ControllerName
}

func (c *Controller) onJob(obj any) {
	if job, ok := obj.(*batchv1.Job); ok && managed(job) {
		c.Disp.Enqueue(toolscache.MetaObjectToName(job).String(), request{})
	}
}

// onJobUpdate looks at a Job that changed; a new spec ends its quarantine, if any.
func (c *Controller) onJobUpdate(old, cur any) {
	o, ok1 := old.(*batchv1.Job)
	n, ok2 := cur.(*batchv1.Job)
	if ok1 && ok2 && managed(n) && kit.Changed(o, n) {
		c.Disp.Release(toolscache.MetaObjectToName(n).String())
	}
	c.onJob(cur)
}

func (c *Controller) onJobDelete(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	job, ok := obj.(*batchv1.Job)
	if !ok || !managed(job) {
		return
	}
	key := toolscache.MetaObjectToName(job).String()
	c.Disp.Release(key)
	c.written.Forget(key)
	c.backoff.Forget(key)
	// Its pods may still carry the tracking finalizer: the reconcile of the key frees them.
	c.Disp.Enqueue(key, request{})
}

// batchJobKeyOf is the key of the Job that controls a pod: the one quarantined when a pod's
// handler panics.
func batchJobKeyOf(obj any) string {
	key, _ := cache.BatchJobKey(obj)
	return key
}

// onPod looks at the Job that controls a pod that came, changed or went.
func (c *Controller) onPod(obj any) {
	if key, ok := cache.BatchJobKey(obj); ok {
		c.Disp.Enqueue(key, request{})
	}
}

// giveUpRetry is how long a Job whose reconcile failed for good MaxRequeue times rests
// before it is looked at again (sooner if it or its pods change). A batch/v1 key is never
// dropped: with informer resyncs off nothing else would bring a given-up Job back, and
// Kubernetes' own Job controller never stops retrying one. Five minutes keep an error that
// needs a person (a pod template a policy refuses) to a few API calls an hour per Job.
const giveUpRetry = 5 * time.Minute

// giveUp tells in an Event that a Job's reconcile failed for good MaxRequeue+1 times in a
// row, and looks at it again after giveUpRetry. Transient errors never come here (they are
// retried for as long as they last, and told by waiting). No condition is written: a
// batch/v1 Job's conditions are the Job API's own (Complete, Failed, ...), read by kubectl
// wait and other tools; Kubernetes tells a Job's pod-create failures in Events too.
func (c *Controller) giveUp(key string, _ request, err error) {
	c.Log.Error("batch Job failed too often; trying again later", "job", key, "retry_in", giveUpRetry, "error", err)
	c.Disp.EnqueueAfter(key, request{}, giveUpRetry)
	if job, gerr := c.jobByKey(key); gerr == nil && job != nil {
		c.Recorder.Eventf(job, corev1.EventTypeWarning, "SyncFailed",
			"ringfire failed to sync the Job %d times in a row: %v; it tries again in %v, or when the Job or its pods change",
			c.MaxRequeue+1, err, giveUpRetry)
	}
}

// waiting tells in an Event why a Job waits on a transient error: once per wait story.
func (c *Controller) waiting(key, reason string, err error) {
	if job, gerr := c.jobByKey(key); gerr == nil && job != nil {
		c.Recorder.Event(job, corev1.EventTypeWarning, kit.EventWaiting, kit.WaitMessage(reason, err))
	}
}
