package flow

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	flowv1 "volcano.sh/apis/pkg/apis/flow/v1alpha1"
	vcscheme "volcano.sh/apis/pkg/client/clientset/versioned/scheme"
	flowlisters "volcano.sh/apis/pkg/client/listers/flow/v1alpha1"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/controllers/kit"
	"github.com/ringfire/ringfire/internal/guard"
	"github.com/ringfire/ringfire/shard"
)

// Templates is the JobTemplate controller: it lists in each template's
// status.jobDependsOnList the Jobs made from it (labelled CreatedByJobTemplate), as Volcano
// does. Like Volcano it leaves the list as it was once those Jobs are gone.
type Templates struct {
	kit.Base[request]
	cfg       Config
	templates flowlisters.JobTemplateLister
	tmplInf   toolscache.SharedIndexInformer
	jobInf    kit.JobSource
	written   cache.Written[*flowv1.JobTemplate]
}

// NewTemplates validates cfg, builds the JobTemplate controller and registers its handlers
// and indexes on the informers, which must not have started yet.
func NewTemplates(cfg Config) (*Templates, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("jobtemplate controller: %w", err)
	}
	c := &Templates{cfg: cfg}
	err := c.Init(kit.Settings[request]{
		Name: "jobtemplate", Config: cfg.Config, Work: cfg.Work, Scheme: vcscheme.Scheme,
		Handler:  c.reconcile,
		Coalesce: func(request, request) bool { return true },
		ObjectOf: kit.StoreObject(func() toolscache.Store { return c.tmplInf.GetStore() }),
		UIDOf:    kit.StoreUID(func() toolscache.Store { return c.tmplInf.GetStore() }, func() bool { return c.tmplInf.HasSynced() }),
	})
	if err != nil {
		return nil, err
	}
	c.templates, c.tmplInf, c.jobInf = cfg.JobTemplates.Lister(), cfg.JobTemplates.Informer(), cfg.Jobs
	if err := kit.AddIndex(c.jobInf, byTemplate, templateIndex); err != nil {
		return nil, fmt.Errorf("jobtemplate controller: %w", err)
	}
	if _, err := c.tmplInf.AddEventHandler(guard.Handler("jobtemplate", c.Log, toolscache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueue,
		UpdateFunc: func(old, cur any) {
			if o, ok := old.(*flowv1.JobTemplate); ok {
				if n, ok := cur.(*flowv1.JobTemplate); ok && o.ResourceVersion != n.ResourceVersion {
					if kit.Changed(o, n) {
						c.Disp.Release(toolscache.MetaObjectToName(n).String()) // a new spec may no longer be a poison
					}
					c.enqueue(n)
				}
			}
		},
		DeleteFunc: func(obj any) {
			if key, err := toolscache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				c.written.Forget(key)
				c.Disp.Release(key)
			}
		},
	}, guard.Quarantine(c.Disp))); err != nil {
		return nil, fmt.Errorf("jobtemplate controller: %w", err)
	}
	onJob := func(obj any) {
		if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if job, ok := obj.(*batch.Job); ok {
			if key, ok := TemplateOf(job.Labels[CreatedByJobTemplate]); ok {
				c.Disp.Enqueue(key, request{})
			}
		}
	}
	// Only a Job's arrival or departure changes a template's list.
	if _, err := c.jobInf.AddEventHandler(guard.Handler("jobtemplate", c.Log, toolscache.ResourceEventHandlerFuncs{AddFunc: onJob, DeleteFunc: onJob})); err != nil {
		return nil, fmt.Errorf("jobtemplate controller: %w", err)
	}
	return c, nil
}

// templateIndex is the byTemplate index function: the key of the template a Job was made from.
func templateIndex(obj any) ([]string, error) {
	if job, ok := obj.(*batch.Job); ok {
		if key, ok := TemplateOf(job.Labels[CreatedByJobTemplate]); ok && strings.HasPrefix(key, job.Namespace+"/") {
			return []string{key}, nil
		}
	}
	return nil, nil
}

// Run reconciles until ctx is done, once the informers have listed.
func (c *Templates) Run(ctx context.Context) {
	c.Base.Run(ctx, nil, "stopped before the JobTemplate and Job informers listed; is the flow.volcano.sh CRD installed?",
		c.tmplInf.HasSynced, c.jobInf.HasSynced)
}

// SlotsGained enqueues every JobTemplate of the slots. It implements shard.Listener.
func (c *Templates) SlotsGained(slots []int) { enqueueHeld(c.tmplInf, c.Disp, c.cfg.Ownership, slots) }

// SlotsLost implements shard.Listener: nothing is remembered per template but written
// statuses, which the informer supersedes.
func (c *Templates) SlotsLost([]int) {}

func (c *Templates) enqueue(obj any) {
	if key, err := toolscache.MetaNamespaceKeyFunc(obj); err == nil {
		c.Disp.Enqueue(key, request{})
	}
}

// reconcile writes the names of the Jobs made from the template, sorted, if they changed.
func (c *Templates) reconcile(ctx context.Context, key string, _ request) error {
	ns, name, err := toolscache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.templates.JobTemplates(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get jobtemplate %s: %w", key, err)
	}
	base := c.written.Latest(key, cached)
	objs, err := c.jobInf.GetIndexer().ByIndex(byTemplate, key)
	if err != nil {
		return fmt.Errorf("jobs of jobtemplate %s: %w", key, err)
	}
	if len(objs) == 0 {
		return nil
	}
	names := make([]string, 0, len(objs))
	for _, obj := range objs {
		if job, ok := obj.(*batch.Job); ok {
			names = append(names, job.Name)
		}
	}
	slices.Sort(names)
	if equality.Semantic.DeepEqual(base.Status.JobDependsOnList, names) {
		return nil
	}
	if err := shard.CheckOwner(ctx, c.cfg.Valid); err != nil {
		return err
	}
	updated := base.DeepCopy()
	updated.Status.JobDependsOnList = names
	got, err := c.cfg.Volcano.FlowV1alpha1().JobTemplates(ns).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("update status of jobtemplate %s: %w", key, err)
	}
	c.written.Remember(key, base.ResourceVersion, got)
	return nil
}
