package scheduler

import (
	"context"

	"github.com/hashicorp/go-hclog"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	schedulinglisters "k8s.io/client-go/listers/scheduling/v1"
	toolscache "k8s.io/client-go/tools/cache"
	vcv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcinformers "volcano.sh/apis/pkg/client/informers/externalversions"
	vclisters "volcano.sh/apis/pkg/client/listers/scheduling/v1beta1"

	"github.com/ringfire/ringfire/internal/guard"
)

// watch is the informers of one shift. Pods are watched in two sets: the
// unbound pods of each served scheduler name (what there is to place), and
// every bound pod whatever its scheduler (what uses the nodes, and which
// pods of a PodGroup are placed already). A pod moving from one set to the
// other shows as a delete and an add.
type watch struct {
	factories []factory
	synced    []toolscache.InformerSynced

	nodes      corelisters.NodeLister
	namespaces corelisters.NamespaceLister
	classes    schedulinglisters.PriorityClassLister
	bound      corelisters.PodLister
	unbound    []corelisters.PodLister
	podGroups  vclisters.PodGroupLister
	queues     vclisters.QueueLister
	served     []string // the scheduler names of unbound
}

type factory interface {
	Start(stopCh <-chan struct{})
	Shutdown()
}

// inputs is what one cycle reads from the informers.
type inputs struct {
	nodes      []*corev1.Node
	namespaces []*corev1.Namespace // their labels, for namespaceSelector in pod affinity
	bound      []*corev1.Pod       // pods with a node
	unbound    []*corev1.Pod       // pods of the served names without one
	podGroups  []*vcv1beta1.PodGroup
	queues     []*vcv1beta1.Queue
	classes    []*schedulingv1.PriorityClass
	served     []string
}

// newWatch builds the informers; poke is called on every event that may let
// a cycle decide something new.
func newWatch(cfg Config, poke func()) *watch {
	w := &watch{}
	log := cfg.LoggerOr().Named("scheduler")
	kube := informers.NewSharedInformerFactory(cfg.Kube, 0)
	nodes := kube.Core().V1().Nodes()
	nodes.Informer().AddEventHandler(guard.Handler("scheduler", log, toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke() },
		DeleteFunc: func(any) { poke() },
		UpdateFunc: func(old, new any) {
			if nodeChanged(old, new) {
				poke()
			}
		},
	}))
	classes := kube.Scheduling().V1().PriorityClasses()
	// Namespaces change no placement but through the namespaceSelector of
	// an affinity term, which the next periodic cycle reads: no poke.
	namespaces := kube.Core().V1().Namespaces()
	w.nodes, w.classes, w.namespaces = nodes.Lister(), classes.Lister(), namespaces.Lister()
	w.synced = append(w.synced, nodes.Informer().HasSynced, classes.Informer().HasSynced, namespaces.Informer().HasSynced)

	bound := podFactory(cfg, log, fields.OneTermNotEqualSelector("spec.nodeName", ""))
	boundPods := bound.Core().V1().Pods()
	boundPods.Informer().AddEventHandler(guard.Handler("scheduler", log, toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke() },
		DeleteFunc: func(any) { poke() },
		UpdateFunc: func(old, new any) {
			if podReleased(old, new) {
				poke()
			}
		},
	}))
	w.bound = boundPods.Lister()
	w.synced = append(w.synced, boundPods.Informer().HasSynced)
	w.factories = append(w.factories, kube, bound)

	for _, name := range cfg.SchedulerNames {
		f := podFactory(cfg, log, fields.AndSelectors(
			fields.OneTermEqualSelector("spec.schedulerName", name),
			fields.OneTermEqualSelector("spec.nodeName", ""),
		))
		pods := f.Core().V1().Pods()
		pods.Informer().AddEventHandler(guard.Handler("scheduler", log, toolscache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { poke() },
			UpdateFunc: func(old, new any) {
				if gatesChanged(old, new) {
					poke()
				}
			},
		}))
		w.unbound = append(w.unbound, pods.Lister())
		w.synced = append(w.synced, pods.Informer().HasSynced)
		w.factories = append(w.factories, f)
	}

	vc := vcinformers.NewSharedInformerFactory(cfg.Volcano, 0)
	podGroups := vc.Scheduling().V1beta1().PodGroups()
	podGroups.Informer().AddEventHandler(guard.Handler("scheduler", log, toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke() },
		DeleteFunc: func(any) { poke() },
		UpdateFunc: func(old, new any) {
			// Status changes are this scheduler's own writes.
			o, ok1 := old.(*vcv1beta1.PodGroup)
			n, ok2 := new.(*vcv1beta1.PodGroup)
			if ok1 && ok2 && !equality.Semantic.DeepEqual(o.Spec, n.Spec) {
				poke()
			}
		},
	}))
	queues := vc.Scheduling().V1beta1().Queues()
	queues.Informer().AddEventHandler(guard.Handler("scheduler", log, toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke() },
		DeleteFunc: func(any) { poke() },
		UpdateFunc: func(any, any) { poke() },
	}))
	w.podGroups, w.queues = podGroups.Lister(), queues.Lister()
	w.synced = append(w.synced, podGroups.Informer().HasSynced, queues.Informer().HasSynced)
	w.factories = append(w.factories, vc)
	w.served = cfg.SchedulerNames
	return w
}

