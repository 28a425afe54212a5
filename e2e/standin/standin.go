// Package standin is a stand-in for a gang scheduler in end-to-end tests of
// the Job controller: it admits every PodGroup (Pending → Inqueue) and binds
// every unbound pod of the served scheduler names to a node, round robin. It
// decides nothing; tests that exercise scheduling use the real scheduler.
package standin

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"
	vcinformers "volcano.sh/apis/pkg/client/informers/externalversions"

	"github.com/ringfire/ringfire/internal/guard"
)

// Run admits and binds until ctx is done, four requests at a time.
func Run(ctx context.Context, kube kubernetes.Interface, vc vcclient.Interface, nodes []string) {
	RunWorkers(ctx, kube, vc, nodes, 4)
}

// RunWorkers is Run with workers bindings at a time: a load of thousands of pods a minute
// needs more than four in flight. PodGroups are admitted from a queue of their own, by two
// workers of their own, as a real scheduler admits in each session whatever its backlog of
// binds: a burst of pods to bind does not hold back another Job's admission.
func RunWorkers(ctx context.Context, kube kubernetes.Interface, vc vcclient.Interface, nodes []string, workers int) {
	pgs := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[item]())
	pods := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[item]())
	go func() { <-ctx.Done(); pgs.ShutDown(); pods.ShutDown() }()
	vf := vcinformers.NewSharedInformerFactory(vc, 0)
	vf.Scheduling().V1beta1().PodGroups().Informer().AddEventHandler(guard.Handler("standin", nil, toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { pgs.Add(itemOf("pg", obj)) },
		UpdateFunc: func(_, obj any) { pgs.Add(itemOf("pg", obj)) },
	}))
	kf := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", "").String()
	}))
	kf.Core().V1().Pods().Informer().AddEventHandler(guard.Handler("standin", nil, toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { pods.Add(itemOf("pod", obj)) },
		UpdateFunc: func(_, obj any) { pods.Add(itemOf("pod", obj)) },
	}))
	vf.Start(ctx.Done())
	kf.Start(ctx.Done())
	vf.WaitForCacheSync(ctx.Done())
	kf.WaitForCacheSync(ctx.Done())

	var mu sync.Mutex
	next := 0
	pick := func() string {
		mu.Lock()
		defer mu.Unlock()
		next++
		return nodes[next%len(nodes)]
	}
	var wg sync.WaitGroup
	serve := func(q workqueue.TypedRateLimitingInterface[item], n int, do func(item) error) {
		for range max(n, 1) {
			wg.Go(func() {
				for {
					it, shutdown := q.Get()
					if shutdown {
						return
					}
					if err := do(it); err != nil && ctx.Err() == nil {
						q.AddRateLimited(it)
					} else {
						q.Forget(it)
					}
					q.Done(it)
				}
			})
		}
	}
	serve(pgs, 2, func(it item) error { return admit(ctx, vc, it) })
	serve(pods, workers, func(it item) error { return bind(ctx, kube, it, pick) })
	wg.Wait()
}

type item struct{ kind, namespace, name string }

func itemOf(kind string, obj any) item {
	m, _ := obj.(metav1.Object)
	if m == nil {
		return item{}
	}
	return item{kind: kind, namespace: m.GetNamespace(), name: m.GetName()}
}

func admit(ctx context.Context, vc vcclient.Interface, it item) error {
	pg, err := vc.SchedulingV1beta1().PodGroups(it.namespace).Get(ctx, it.name, metav1.GetOptions{})
	if err != nil || (pg.Status.Phase != "" && pg.Status.Phase != scheduling.PodGroupPending) {
		return nil
	}
	pg.Status.Phase = scheduling.PodGroupInqueue
	_, err = vc.SchedulingV1beta1().PodGroups(it.namespace).Update(ctx, pg, metav1.UpdateOptions{})
	return err
}

func bind(ctx context.Context, kube kubernetes.Interface, it item, pick func() string) error {
	pod, err := kube.CoreV1().Pods(it.namespace).Get(ctx, it.name, metav1.GetOptions{})
	if err != nil || pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil || pod.Spec.SchedulerName != "volcano" {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return kube.CoreV1().Pods(it.namespace).Bind(rctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: pick()},
	}, metav1.CreateOptions{})
}
