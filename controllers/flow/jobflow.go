package flow

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	flowv1 "volcano.sh/apis/pkg/apis/flow/v1alpha1"
	vcscheme "volcano.sh/apis/pkg/client/clientset/versioned/scheme"
	vcflowinformers "volcano.sh/apis/pkg/client/informers/externalversions/flow/v1alpha1"
	flowlisters "volcano.sh/apis/pkg/client/listers/flow/v1alpha1"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/controllers/kit"
	"github.com/ringfire/ringfire/internal/guard"
	"github.com/ringfire/ringfire/shard"
)

// DefaultStatusCoalesce is how long changes of a flow's Jobs that move no phase (task counts,
// running times) are merged into one status write.
const DefaultStatusCoalesce = time.Second

// Config configures the JobFlow and JobTemplate controllers.
type Config struct {
	kit.Config
	kit.Work
	// JobFlows, JobTemplates and Jobs are informers whose owner starts them (the replica's
	// cache: cache.Cache.JobFlows, JobTemplates and Jobs, which holds every Job at least as a
	// summary, with what a flow reports of its Jobs).
	JobFlows     vcflowinformers.JobFlowInformer
	JobTemplates vcflowinformers.JobTemplateInformer
	Jobs         kit.JobSource
	// Expectations holds the Job creates and deletes issued and not seen yet (the cache's,
	// cache.Cache.Expectations, which forgets the slots this replica loses). The controller
	// feeds them what its Jobs handler sees (cache.Expectations.Observed).
	Expectations *cache.Expectations
	// StatusCoalesce merges a flow's status changes that move no phase over this window:
	// DefaultStatusCoalesce in DefaultConfig; 0 or negative writes each at once.
	StatusCoalesce time.Duration
}

// DefaultWorkers is the Workers of DefaultConfig: flows and templates reconciled in parallel.
const DefaultWorkers = 2

// DefaultConfig returns a Config with every default filled in; the caller
// adds the clients, the informers, the Expectations and the ring's Ownership.
func DefaultConfig() Config {
	return Config{Work: kit.DefaultWork(DefaultWorkers), StatusCoalesce: DefaultStatusCoalesce}
}

// Validate reports every field of c that cannot work, for either controller: the two are
// built from one Config. It changes nothing: defaults come from DefaultConfig, not from here.
func (c *Config) Validate() error {
	errs := []error{c.Config.Validate(), c.Work.Validate()}
	if c.Volcano == nil {
		errs = append(errs, errors.New("a Volcano client is required"))
	}
	if c.JobFlows == nil {
		errs = append(errs, errors.New("a JobFlows informer is required"))
	}
	if c.JobTemplates == nil {
		errs = append(errs, errors.New("a JobTemplates informer is required"))
	}
	if c.Jobs == nil {
		errs = append(errs, errors.New("a Jobs informer is required"))
	}
	if c.Expectations == nil {
		errs = append(errs, errors.New("the Expectations are required"))
	}
	return errors.Join(errs...)
}

// Flows is the JobFlow controller: it makes each step's Job once the Jobs it depends on have
// Completed, reports the Jobs in the flow's status, and deletes them when a flow whose retain
// policy is delete has Succeeded.
type Flows struct {
	kit.Base[request]
	kit.Fence
	cfg       Config
	clock     clock.PassiveClock
	flows     flowlisters.JobFlowLister
	flowInf   toolscache.SharedIndexInformer
	templates flowlisters.JobTemplateLister
	tmplInf   toolscache.SharedIndexInformer
	jobInf    kit.JobSource
	written   cache.Written[*flowv1.JobFlow]
	memory    memory
	pace      kit.Pacer // count-only status writes, over StatusCoalesce
}

// request is what the dispatcher carries for a key: look at it. Any two coalesce.
type request struct{}

// Indexes (beside kit.ByController over the Jobs): JobFlows by the templates their steps name
// ("<namespace>/<template>"); Jobs by the template they were made from.
// And JobFlows by the names of their steps' Jobs ("<namespace>/<flow>-<step>"), so that the
// delete of a Job of that name made by someone else wakes the flow that waits for the name.
const (
	byStep     = "jobflow-template"
	byJobName  = "jobflow-job-name"
	byTemplate = "jobtemplate"
)

