package podgroup

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/informers"
	kubescheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/internal/guard"
	"github.com/ringfire/ringfire/shard"

	"github.com/ringfire/ringfire/controllers/kit"
)

// Config configures the PodGroup controller.
type Config struct {
	kit.Config
	kit.Work
	// SchedulerNames are the schedulers whose pods get a PodGroup, at least one, each once:
	// [kit.DefaultSchedulerName] in DefaultConfig.
	SchedulerNames []string
	// SkipOwnerAnnotations turns off what Volcano's --inherit-owner-annotations (on by default)
	// does: read the pod's owners (ReplicaSet, DaemonSet, StatefulSet, batch Job) for their
	// volcano.sh/ annotations and group-min-member. Reading them needs RBAC get on those.
	SkipOwnerAnnotations bool
}

// DefaultWorkers is the Workers of DefaultConfig: pods reconciled in parallel.
const DefaultWorkers = 2

// DefaultConfig returns a Config with every default filled in; the caller
// adds the clients and the ring's Ownership.
func DefaultConfig() Config {
	return Config{Work: kit.DefaultWork(DefaultWorkers), SchedulerNames: []string{kit.DefaultSchedulerName}}
}

// Validate reports every field of c that cannot work. It changes nothing:
// defaults come from DefaultConfig, not from here.
func (c *Config) Validate() error {
	errs := []error{c.Config.Validate(), c.Work.Validate()}
	if c.Volcano == nil {
		errs = append(errs, errors.New("a Volcano client is required"))
	}
	if len(c.SchedulerNames) == 0 {
		errs = append(errs, fmt.Errorf("scheduler names %q: at least one (kit.DefaultSchedulerName is Volcano's)", c.SchedulerNames))
	}
	for i, name := range c.SchedulerNames {
		if name == "" || slices.Contains(c.SchedulerNames[:i], name) {
			errs = append(errs, fmt.Errorf("scheduler names %q: each non-empty and named once (one pod informer each)", c.SchedulerNames))
			break
		}
	}
	return errors.Join(errs...)
}

// Controller gives a PodGroup to every pending pod of a served scheduler that has none, on the
// pods of the slots this replica holds.
type Controller struct {
	kit.Base[request]
	kit.Fence
	cfg       Config
	factories factories
	pods      []toolscache.SharedIndexInformer // one per scheduler name
	metrics   *metrics
}

// factories are the controller's pod informer factories, one per scheduler name.
type factories []informers.SharedInformerFactory

func (fs factories) Start(stop <-chan struct{}) {
	for _, f := range fs {
		f.Start(stop)
	}
}

func (fs factories) Shutdown() {
	for _, f := range fs {
		f.Shutdown()
	}
}

// request is what the dispatcher carries for a pod key: look at the pod. Any two coalesce.
type request struct{}

// New validates cfg and builds the controller and its pod informers, one per served scheduler
// name; Run starts them.
func New(cfg Config) (*Controller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("podgroup controller: %w", err)
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("podgroup controller: %w", err)
	}
	c := &Controller{Fence: kit.Fence{Valid: cfg.Valid}, cfg: cfg, metrics: m}
	err = c.Init(kit.Settings[request]{
		Name: "podgroup", Config: cfg.Config, Work: cfg.Work, Scheme: kubescheme.Scheme,
		Handler:  c.reconcile,
		Coalesce: func(request, request) bool { return true },
		ObjectOf: func(key string) runtime.Object {
			if pod := c.pod(key); pod != nil {
				return pod
			}
			return nil
		},
	})
	if err != nil {
		return nil, err
	}

	handler := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    c.onPod,
		UpdateFunc: func(_, obj any) { c.onPod(obj) },
		DeleteFunc: c.onPodDelete,
	}
	for _, name := range cfg.SchedulerNames {
		f := informers.NewSharedInformerFactoryWithOptions(cfg.Kube, 0,
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { *o = podSelector(name, *o) }))
		inf := f.Core().V1().Pods().Informer()
		if err := inf.SetTransform(guard.Transform("podgroup", c.Log, slimPod)); err != nil {
			return nil, fmt.Errorf("podgroup controller: pod transform: %w", err)
		}
		if _, err := inf.AddEventHandler(guard.Handler("podgroup", c.Log, handler, guard.Quarantine(c.Disp))); err != nil {
			return nil, fmt.Errorf("podgroup controller: %w", err)
		}
		c.factories, c.pods = append(c.factories, f), append(c.pods, inf)
	}
	return c, nil
}

// podSelector narrows a pod list and watch to what may need a PodGroup: pods of the scheduler
// that are not bound yet (spec.nodeName empty) and carry no volcano.sh/job-name label (pods of
// a Volcano Job, which have their Job's PodGroup). A pod leaves the watch when it is bound, so
// every replica holds only the pending bare pods of the cluster, not all of its pods.
func podSelector(scheduler string, o metav1.ListOptions) metav1.ListOptions {
	o.FieldSelector = fields.AndSelectors(
		fields.OneTermEqualSelector("spec.schedulerName", scheduler),
		fields.OneTermEqualSelector("spec.nodeName", ""),
	).String()
	notJob, err := labels.NewRequirement(batch.JobNameKey, selection.DoesNotExist, nil)
	if err == nil { // the key is a valid label key: err is always nil
		o.LabelSelector = labels.NewSelector().Add(*notJob).String()
	}
	return o
}

// Run lists and watches the pods, then handles them until ctx is done.
func (c *Controller) Run(ctx context.Context) {
	synced := make([]toolscache.InformerSynced, len(c.pods))
	for i, inf := range c.pods {
		synced[i] = inf.HasSynced
	}
	c.Base.Run(ctx, c.factories, "stopped before the pod informers listed", synced...)
}

// SlotsGained enqueues every cached pod of the slots: this replica now owns them. It
// implements shard.Listener.
func (c *Controller) SlotsGained(slots []int) {
	held, n := shard.NewSlotSet(slots), c.cfg.Ownership.Slots()
	for _, inf := range c.pods {
		for _, key := range inf.GetStore().ListKeys() {
			if held.HasKey(key, n) {
				c.Disp.Enqueue(key, request{})
			}
		}
	}
}

// SlotsLost implements shard.Listener; the controller keeps nothing per slot.
func (c *Controller) SlotsLost([]int) {}

func (c *Controller) onPod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || Skip(pod, c.cfg.SchedulerNames) != "" {
		return
	}
	c.Disp.Enqueue(toolscache.MetaObjectToName(pod).String(), request{})
}

// onPodDelete ends the quarantine of a pod's key, if any: a pod of that name
// made again is a new one.
func (c *Controller) onPodDelete(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		c.Disp.Release(toolscache.MetaObjectToName(pod).String())
	}
}

// pod returns the cached pod at key, or nil.
func (c *Controller) pod(key string) *corev1.Pod {
	for _, inf := range c.pods {
		if obj, ok, _ := inf.GetStore().GetByKey(key); ok {
			if pod, ok := obj.(*corev1.Pod); ok {
				return pod
			}
		}
	}
	return nil
}