// podFactory is an informer factory for the pods a field selector picks,
// keeping them without their managed fields.
func podFactory(cfg Config, log hclog.Logger, selector fields.Selector) informers.SharedInformerFactory {
	f := informers.NewSharedInformerFactoryWithOptions(cfg.Kube, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = selector.String()
	}))
	_ = f.Core().V1().Pods().Informer().SetTransform(guard.Transform("scheduler", log, func(obj any) (any, error) {
		if pod, ok := obj.(*corev1.Pod); ok { // a shallow copy: obj may be shared
			slim := *pod
			slim.ManagedFields = nil
			return &slim, nil
		}
		return obj, nil
	}))
	return f
}

func (w *watch) start(ctx context.Context) {
	for _, f := range w.factories {
		f.Start(ctx.Done())
	}
}

// waitForSync reports whether every informer has listed before ctx ended.
func (w *watch) waitForSync(ctx context.Context) bool {
	return toolscache.WaitForCacheSync(ctx.Done(), w.synced...)
}

// shutdown waits for the informers to stop; their context must be done.
func (w *watch) shutdown() {
	for _, f := range w.factories {
		f.Shutdown()
	}
}

// read copies the informers' current lists out for a cycle.
func (w *watch) read() inputs {
	in := inputs{served: w.served}
	in.nodes, _ = w.nodes.List(labels.Everything())
	in.classes, _ = w.classes.List(labels.Everything())
	in.namespaces, _ = w.namespaces.List(labels.Everything())
	in.bound, _ = w.bound.List(labels.Everything())
	for _, l := range w.unbound {
		pods, _ := l.List(labels.Everything())
		in.unbound = append(in.unbound, pods...)
	}
	in.podGroups, _ = w.podGroups.List(labels.Everything())
	in.queues, _ = w.queues.List(labels.Everything())
	return in
}

// nodeChanged: what the scheduler reads of a node changed (not a heartbeat).
func nodeChanged(old, new any) bool {
	o, ok1 := old.(*corev1.Node)
	n, ok2 := new.(*corev1.Node)
	if !ok1 || !ok2 {
		return true
	}
	return nodeReady(o) != nodeReady(n) || o.Spec.Unschedulable != n.Spec.Unschedulable ||
		!equality.Semantic.DeepEqual(o.Status.Allocatable, n.Status.Allocatable) ||
		!equality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints) ||
		!equality.Semantic.DeepEqual(o.Labels, n.Labels)
}

// podReleased: a bound pod finished or started terminating, which may free
// room, or changed in a way counted in its PodGroup's status.
func podReleased(old, new any) bool {
	o, ok1 := old.(*corev1.Pod)
	n, ok2 := new.(*corev1.Pod)
	if !ok1 || !ok2 {
		return true
	}
	return o.Status.Phase != n.Status.Phase || (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil)
}

// gatesChanged: an unbound pod's scheduling gates were lifted.
func gatesChanged(old, new any) bool {
	o, ok1 := old.(*corev1.Pod)
	n, ok2 := new.(*corev1.Pod)
	return ok1 && ok2 && len(o.Spec.SchedulingGates) != len(n.Spec.SchedulingGates)
}

// nodeReady reports whether the node's Ready condition is True.
func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