// NewFlows validates cfg, builds the JobFlow controller and registers its handlers and
// indexes on the informers, which must not have started yet.
func NewFlows(cfg Config) (*Flows, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("jobflow controller: %w", err)
	}
	cfg.Clock = cfg.ClockOr()
	c := &Flows{Fence: kit.Fence{Valid: cfg.Valid}, cfg: cfg, clock: cfg.Clock, pace: kit.Pacer{Window: max(cfg.StatusCoalesce, 0)}}
	err := c.Init(kit.Settings[request]{
		Name: "jobflow", Config: cfg.Config, Work: cfg.Work, Scheme: vcscheme.Scheme,
		Handler: c.reconcile, OnGiveUp: c.giveUp,
		Coalesce: func(request, request) bool { return true },
		ObjectOf: kit.StoreObject(func() toolscache.Store { return c.flowInf.GetStore() }),
		UIDOf:    kit.StoreUID(func() toolscache.Store { return c.flowInf.GetStore() }, func() bool { return c.flowInf.HasSynced() }),
	})
	if err != nil {
		return nil, err
	}
	c.flows, c.flowInf = cfg.JobFlows.Lister(), cfg.JobFlows.Informer()
	c.templates, c.tmplInf = cfg.JobTemplates.Lister(), cfg.JobTemplates.Informer()
	c.jobInf = cfg.Jobs
	if err := kit.IndexJobsByController(c.jobInf); err != nil {
		return nil, fmt.Errorf("jobflow controller: %w", err)
	}
	if err := kit.AddIndex(c.flowInf, byStep, stepIndex); err != nil {
		return nil, fmt.Errorf("jobflow controller: %w", err)
	}
	if err := kit.AddIndex(c.flowInf, byJobName, jobNameIndex); err != nil {
		return nil, fmt.Errorf("jobflow controller: %w", err)
	}
	if err := c.register(); err != nil {
		return nil, fmt.Errorf("jobflow controller: %w", err)
	}
	return c, nil
}

// Run reconciles until ctx is done, once the informers have listed.
func (c *Flows) Run(ctx context.Context) {
	c.Base.Run(ctx, nil, "stopped before the JobFlow, JobTemplate and Job informers listed; are the flow.volcano.sh CRDs installed?",
		c.flowInf.HasSynced, c.tmplInf.HasSynced, c.jobInf.HasSynced)
}

// SlotsGained enqueues every JobFlow of the slots. It implements shard.Listener.
func (c *Flows) SlotsGained(slots []int) {
	enqueueHeld(c.flowInf, c.Disp, c.cfg.Ownership, slots)
}

// SlotsLost forgets what was remembered of the slots' flows. It implements shard.Listener.
func (c *Flows) SlotsLost(slots []int) {
	kit.ForgetSlots(slots, c.cfg.Ownership.Slots(), &c.memory, &c.pace)
}

// enqueueHeld enqueues the keys of inf that fall in slots.
func enqueueHeld(inf toolscache.SharedIndexInformer, disp *shard.Dispatcher[request], own shard.Ownership, slots []int) {
	held, n := shard.NewSlotSet(slots), own.Slots()
	for _, key := range inf.GetStore().ListKeys() {
		if held.HasKey(key, n) {
			disp.Enqueue(key, request{})
		}
	}
}

func (c *Flows) register() error {
	if _, err := c.flowInf.AddEventHandler(guard.Handler("jobflow", c.Log, toolscache.ResourceEventHandlerFuncs{
		AddFunc: c.onFlow,
		UpdateFunc: func(old, cur any) {
			if o, ok := old.(*flowv1.JobFlow); ok {
				if n, ok := cur.(*flowv1.JobFlow); ok && o.ResourceVersion != n.ResourceVersion {
					if kit.Changed(o, n) {
						c.Disp.Release(toolscache.MetaObjectToName(n).String())
					}
					c.onFlow(n)
				}
			}
		},
		DeleteFunc: c.onFlowDelete,
	}, guard.Quarantine(c.Disp))); err != nil {
		return err
	}
	// A step waiting for its template goes on when the template comes, or changes (a step
	// whose Job the API server refused tries again with the fixed template).
	if _, err := c.tmplInf.AddEventHandler(guard.Handler("jobflow", c.Log, toolscache.ResourceEventHandlerFuncs{
		AddFunc: c.onTemplate,
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*flowv1.JobTemplate)
			n, ok2 := cur.(*flowv1.JobTemplate)
			if ok1 && ok2 && o.Generation != n.Generation {
				c.onTemplate(n)
			}
		},
	})); err != nil {
		return err
	}
	_, err := c.jobInf.AddEventHandler(guard.Handler("jobflow", c.Log, toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.onJob(obj, false) },
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*batch.Job)
			n, ok2 := cur.(*batch.Job)
			if !ok1 || !ok2 || o.ResourceVersion == n.ResourceVersion {
				return
			}
			if oldName, oldUID, _ := FlowOf(o); oldName != "" {
				if name, uid, _ := FlowOf(n); name != oldName || uid != oldUID {
					c.onJob(o, true) // orphaned, or handed to another flow: its flow lost it
				}
			}
			c.onJob(n, false)
		},
		DeleteFunc: func(obj any) { c.onJob(obj, true) },
	}))
	return err
}

