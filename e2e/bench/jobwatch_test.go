package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"
	vcinformers "volcano.sh/apis/pkg/client/informers/externalversions"
)

// jobWatch follows the Jobs of the loads' namespaces through a watch, and
// records when each was first seen finished: cheaper for the API server
// than listing every Job each second, and as exact as the watch.
type jobWatch struct {
	mu       sync.Mutex
	phase    map[string]batch.JobPhase // by namespace/name
	finished map[string]time.Time
}

// watchJobs starts the watch; it ends with ctx.
func watchJobs(ctx context.Context, vc vcclient.Interface, namespaces []string) *jobWatch {
	w := &jobWatch{phase: map[string]batch.JobPhase{}, finished: map[string]time.Time{}}
	handler := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.observe(obj) },
		UpdateFunc: func(_, obj any) { w.observe(obj) },
		// A delete the watch saw carries the Job's last state (a Job that
		// finished and went by its TTL, for one); one the informer learned
		// of only by listing again after a gap (DeletedFinalStateUnknown)
		// does not, and is left at the phase last seen.
		DeleteFunc: func(obj any) { w.observe(obj) },
	}
	for _, ns := range namespaces {
		f := vcinformers.NewSharedInformerFactoryWithOptions(vc, 0, vcinformers.WithNamespace(ns))
		_, _ = f.Batch().V1alpha1().Jobs().Informer().AddEventHandler(handler)
		f.Start(ctx.Done())
	}
	return w
}

func (w *jobWatch) observe(obj any) {
	j, ok := obj.(*batch.Job)
	if !ok {
		return
	}
	key := j.Namespace + "/" + j.Name
	w.mu.Lock()
	defer w.mu.Unlock()
	w.phase[key] = j.Status.State.Phase
	if _, seen := w.finished[key]; !seen && finished(j.Status.State.Phase) {
		w.finished[key] = time.Now()
	}
}

// state returns the Jobs by phase, how many have finished, and when the
// last of those was seen finished.
func (w *jobWatch) state() (map[batch.JobPhase]int, int, time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	phases, last := map[batch.JobPhase]int{}, time.Time{}
	for _, p := range w.phase {
		phases[p]++
	}
	for _, at := range w.finished {
		if at.After(last) {
			last = at
		}
	}
	return phases, len(w.finished), last
}

// finishedAt returns when Job namespace/name was first seen finished (zero
// if not).
func (w *jobWatch) finishedAt(namespace, name string) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.finished[namespace+"/"+name]
}

// podTimes is when the last pod of a load started and ended on its node.
type podTimes struct {
	lastStarted time.Time // status.startTime, set by kwok's Running stage
	lastEnded   time.Time // state.terminated.finishedAt, set by kwok as it ends the pod
	ended       int       // pods that had ended
}

// readPodTimes lists the pods of the namespaces for when the last one
// started and ended (the server's clock, whole seconds): whether Jobs
// finished late because their pods did.
func readPodTimes(ctx context.Context, kube kubernetes.Interface, namespaces []string) (podTimes, error) {
	var pt podTimes
	later := func(t *time.Time, u time.Time) {
		if u.After(*t) {
			*t = u
		}
	}
	for _, ns := range namespaces {
		opts := metav1.ListOptions{Limit: 500}
		for page := 0; ; page++ {
			if page == 1000 {
				return pt, fmt.Errorf("list pods in %s: more than 1,000 pages", ns)
			}
			list, err := kube.CoreV1().Pods(ns).List(ctx, opts)
			if err != nil {
				return pt, fmt.Errorf("list pods in %s: %w", ns, err)
			}
			for _, pod := range list.Items {
				if pod.Status.StartTime != nil {
					later(&pt.lastStarted, pod.Status.StartTime.Time)
				}
				for _, cs := range pod.Status.ContainerStatuses {
					if t := cs.State.Terminated; t != nil {
						pt.ended++
						later(&pt.lastEnded, t.FinishedAt.Time)
						break
					}
				}
			}
			if opts.Continue = list.Continue; opts.Continue == "" {
				break
			}
		}
	}
	return pt, nil
}