func (c *Flows) onFlow(obj any) {
	if key, err := toolscache.MetaNamespaceKeyFunc(obj); err == nil {
		c.Disp.Enqueue(key, request{})
	}
}

func (c *Flows) onFlowDelete(obj any) {
	if key, err := toolscache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.Disp.Release(key)
		c.forget(key)
	}
}

func (c *Flows) onTemplate(obj any) {
	key, err := toolscache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	flows, _ := c.flowInf.GetIndexer().ByIndex(byStep, key)
	for _, f := range flows {
		c.onFlow(f)
	}
}

// onJob looks at the flow that controls a Job that came, changed or went, and meets the
// expectation of its create or delete. A Job that went also wakes any flow waiting for its name
// (one that found the name taken by a Job not its own).
func (c *Flows) onJob(obj any, deleted bool) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	job, ok := obj.(*batch.Job)
	if !ok {
		return
	}
	if deleted {
		waiting, _ := c.flowInf.GetIndexer().ByIndex(byJobName, toolscache.MetaObjectToName(job).String())
		for _, f := range waiting {
			c.onFlow(f)
		}
	}
	name, uid, ok := FlowOf(job)
	if !ok {
		return
	}
	key := toolscache.NewObjectName(job.Namespace, name).String()
	c.cfg.Expectations.Observed(c.slotOf(key), key, cache.VolcanoJobs, job, deleted)
	if jf, err := c.flows.JobFlows(job.Namespace).Get(name); err == nil && jf.UID == uid {
		c.Disp.Enqueue(key, request{})
	}
}

func (c *Flows) slotOf(key string) int { return shard.SlotOf(key, c.cfg.Ownership.Slots()) }

// expected names the create or delete of the Job name (of uid, for a delete) by the flow at
// key.
func (c *Flows) expected(key, namespace, name string, uid types.UID) kit.Expected {
	return kit.Expected{Expectations: c.cfg.Expectations, Slot: c.slotOf(key), Key: key,
		Resource: cache.VolcanoJobs, Namespace: namespace, Name: name, UID: uid}
}

// jobNameIndex is the byJobName index function: the names of a flow's steps' Jobs.
func jobNameIndex(obj any) ([]string, error) {
	jf, ok := obj.(*flowv1.JobFlow)
	if !ok {
		return nil, nil
	}
	keys := make([]string, 0, len(jf.Spec.Flows))
	for _, step := range jf.Spec.Flows {
		keys = append(keys, toolscache.NewObjectName(jf.Namespace, JobName(jf.Name, step.Name)).String())
	}
	return keys, nil
}

// stepIndex is the byStep index function: the templates a flow's steps are made from.
func stepIndex(obj any) ([]string, error) {
	jf, ok := obj.(*flowv1.JobFlow)
	if !ok {
		return nil, nil
	}
	keys := make([]string, 0, len(jf.Spec.Flows))
	for _, step := range jf.Spec.Flows {
		keys = append(keys, toolscache.NewObjectName(jf.Namespace, step.Name).String())
	}
	return keys, nil
}

// jobsOf returns the Jobs the flow controls, from the informer.
func (c *Flows) jobsOf(jf *flowv1.JobFlow) ([]*batch.Job, error) {
	return kit.JobsControlledBy(c.jobInf, jf.Namespace, jf.UID)
}

// giveUp records that a flow failed MaxRequeue times in a row. It is looked at again when it or
// one of its Jobs or templates changes, and after giveUpRetry in any case.
func (c *Flows) giveUp(key string, _ request, err error) {
	tries := c.MaxRequeue + 1
	c.Log.Error("jobflow failed too often; trying again when it or one of its Jobs changes, or after a while", "jobflow", key, "tries", tries, "error", err)
	c.Disp.EnqueueAfter(key, request{}, giveUpRetry)
	ns, name, serr := toolscache.SplitMetaNamespaceKey(key)
	if serr != nil {
		return
	}
	if jf, gerr := c.flows.JobFlows(ns).Get(name); gerr == nil {
		c.Recorder.Eventf(jf, corev1.EventTypeWarning, string(flowv1.SyncJobFlowAction),
			"gave up after %d failed tries: %v; the JobFlow is tried again when it or one of its Jobs changes, or in %v", tries, err, giveUpRetry)
	}
}
